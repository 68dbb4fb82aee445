"""`autopilot run` with backend hw and ROS hidden (tests/support/hw_boat_child.py), around one boat: a tmp copy of
the foka vessel file with its GNSS on a pseudo-terminal fed by an emulated L76K, a boat config whose `esc:`
section the test gives, systemd's notify socket, and a signed MAVLink ground station holding the sticks forward
(`Sticks`). `HwBoat` starts it, says whether the loop still cycles and what the child logged, sends SIGTERM and
checks its whole output at the end. `Scope` watches output pulses that leave no log of their own (the sysfs
PWM files, a PCA9685's registers) and says when they went to neutral. `SysfsExports` plays the kernel's part
of a fake sysfs PWM tree that other processes write as plain files: a write to `export` creates the channel.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import yaml

from autopilot.vocab.config import load_vessel
from hil.devices.gnss_device import DeviceThread, EmulatedL76K
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import PtyPair
from tests.support.child_io import Lines, NotifySocket
from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import REPO

CHILD = REPO / "tests" / "support" / "hw_boat_child.py"
PASSPHRASE = "hw boat without ros"
NEUTRAL_US = 1500
MANUAL = 0                          # Rover's custom mode number
START = (51.1099101, 17.0598572)    # config/missions/demo.yaml's start point


def boat_files(tmp: Path, gnss_port: str, esc: str, mav_port: int, extra: str = "") -> tuple:
    """A tmp copy of the foka vessel file with the GNSS on `gnss_port`, and a boat config (backend hw, the `esc:`
    section `esc` in YAML flow form, a signed MAVLink link to 127.0.0.1:mav_port, then the YAML lines `extra`).
    Returns (vessel, boat config)."""
    vessel = yaml.safe_load((REPO / "config" / "vessels" / "foka.yaml").read_text())
    vessel["sensors"]["gnss"]["port"] = gnss_port
    vessel_file = tmp / "foka.yaml"
    vessel_file.write_text(yaml.safe_dump(vessel))
    key = tmp / "mavlink.key"
    key.write_text(PASSPHRASE + "\n")
    os.chmod(key, 0o600)
    boat = tmp / "boat.yaml"
    boat.write_text(f"""vessel: {vessel_file}
mission: {REPO / 'config' / 'missions' / 'demo.yaml'}
backend: hw
ros: auto
esc: {esc}
logging: {{dir: {tmp / 'runs'}, rate_hz: 10}}
mavlink:
  links: ['udpout:127.0.0.1:{mav_port}']
  system_id: 7
  signing_key_file: mavlink.key
""" + extra)
    return vessel_file, boat


class Sticks:
    """The ground station, sticks held forward: each `wait(pred)` keeps sending MANUAL_CONTROL (x = throttle)."""

    def __init__(self, gcs: Gcs, throttle: int = 600):
        self.gcs, self.throttle = gcs, throttle

    def wait(self, pred, timeout_s: float) -> bool:
        """True once pred() holds, polling for up to timeout_s while the sticks stay forward."""
        end = time.monotonic() + timeout_s
        while True:
            if pred():
                return True
            if time.monotonic() > end:
                return False
            self.gcs.mav.manual_control_send(self.gcs.conn.target_system, self.throttle, 0, 500, 0, 0)
            self.gcs.poll(0.1)


class HwBoat:
    """One `autopilot run --config boat.yaml` child over the emulated L76K (see the module docstring); `env` adds
    to the child's environment (hw_boat_child.py's HW_BOAT_* switches). Use as a context manager: leaving it
    stops everything the rig started; `finish()` then checks the child's whole output. `extra`: more boat-config
    YAML (a `battery:` section)."""

    def __init__(self, tmp: Path, esc: str, env: Optional[dict] = None, extra: str = ""):
        self.tmp = tmp
        self.pty = PtyPair()
        mav_port = free_udp_port()
        self.vessel_file, self.boat = boat_files(tmp, self.pty.path, esc, mav_port, extra)
        gnss_cfg = load_vessel(self.vessel_file).sensors.gnss
        emitter = L76KEmitter(gnss_cfg, seed=5, utc_start=datetime.datetime.now(datetime.timezone.utc))
        self.l76k = DeviceThread(EmulatedL76K(self.pty, emitter, baud=gnss_cfg.baud, rate_hz=gnss_cfg.rate_hz),
                                 lambda t: GnssTruth(lat_deg=START[0], lon_deg=START[1])).start()
        self.notify = NotifySocket(tmp / "notify.sock")
        child_env = dict(os.environ, NOTIFY_SOCKET=self.notify.path, WATCHDOG_USEC="2000000", PYTHONUNBUFFERED="1",
                         HW_BOAT_VESSEL=str(self.vessel_file), **(env or {}))
        child_env.pop("WATCHDOG_PID", None)
        self.gcs = Gcs(mav_port, key=hashlib.sha256(PASSPHRASE.encode()).digest())
        self.sticks = Sticks(self.gcs)
        self.proc = subprocess.Popen([sys.executable, str(CHILD), "run", "--config", str(self.boat)], cwd=REPO,
                                     env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.out = Lines(self.proc)

    def __enter__(self) -> "HwBoat":
        return self

    def __exit__(self, *exc) -> None:
        self.gcs.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.l76k.stop()
        self.pty.unplug()
        self.notify.close()
        self.out.join()
        (self.tmp / "child.log").write_text(self.out.text())      # the whole story, for a failure

    # ------------------------------------------------------------------------------ what the test asks
    def tail(self, n: int = 3000) -> str:
        return self.out.text()[-n:]

    def wait(self, pred, timeout_s: float) -> bool:
        return self.sticks.wait(pred, timeout_s)

    def pings(self) -> int:
        return sum(m == "WATCHDOG=1" for m in self.notify.messages)

    def logged(self, fragment: str, after: float = 0.0) -> bool:
        return self.logged_at(fragment, after) is not None

    def logged_at(self, fragment: str, after: float = 0.0) -> Optional[float]:
        """When the first line with `fragment` arrived at or after `after` (None: not yet)."""
        return next((t for t, line in self.out.lines if fragment in line and t >= after), None)

    def cycling(self, what: str) -> None:
        """The loop still runs: the process is alive and the watchdog pings go on."""
        n = self.pings()
        assert self.proc.poll() is None, f"{what}: the boat exited\n{self.tail()}"
        assert self.wait(lambda: self.pings() >= n + 3, 15.0), f"{what}: no watchdog pings\n{self.tail()}"

    def up(self, at_neutral: Callable[[], bool], what: str = "") -> None:
        """READY=1, the outputs at neutral, the ground station connected and the boat in MANUAL."""
        assert self.wait(lambda: any(m.startswith("READY=1") for m in self.notify.messages), 60.0), self.out.text()
        assert self.wait(at_neutral, 10.0), (what, self.tail())
        hb = self.gcs.connect(timeout=30.0)
        assert hb.get_srcSystem() == 7, self.out.text()
        assert self.gcs.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED, self.gcs.texts[-5:]

    def arm(self) -> None:
        """Armed (retrying while the ESCs are still arming or a failsafe holds the pre-arm checks)."""
        assert self.wait(lambda: self.gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), (self.gcs.texts[-8:],
                                                                                         self.tail())

    def sigterm(self) -> float:
        """SIGTERM; the monotonic time it was sent. Asserts exit 0 within 30 s."""
        sent = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=30) == 0, self.tail()
        return sent

    def finish(self) -> str:
        """After the child ended: its whole output (also in tmp/child.log), without a traceback, ROS hidden."""
        self.out.join()
        text = self.out.text()
        assert "Traceback" not in text, text[text.find("Traceback") - 1500:][:4000]
        assert "no_ros: ROS modules imported: []" in text
        assert "backend hw, without ROS 2" in text
        return text


class Scope:
    """Samples `read()` (the pulses of every output, a tuple [us]) every `period_s` in a thread, keeping each
    change with its monotonic time, as a scope on the ESC lines would. A failing read (the device gone) is None."""

    def __init__(self, read: Callable[[], tuple], period_s: float = 0.002):
        self.read, self.period_s = read, period_s
        self.log: list = []             # (t, pulses or None), on change
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scope", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last: object = ()
        while not self._stop.is_set():
            try:
                now = tuple(self.read())
            except (OSError, ValueError):
                now = None
            if now != last:
                self.log.append((time.monotonic(), now))
                last = now
            self._stop.wait(self.period_s)

    def now(self) -> Optional[tuple]:
        return self.log[-1][1] if self.log else None

    def became(self, pred: Callable[[tuple], bool], t_from: float) -> Optional[float]:
        """When the pulses last started to satisfy `pred` at or after t_from and have since (None if they do not
        now, or did already before t_from without a break)."""
        t_hit = None
        for t, p in self.log:
            ok = p is not None and pred(p)
            if ok and t_hit is None:
                t_hit = t
            elif not ok:
                t_hit = None
        if t_hit is None or t_hit < t_from:
            return None
        return t_hit

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


class SysfsExports:
    """The kernel's side of `export` on a hil.devices.fake_sysfs_pwm tree that other processes (the autopilot, its
    guardian) write as plain files: a thread looks at each `pwmchipN/export` every 10 ms and, when a channel
    number was written there, empties it and creates `pwmN/` (period 0, duty_cycle 0, enable 0, polarity
    normal), whole at once (built aside, then renamed), as the kernel's export does. A chip gone is skipped."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.exports: list = []          # (t, chip dir, channel) done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sysfs-exports", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            for export in self.root.glob("pwmchip*/export"):
                try:
                    text = export.read_text().strip()
                    if not text:
                        continue
                    export.write_text("")
                    ch = int(text)
                    chip = export.parent
                    if ch >= int((chip / "npwm").read_text()) or (chip / f"pwm{ch}").exists():
                        continue
                    aside = chip / f".pwm{ch}.new"
                    aside.mkdir()
                    for name, value in (("period", "0"), ("duty_cycle", "0"), ("enable", "0"),
                                        ("polarity", "normal")):
                        (aside / name).write_text(value + "\n")
                    os.rename(aside, chip / f"pwm{ch}")
                    self.exports.append((time.monotonic(), chip.name, ch))
                except (OSError, ValueError):
                    continue             # the chip went away meanwhile

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def sysfs_pulses(root: Path, chip: int, channels: Sequence[int]) -> tuple:
    """What a scope reads on each channel of a sysfs PWM tree [us]: duty_cycle while enabled, else 0. OSError
    when the chip or the channel is gone."""
    out = []
    for ch in channels:
        d = Path(root) / f"pwmchip{chip}" / f"pwm{ch}"
        out.append(int((d / "duty_cycle").read_text()) / 1000.0 if (d / "enable").read_text().strip() == "1"
                   else 0.0)
    return tuple(out)


def remove_chip(root: Path, chip: int) -> None:
    """The PWM controller gone from the tree (its driver unbound, the overlay unloaded): pwmchipN/ removed."""
    shutil.rmtree(Path(root) / f"pwmchip{chip}")
