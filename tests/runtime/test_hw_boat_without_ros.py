"""`autopilot run` with backend hw on a machine without ROS 2, over emulated devices: the LSM9DS1 emulator on the
I2C bus (tests/support/hw_boat_child.py, the child's only change), an emulated L76K feeding NMEA at its 1 Hz into a
pseudo-terminal named as the vessel file's GNSS port, and the real pigpio client driving a FakePigpiod on the port
of the boat config's esc section. A signed MAVLink ground station arms the boat in MANUAL and holds the sticks
forward, so the outputs are off neutral while the faults come. One flight in phases, each fault reported as the
core reports it under ROS (its failsafe events on the log) while the loop keeps cycling (watchdog pings):

  start: READY=1, both ESC GPIOs at the neutral pulse on the fake daemon; armed, the outputs leave neutral;
  I2C errors injected into the chip: imu-loss, then the gyro back;
  pigpiod gone: esc-disconnect (the boat disarms); a new daemon on the same port is reconnected to by the
  autopilot (EscOutput's pi_factory, every 2 s) and by its deadman guardian, and gets neutral; armed again;
  GNSS unplugged (the pty closed): the driver's warning, then gps-loss (MANUAL: the sticks stay in charge);
  SIGTERM while driven: neutral on the new daemon within 0.5 s, exit 0, no traceback anywhere.
"""
from __future__ import annotations

import datetime
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from autopilot.vocab.config import load_vessel
from hil.devices.fake_pigpiod import FakePigpiod
from hil.devices.gnss_device import DeviceThread, EmulatedL76K
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import PtyPair
from tests.support.child_io import Lines, NotifySocket
from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import REPO

CHILD = REPO / "tests" / "support" / "hw_boat_child.py"
PASSPHRASE = "hw boat without ros"
GPIOS = (13, 12)                    # foka: left, right
NEUTRAL_US = 1500
MANUAL = 0                          # Rover's custom mode number
START = (51.1099101, 17.0598572)    # config/missions/demo.yaml's start point


def _files(tmp: Path, gnss_port: str, pigpio_port: int, mav_port: int) -> tuple:
    """A tmp copy of the foka vessel file with the GNSS on `gnss_port`, and a boat config (backend hw, pigpio on
    127.0.0.1:pigpio_port, a signed MAVLink link to 127.0.0.1:mav_port). Returns (vessel file, boat config)."""
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
esc: {{backend: pigpio, pigpio_host: 127.0.0.1, pigpio_port: {pigpio_port}}}
logging: {{dir: {tmp / 'runs'}, rate_hz: 10}}
mavlink:
  links: ['udpout:127.0.0.1:{mav_port}']
  system_id: 7
  signing_key_file: mavlink.key
""")
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


def _off_neutral(daemon) -> bool:
    return all(daemon.state.pulse_us(g) not in (0, NEUTRAL_US) for g in GPIOS)


def _at_neutral(daemon) -> bool:
    return all(daemon.state.pulse_us(g) == NEUTRAL_US for g in GPIOS)


def _neutral_since(daemon, t_from: float):
    """When every GPIO of `daemon` last changed to the neutral pulse at or after t_from (None if one has not)."""
    times = []
    for g in GPIOS:
        log = daemon.state.log(g)
        if not log or log[-1][1] != NEUTRAL_US:
            return None
        first = next((t for t, p in reversed(log) if p != NEUTRAL_US), None)
        later = [t for t, p in log if p == NEUTRAL_US and t >= t_from and (first is None or t > first)]
        if not later:
            return None
        times.append(later[0])
    return max(times)


def test_hw_backend_without_ros_reports_and_survives_device_faults_and_stops_at_neutral(tmp_path):
    daemon = FakePigpiod().start()
    pty = PtyPair()
    mav_port = free_udp_port()
    vessel_file, boat = _files(tmp_path, pty.path, daemon.port, mav_port)
    gnss_cfg = load_vessel(vessel_file).sensors.gnss
    emitter = L76KEmitter(gnss_cfg, seed=5, utc_start=datetime.datetime.now(datetime.timezone.utc))
    l76k = DeviceThread(EmulatedL76K(pty, emitter, baud=gnss_cfg.baud, rate_hz=gnss_cfg.rate_hz),
                        lambda t: GnssTruth(lat_deg=START[0], lon_deg=START[1])).start()
    faults = tmp_path / "i2c_faults"
    notify = NotifySocket(tmp_path / "notify.sock")
    env = dict(os.environ, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="2000000", PYTHONUNBUFFERED="1",
               HW_BOAT_VESSEL=str(vessel_file), HW_BOAT_I2C_FAULTS=str(faults))
    env.pop("WATCHDOG_PID", None)
    gcs = Gcs(mav_port, key=hashlib.sha256(PASSPHRASE.encode()).digest())
    sticks = Sticks(gcs)
    proc = subprocess.Popen([sys.executable, str(CHILD), "run", "--config", str(boat)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(proc)
    daemon2 = None

    def pings() -> int:
        return sum(m == "WATCHDOG=1" for m in notify.messages)

    def logged(fragment: str, after: float = 0.0) -> bool:
        return any(fragment in line and t >= after for t, line in out.lines)

    def cycling(what: str) -> None:
        """The loop still runs: the process is alive and the watchdog pings go on."""
        n = pings()
        assert proc.poll() is None, f"{what}: the boat exited\n{out.text()[-3000:]}"
        assert sticks.wait(lambda: pings() >= n + 3, 15.0), f"{what}: no watchdog pings\n{out.text()[-3000:]}"

    try:
        # (a) up: READY, both outputs at neutral on the daemon's GPIOs
        assert sticks.wait(lambda: any(m.startswith("READY=1") for m in notify.messages), 60.0), out.text()
        assert sticks.wait(lambda: _at_neutral(daemon), 10.0), [daemon.state.pulse_us(g) for g in GPIOS]
        hb = gcs.connect(timeout=30.0)
        assert hb.get_srcSystem() == 7, out.text()
        assert gcs.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED, gcs.texts[-5:]
        assert sticks.wait(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), (gcs.texts[-8:],
                                                                                        out.text()[-3000:])
        assert sticks.wait(lambda: _off_neutral(daemon), 20.0), ([daemon.state.pulse_us(g) for g in GPIOS],
                                                                 out.text()[-3000:])

        # (d) I2C errors on the chip's bus: reported as imu-loss, the gyro comes back, the loop goes on
        mark = time.monotonic()
        faults.write_text("8")      # the driver re-initialises every 0.5 s: a few seconds of errors
        assert sticks.wait(lambda: not faults.exists(), 10.0), out.text()[-2000:]
        assert sticks.wait(lambda: logged("imu-loss: no gyro data", mark), 20.0), out.text()[-3000:]
        assert sticks.wait(lambda: logged("imu-loss: gyro data again", mark), 30.0), out.text()[-3000:]
        cycling("after the I2C errors")

        # (b) pigpiod gone: esc-disconnect (the boat disarms), the loop goes on; a new daemon on the same port
        # is found again by the autopilot and by its guardian, and gets neutral pulses
        mark = time.monotonic()
        daemon.stop()
        assert sticks.wait(lambda: logged("esc-disconnect: ESC output not connected", mark), 20.0), \
            out.text()[-3000:]
        # and as the ROS diagnostics would show it, armed or not: the ESC component's health, with its device
        assert sticks.wait(lambda: logged("[health] ESC: ERROR: output not connected (pigpio GPIO", mark), 10.0), \
            out.text()[-3000:]
        cycling("with pigpiod gone")
        daemon2 = FakePigpiod(port=daemon.port).start()
        assert sticks.wait(lambda: daemon2.connections >= 2 and _at_neutral(daemon2), 30.0), \
            (daemon2.connections, [daemon2.state.pulse_us(g) for g in GPIOS], out.text()[-3000:])
        cycling("after pigpiod came back")

        # armed again on the new daemon (its ESCs re-armed), sticks forward
        assert sticks.wait(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), (gcs.texts[-8:],
                                                                                        out.text()[-3000:])
        assert sticks.wait(lambda: _off_neutral(daemon2), 20.0), [daemon2.state.pulse_us(g) for g in GPIOS]

        # (c) the GNSS unplugged: the driver says so, the core reports gps-loss
        mark = time.monotonic()
        l76k.stop()
        pty.unplug()
        assert sticks.wait(lambda: logged("failed", mark) and logged("L76K on", mark), 20.0), out.text()[-3000:]
        assert sticks.wait(lambda: logged("gps-loss: no accepted GNSS position", mark), 30.0), out.text()[-3000:]
        assert sticks.wait(lambda: logged("[health] GNSS: ERROR: GNSS data silent for", mark), 10.0), \
            out.text()[-3000:]
        cycling("after the GNSS unplug")
        assert sticks.wait(lambda: _off_neutral(daemon2), 5.0), ("gps-loss in MANUAL leaves the sticks in charge",
                                                                 out.text()[-3000:])

        # (e) SIGTERM: neutral on the daemon within 0.5 s, exit 0
        sent_daemon_clock = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, out.text()[-3000:]
    finally:
        gcs.close()
        if proc.poll() is None:
            proc.kill()
        l76k.stop()
        pty.unplug()
        notify.close()
        daemon.stop()
        if daemon2 is not None:
            daemon2.stop()
    out.join()
    text = out.text()
    (tmp_path / "child.log").write_text(text)      # the whole story, for a failure
    assert "Traceback" not in text, text[text.find("Traceback") - 1500:][:4000]
    assert "no_ros: ROS modules imported: []" in text
    assert "backend hw, without ROS 2" in text
    neutral_at = _neutral_since(daemon2, sent_daemon_clock)
    assert neutral_at is not None and neutral_at - sent_daemon_clock < 0.5, (neutral_at, sent_daemon_clock)
