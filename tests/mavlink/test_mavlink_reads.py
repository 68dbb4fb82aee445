"""Reads stay open on a signed boat, but an unsigned sender cannot use them against the owner: a flood of
parameter-list requests does not starve the owner's heartbeats, stream rates need the key, and each link keeps
its own rates. pymavlink ground stations over real UDP against `autopilot sim --mavlink ... --realtime`."""
from __future__ import annotations

import hashlib
import os
import socket
import threading
import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

PASSPHRASE = "correct horse battery staple"
KEY = hashlib.sha256(PASSPHRASE.encode()).digest()


@pytest.fixture
def signed_boat(tmp_path):
    """The boat with two links: A sends to the owner's port (udpout), B listens on an open port (udpin) where a
    stranger without the key is."""
    key_file = tmp_path / "mavlink.key"
    key_file.write_text(PASSPHRASE + "\n")
    os.chmod(key_file, 0o600)
    owner_port, open_port = free_udp_port(), free_udp_port()
    sim = SimBoat(tmp_path, owner_port, "--mavlink-key", str(key_file),
                  links=[f"udpout:127.0.0.1:{owner_port}", f"udpin:127.0.0.1:{open_port}"])
    owner = Gcs(owner_port, key=KEY)
    stranger = Gcs(open_port, system_id=254, connect_out=True)
    yield sim, owner, stranger, open_port
    owner.close()
    stranger.close()
    sim.stop()


def _count(gcs: Gcs, kind: str, seconds: float) -> int:
    """How many `kind` messages from the boat arrive within `seconds`."""
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        msg = gcs.wait(kind, lambda m: m.get_srcSystem() == 1, timeout=max(0.01, end - time.monotonic()))
        n += msg is not None
    return n


def test_an_unsigned_parameter_list_flood_does_not_starve_the_owner_s_heartbeats(signed_boat):
    sim, owner, stranger, open_port = signed_boat
    assert owner.connect() is not None, sim.output()
    assert stranger.connect() is not None
    assert len(stranger.params()) > 10                  # reads are open: the stranger lists the parameters
    frame = bytes(M.MAVLink(None, srcSystem=254, srcComponent=190).param_request_list_encode(1, 1).pack(
        M.MAVLink(None, srcSystem=254, srcComponent=190)))
    stop = threading.Event()

    def flood():                                        # 500 unsigned PARAM_REQUEST_LIST a second
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t0, k = time.monotonic(), 0
        while not stop.is_set():
            sock.sendto(frame, ("127.0.0.1", open_port))
            k += 1
            ahead = k / 500.0 - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
        sock.close()
    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    try:
        beats = _count(owner, "HEARTBEAT", 8.0)
        # the owner still hears the boat at its 1 Hz heartbeat, and the boat still answers it
        assert beats >= 7, f"{beats} heartbeats in 8 s"
        assert owner.set_mode(4).result == M.MAV_RESULT_ACCEPTED
    finally:
        stop.set()
        flooder.join(timeout=5.0)
    assert "Traceback" not in sim.output()


def test_an_unsigned_sender_cannot_change_what_the_boat_streams(signed_boat):
    sim, owner, stranger, _ = signed_boat
    assert owner.connect() is not None, sim.output()
    assert stranger.connect() is not None
    # ATTITUDE off, then every stream off, both unsigned
    ack = stranger.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_ATTITUDE, -1)
    stranger.mav.request_data_stream_send(1, 1, M.MAV_DATA_STREAM_ALL, 0, 0)
    owner.poll(0.5)
    # ATTITUDE (4 Hz) and the position (boat config rates) still reach both links
    assert _count(owner, "ATTITUDE", 2.0) >= 5
    assert _count(stranger, "ATTITUDE", 2.0) >= 5
    assert _count(owner, "GLOBAL_POSITION_INT", 2.0) >= 4
    # and the stranger was told why
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert stranger.wait_text("unsigned REQUEST_DATA_STREAM"), stranger.texts[-5:]
    assert "Traceback" not in sim.output()


def test_each_link_keeps_its_own_stream_rates(signed_boat):
    sim, owner, stranger, _ = signed_boat
    assert owner.connect() is not None, sim.output()
    assert stranger.connect() is not None
    # the owner turns ATTITUDE off and VFR_HUD up to 10 Hz on its own link
    ack = owner.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_ATTITUDE, -1)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    ack = owner.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_VFR_HUD, 100_000)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    owner.poll(0.5)
    assert _count(owner, "ATTITUDE", 2.0) == 0
    assert _count(owner, "VFR_HUD", 2.0) >= 14
    # the other link streams as it did: ATTITUDE at 4 Hz, VFR_HUD at the boat config's rate
    assert _count(stranger, "ATTITUDE", 2.0) >= 5
    assert _count(stranger, "VFR_HUD", 2.0) <= 6
    assert "Traceback" not in sim.output()
