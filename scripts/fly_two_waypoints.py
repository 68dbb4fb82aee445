"""fly_two_waypoints.py -- start `autopilot run --config BOAT.yaml` and fly its mission from a MAVLink ground station.

    python scripts/fly_two_waypoints.py BOAT.yaml [--seconds 60] [--startup-s 120]

A plain pymavlink client, the way a ground station on the boat's network would be: it reads the boat config's
`mavlink:` section (the first link and the signing key file, if one is set: then every command it sends is
signed), starts `autopilot run` (the `autopilot` beside this Python, i.e. the installed one), waits for the
boat's HEARTBEAT, sets AUTO, arms (retrying while the pre-arm checks still fail, e.g. before the first GNSS
fix), and follows MISSION_CURRENT until the boat reports the mission complete (MISSION_CURRENT's mission_state
COMPLETE, or its "mission complete" STATUSTEXT) having steered for every waypoint of the boat config's mission
(a short one: scripts/check_arm64_root.sh writes one of two waypoints). Then it disarms, stops the boat
(SIGTERM) and checks that it exited cleanly.

Flying time: --seconds (default 60) from the first HEARTBEAT; the boat process may take --startup-s to send
that HEARTBEAT (Python starts slowly under qemu-user).

Prints one line "PASS: ..." or "FAIL: <reason>" last (with the boat's output tail on failure); exit 0 on PASS,
1 on FAIL. Only the Python standard library, PyYAML and pymavlink: the autopilot's own dependencies.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

os.environ["MAVLINK20"] = "1"
import yaml  # noqa: E402
from pymavlink import mavutil  # noqa: E402

M = mavutil.mavlink
AUTO, HOLD = 10, 4                      # ArduPilot Rover's custom modes, which the boat reports


class Fail(Exception):
    pass


def signing_key(path: Path) -> bytes:
    """A key file's 32 bytes: 64 hex digits are the key; anything else is a passphrase, hashed with SHA-256
    (as MAVProxy's `signing key PASSPHRASE` and QGroundControl do)."""
    text = path.read_text(encoding="ascii").strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    return hashlib.sha256(text.encode("ascii")).digest()


def gcs_device(link: str) -> str:
    """The ground station's side of the boat's link: the boat sends (udpout) -> we listen; it listens -> we send."""
    kind, _, rest = link.partition(":")
    if kind == "udpout":
        return f"udpin:{rest}"
    if kind == "udpin":
        return f"udpout:{rest}"
    if kind == "tcpin":
        return f"tcp:{rest}"
    raise Fail(f"mavlink link {link!r}: this client speaks udpout, udpin or tcpin links only")


def mission_waypoints(cfg_path: Path, cfg: dict) -> int:
    mission = cfg.get("mission")
    if not mission:
        raise Fail(f"{cfg_path} names no mission")
    path = Path(mission) if Path(mission).is_absolute() else cfg_path.parent / mission
    data = yaml.safe_load(path.read_text())
    n = len(data.get("waypoints") or [])
    if n == 0:
        raise Fail(f"{path}: no waypoints")
    return n


class Station:
    def __init__(self, device: str, key: bytes | None):
        self.conn = mavutil.mavlink_connection(device, source_system=255, source_component=190)
        if key is not None:
            self.conn.setup_signing(key, sign_outgoing=True)
        self.mav = self.conn.mav
        self.texts: list = []
        self.current: set = set()          # MISSION_CURRENT seqs seen while armed
        self.complete = False
        self.last: dict = {}
        self._hb_next = 0.0

    def pump(self, seconds: float, kind: str | None = None, cond=lambda m: True):
        """Read messages for up to `seconds` (sending our 1 Hz heartbeat); the first of `kind` meeting cond."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            now = time.monotonic()
            if self.conn.target_system and now >= self._hb_next:
                self.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)
                self._hb_next = now + 1.0
            msg = self.conn.recv_match(blocking=True, timeout=0.1)
            if msg is None:
                continue
            t = msg.get_type()
            self.last[t] = msg
            if t == "STATUSTEXT":
                self.texts.append(msg.text)
                if "mission complete" in msg.text.lower():
                    self.complete = True
            elif t == "MISSION_CURRENT" and self.armed():
                self.current.add(msg.seq)
                if getattr(msg, "mission_state", 0) == M.MISSION_STATE_COMPLETE:
                    self.complete = True
            if kind is not None and t == kind and cond(msg):
                return msg
        return None

    def command(self, command: int, *params: float):
        p = list(params) + [0.0] * (7 - len(params))
        self.mav.command_long_send(self.conn.target_system, self.conn.target_component, command, 0, *p)
        return self.pump(5.0, "COMMAND_ACK", lambda m: m.command == command)

    def armed(self) -> bool:
        hb = self.last.get("HEARTBEAT")
        return bool(hb is not None and hb.type != M.MAV_TYPE_GCS and hb.base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED)


def fly(cfg_path: Path, seconds: float, startup_s: float, out_path: Path) -> str:
    cfg = yaml.safe_load(cfg_path.read_text()) or {}
    mav_cfg = cfg.get("mavlink")
    if not isinstance(mav_cfg, dict) or not mav_cfg.get("links"):
        raise Fail(f"{cfg_path} has no mavlink: links")
    key = None
    if mav_cfg.get("signing_key_file"):
        key_path = Path(mav_cfg["signing_key_file"])
        key = signing_key(key_path if key_path.is_absolute() else cfg_path.parent / key_path)
    n_wp = mission_waypoints(cfg_path, cfg)
    gcs = Station(gcs_device(mav_cfg["links"][0]), key)
    exe = Path(sys.executable).parent / "autopilot"
    with open(out_path, "w") as out:
        boat = subprocess.Popen([str(exe), "run", "--config", str(cfg_path)], stdout=out, stderr=subprocess.STDOUT)
    try:
        t0 = time.monotonic()
        hb = None
        while hb is None and time.monotonic() - t0 < startup_s:
            if boat.poll() is not None:
                raise Fail(f"`autopilot run` exited {boat.returncode} before its first HEARTBEAT")
            hb = gcs.pump(1.0, "HEARTBEAT", lambda m: m.type != M.MAV_TYPE_GCS)
        if hb is None:
            raise Fail(f"no HEARTBEAT from the boat within {startup_s:.0f} s")
        gcs.conn.target_system, gcs.conn.target_component = hb.get_srcSystem(), hb.get_srcComponent()
        up = time.monotonic() - t0
        deadline = time.monotonic() + seconds
        ack = gcs.command(M.MAV_CMD_DO_SET_MODE, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, AUTO)
        if ack is None or ack.result != M.MAV_RESULT_ACCEPTED:
            raise Fail(f"set mode AUTO: {'no COMMAND_ACK' if ack is None else f'result {ack.result}'}; "
                       f"texts {gcs.texts[-3:]}")
        while not gcs.armed():
            if time.monotonic() > deadline or boat.poll() is not None:
                raise Fail(f"not armed within {seconds:.0f} s of the first HEARTBEAT; last texts {gcs.texts[-3:]}")
            ack = gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 1)
            gcs.pump(1.0 if ack is None or ack.result != M.MAV_RESULT_ACCEPTED else 0.5)
        armed_at = time.monotonic()
        while not gcs.complete:
            if boat.poll() is not None:
                raise Fail(f"`autopilot run` exited {boat.returncode} while flying")
            if time.monotonic() > deadline:
                raise Fail(f"mission not complete within {seconds:.0f} s of the first HEARTBEAT (MISSION_CURRENT "
                           f"seqs {sorted(gcs.current)}); last texts {gcs.texts[-3:]}")
            gcs.pump(0.5)
        flown = time.monotonic() - armed_at
        if len(gcs.current) < n_wp:
            raise Fail(f"mission complete, but MISSION_CURRENT named only {sorted(gcs.current)} for {n_wp} waypoints")
        ack = gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0)
        if ack is None or ack.result != M.MAV_RESULT_ACCEPTED:
            raise Fail("disarm not accepted")
    finally:
        if boat.poll() is None:
            boat.send_signal(signal.SIGTERM)
            try:
                boat.wait(timeout=30)
            except subprocess.TimeoutExpired:
                boat.kill()
                boat.wait()
        gcs.conn.close()
    if boat.returncode != 0:
        raise Fail(f"`autopilot run` exited {boat.returncode} on SIGTERM")
    return (f"boat {hb.get_srcSystem()} up after {up:.1f} s, armed in AUTO{' (signed)' if key else ''}, flew "
            f"the {n_wp} waypoints (MISSION_CURRENT {sorted(gcs.current)}) to mission complete in {flown:.1f} s, "
            f"disarmed, exited 0")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path, help="boat config with backend: sim, a short mission and mavlink: links")
    ap.add_argument("--seconds", type=float, default=60.0, help="time from the first HEARTBEAT to fly it in")
    ap.add_argument("--startup-s", type=float, default=120.0, help="time allowed for the first HEARTBEAT")
    ap.add_argument("--output", type=Path, help="where the boat's output goes (default: beside the config)")
    args = ap.parse_args(argv)
    out_path = args.output or args.config.with_suffix(".run.out")
    try:
        print("PASS: " + fly(args.config.resolve(), args.seconds, args.startup_s, out_path))
        return 0
    except Fail as e:
        tail = out_path.read_text(errors="replace").splitlines()[-15:] if out_path.exists() else []
        for line in tail:
            print(f"  | {line}")
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
