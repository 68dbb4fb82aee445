"""A ground station for the tests: pymavlink's mavutil over real UDP on 127.0.0.1, against `autopilot sim
--mavlink ... --realtime` in its own process. Written from the MAVLink protocol, not from our server's code."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

os.environ["MAVLINK20"] = "1"
from pymavlink import mavutil  # noqa: E402

from tests.support.paths import DATA, REPO  # noqa: E402

M = mavutil.mavlink


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SimBoat:
    """`autopilot sim MISSION --mavlink udpout:127.0.0.1:PORT --realtime` in a subprocess; its output in a file."""

    def __init__(self, tmp: Path, port: int, *extra: str, mission: Path = DATA / "mavlink_pond.yaml",
                 links: Optional[list] = None):
        self.out_path = tmp / f"sim-{port}.out"
        links = links or [f"udpout:127.0.0.1:{port}"]
        cmd = [sys.executable, "-m", "autopilot.cli", "sim", str(mission), "--vessel", "foka", "--realtime",
               "--gps-noise", "white", "--duration", "600", "--report", str(tmp / f"report-{port}.json"), *extra]
        for link in links:
            cmd += ["--mavlink", link]
        self.out = open(self.out_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        self.out.flush()
        return self.out_path.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return self.proc.returncode


class Gcs:
    """A ground station: system 255, component 190 (MAV_COMP_ID_MISSIONPLANNER), listening on `port`."""

    def __init__(self, port: int, key: Optional[bytes] = None, system_id: int = 255, connect_out: bool = False):
        """Listens on `port` (the boat sends there: its link udpout:127.0.0.1:PORT), or with connect_out sends to
        it (the boat listens there: its link udpin:127.0.0.1:PORT)."""
        self.connect_out = connect_out
        device = f"udpout:127.0.0.1:{port}" if connect_out else f"udpin:127.0.0.1:{port}"
        self.conn = mavutil.mavlink_connection(device, source_system=system_id, source_component=190)
        self.mav = self.conn.mav
        if key is not None:
            self.conn.setup_signing(key, sign_outgoing=True)
        self.texts: list = []
        self._chunks: dict = {}
        self.last: dict = {}
        self._hb_next = 0.0
        self.send_heartbeats = True

    # -------------------------------------------------------------- receiving
    def poll(self, seconds: float = 0.0):
        """Read everything that arrives within `seconds`, keeping STATUSTEXTs and the newest of each type."""
        end = time.monotonic() + seconds
        while True:
            self._beat()
            msg = self.conn.recv_match(blocking=True, timeout=0.05)
            if msg is not None:
                self._keep(msg)
            if time.monotonic() >= end:
                return

    def _keep(self, msg) -> None:
        t = msg.get_type()
        self.last[t] = msg
        if t == "STATUSTEXT":
            # MAVLink 2 long texts come in 50-character chunks sharing an id (QGC joins them the same way)
            if msg.id == 0:
                self.texts.append(msg.text)
                return
            parts = self._chunks.setdefault(msg.id, {})
            parts[msg.chunk_seq] = msg.text
            if len(msg.text) < 50:
                self.texts.append("".join(parts[k] for k in sorted(parts)))
                del self._chunks[msg.id]

    def _beat(self) -> None:
        now = time.monotonic()
        if self.send_heartbeats and now >= self._hb_next and (self.conn.target_system or self.connect_out):
            self.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)
            self._hb_next = now + 1.0

    def wait(self, kind: str, cond=lambda m: True, timeout: float = 10.0):
        """The first message of `kind` that satisfies cond within timeout, else None."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self._beat()
            msg = self.conn.recv_match(blocking=True, timeout=0.05)
            if msg is None:
                continue
            self._keep(msg)
            if msg.get_type() == kind and cond(msg):
                return msg
        return None

    def until(self, predicate, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self.poll(0.2)
        return predicate()

    def wait_text(self, fragment: str, timeout: float = 10.0) -> Optional[str]:
        fragment = fragment.lower()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hit = next((t for t in self.texts if fragment in t.lower()), None)
            if hit is not None:
                return hit
            self.poll(0.2)
        return next((t for t in self.texts if fragment in t.lower()), None)

    def connect(self, timeout: float = 30.0):
        hb = self.wait("HEARTBEAT", lambda m: m.type != M.MAV_TYPE_GCS, timeout)
        assert hb is not None, "no HEARTBEAT from the boat"
        self.conn.target_system, self.conn.target_component = hb.get_srcSystem(), hb.get_srcComponent()
        return hb

    # -------------------------------------------------------------- commanding
    def command(self, command: int, *params: float, timeout: float = 10.0):
        p = list(params) + [0.0] * (7 - len(params))
        self.mav.command_long_send(self.conn.target_system, self.conn.target_component, command, 0, *p)
        return self.wait("COMMAND_ACK", lambda m: m.command == command, timeout)

    def arm(self):
        return self.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 1)

    def set_mode(self, number: int):
        return self.command(M.MAV_CMD_DO_SET_MODE, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, number)

    def mode(self) -> Optional[int]:
        hb = self.last.get("HEARTBEAT")
        return None if hb is None else hb.custom_mode

    # -------------------------------------------------------------- missions
    def upload(self, items: list, mission_type: int = 0, timeout: float = 15.0, sign_items: bool = True):
        """Upload (frame, command, p1..p4, lat, lon, alt) tuples; returns the MISSION_ACK (None on timeout).
        sign_items=False: a signing station sends the count signed and the items unsigned (an injected transfer)."""
        tgt = (self.conn.target_system, self.conn.target_component)
        self.mav.mission_count_send(*tgt, len(items), mission_type)
        signing = self.mav.signing
        signed = signing.sign_outgoing
        try:
            signing.sign_outgoing = signed and sign_items
            return self._serve_items(items, mission_type, tgt, timeout)
        finally:
            signing.sign_outgoing = signed

    def _serve_items(self, items: list, mission_type: int, tgt: tuple, timeout: float):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            msg = self.conn.recv_match(type=["MISSION_REQUEST_INT", "MISSION_REQUEST", "MISSION_ACK", "STATUSTEXT",
                                             "HEARTBEAT"], blocking=True, timeout=0.2)
            self._beat()
            if msg is None:
                continue
            self._keep(msg)
            t = msg.get_type()
            if t == "MISSION_ACK" and msg.mission_type == mission_type:
                return msg
            if t in ("MISSION_REQUEST_INT", "MISSION_REQUEST") and msg.mission_type == mission_type:
                frame, command, p1, p2, p3, p4, lat, lon, alt = items[msg.seq]
                self.mav.mission_item_int_send(*tgt, msg.seq, frame, command, int(msg.seq == 0), 1, p1, p2, p3,
                                               p4, int(round(lat * 1e7)), int(round(lon * 1e7)), alt,
                                               mission_type)
        return None

    def download(self, mission_type: int = 0, timeout: float = 15.0) -> Optional[list]:
        tgt = (self.conn.target_system, self.conn.target_component)
        self.mav.mission_request_list_send(*tgt, mission_type)
        count = self.wait("MISSION_COUNT", lambda m: m.mission_type == mission_type, timeout)
        if count is None:
            return None
        out = []
        for seq in range(count.count):
            self.mav.mission_request_int_send(*tgt, seq, mission_type)
            item = self.wait("MISSION_ITEM_INT", lambda m: m.seq == seq and m.mission_type == mission_type,
                             timeout)
            if item is None:
                return None
            out.append((item.frame, item.command, item.param1, item.param2, item.param3, item.param4,
                        item.x / 1e7, item.y / 1e7, item.z))
        self.mav.mission_ack_send(*tgt, M.MAV_MISSION_ACCEPTED, mission_type)
        return out

    # -------------------------------------------------------------- parameters
    def params(self, timeout: float = 10.0) -> dict:
        self.mav.param_request_list_send(self.conn.target_system, self.conn.target_component)
        values, count = {}, None
        end = time.monotonic() + timeout
        while time.monotonic() < end and (count is None or len(values) < count):
            msg = self.wait("PARAM_VALUE", timeout=max(0.1, end - time.monotonic()))
            if msg is None:
                break
            count = msg.param_count
            values[msg.param_id] = msg.param_value
        return values

    def set_param(self, name: str, value: float, timeout: float = 10.0):
        self.mav.param_set_send(self.conn.target_system, self.conn.target_component, name.encode(), value,
                                M.MAV_PARAM_TYPE_REAL32)
        return self.wait("PARAM_VALUE", lambda m: m.param_id == name, timeout)

    def close(self) -> None:
        self.conn.close()


def read_wpl(path: Path) -> list:
    """(frame, command, p1..p4, lat, lon, alt) per line of a QGC WPL 110 file."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split()
        if len(f) == 12:
            out.append((int(f[2]), int(f[3]), *(float(x) for x in f[4:11])))
    return out
