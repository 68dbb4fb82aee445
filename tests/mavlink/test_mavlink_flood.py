"""Floods of random bytes at several MB/s on two MAVLink ports (UDP and TCP) must not take the control loop's
time: the boat keeps its deadlines (no overrun failsafe holds it in AUTO), and the ground station on its own link
still hears the boat and stops it. A real pymavlink GCS over UDP against `autopilot sim --mavlink ... --realtime`."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

HOLD, AUTO = 4, 10
HOME = (51.1099101, 17.0598572)
M_PER_DEG_LAT = 111195.0


def _flood(kind: str, port: int, stop: threading.Event, offered: list, rate_bps: float = 3e6) -> None:
    """Random bytes in pieces of 1-8 KB to the boat's `kind` ("udp" or "tcp") port on 127.0.0.1, offered at
    about rate_bps bytes a second until `stop`; appends (bytes offered, seconds) to `offered`. Over TCP a piece
    the boat's side does not take at once is dropped: the flood never waits for it."""
    blob = os.urandom(1 << 20)
    if kind == "tcp":
        sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        sock.setblocking(False)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0, total, k = time.monotonic(), 0, 0
    try:
        while not stop.is_set():
            size = 1024 + (k * 2731) % 7168
            start = (k * 7919) % (len(blob) - size)
            try:
                if kind == "tcp":
                    sock.send(blob[start:start + size])
                else:
                    sock.sendto(blob[start:start + size], ("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError:
                if kind == "tcp":
                    break
            total += size
            k += 1
            ahead = total / rate_bps - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    finally:
        sock.close()
        offered.append((total, time.monotonic() - t0))


def _rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def test_random_byte_floods_neither_hold_the_boat_nor_deafen_the_ground_station(tmp_path):
    owner_port, udp_port, tcp_port = free_udp_port(), free_udp_port(), free_udp_port()
    sim = SimBoat(tmp_path, owner_port, links=[f"udpout:127.0.0.1:{owner_port}", f"udpin:127.0.0.1:{udp_port}",
                                               f"tcpin:127.0.0.1:{tcp_port}"])
    gcs = Gcs(owner_port)
    stop = threading.Event()
    offered: list = []
    flooders = [threading.Thread(target=_flood, args=(kind, port, stop, offered), daemon=True)
                for kind, port in (("udp", udp_port), ("tcp", tcp_port))]
    try:
        assert gcs.connect() is not None, sim.output()
        # a mission long enough to still be flying it when the flood ends: one waypoint 80 m north
        far = (HOME[0] + 80.0 / M_PER_DEG_LAT, HOME[1])
        ack = gcs.upload([(0, 16, 0, 0, 0, 0, *HOME, 0), (3, 16, 0, 0, 0, 0, *far, 0)])
        assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
        assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
        assert gcs.until(lambda: gcs.last["HEARTBEAT"].base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED, 5.0)

        rss_before = _rss_mb(sim.proc.pid)
        for f in flooders:
            f.start()
        beats, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 10.0:
            beats += gcs.wait("HEARTBEAT", lambda m: m.type != M.MAV_TYPE_GCS, timeout=1.2) is not None
        # still flying the mission through the flood, heard at the heartbeat's 1 Hz
        assert gcs.mode() == AUTO, (gcs.texts[-5:], sim.output()[-2000:])
        assert beats >= 8, beats
        # and the ground station stops it while the flood goes on
        ack = gcs.set_mode(HOLD)
        assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
        assert gcs.until(lambda: gcs.mode() == HOLD, 5.0)
        # nor did it keep what it left unread: its memory grew by far less than the 60 MB it was sent
        grown = _rss_mb(sim.proc.pid) - rss_before
        assert grown < 10.0, f"the boat grew by {grown:.0f} MB during the flood"
        stop.set()
        for f in flooders:
            f.join(timeout=5.0)
        # once the flood is over the flooded UDP link serves a ground station again
        station = Gcs(udp_port, system_id=250, connect_out=True)
        try:
            assert station.connect(timeout=10.0) is not None
            # (as a ground station does, it asks again when no answer comes: the flood's last bytes in the
            # parser may swallow the first command's frame)
            acks = (station.command(M.MAV_CMD_DO_SET_MODE, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, AUTO, timeout=2.0)
                    for _ in range(5))
            ack = next((a for a in acks if a is not None), None)
            assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, station.texts[-3:]
            assert station.until(lambda: station.mode() == AUTO, 5.0)
        finally:
            station.close()
    finally:
        stop.set()
        for f in flooders:
            if f.is_alive():
                f.join(timeout=5.0)
        gcs.close()
        sim.stop()
    out = sim.out_path.read_text()
    rate = sum(total / seconds for total, seconds in offered)
    assert len(offered) == 2 and rate > 4e6, f"the floods offered only {rate / 1e6:.1f} MB/s"
    assert "overrun" not in out.lower() and "ms late" not in out, out[-3000:]
    assert "flooded" in out, out[-3000:]                     # the boat said which link it was shedding
    assert "Traceback" not in out
