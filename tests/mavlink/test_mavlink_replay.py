"""A signed frame recorded on one MAVLink link and replayed on another is as old there as on its own: the boat
refuses it on every link. pymavlink's own signing on the ground station's side, over real UDP against
`autopilot sim --mavlink ... --realtime` with a signing key."""
from __future__ import annotations

import hashlib
import os
import socket

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

PASSPHRASE = "correct horse battery staple"
KEY = hashlib.sha256(PASSPHRASE.encode()).digest()
HOLD, LOITER = 4, 5


@pytest.fixture
def signed_boat(tmp_path):
    """The boat with two links: A sends to the owner's port (udpout), B listens on an open port (udpin)."""
    key_file = tmp_path / "mavlink.key"
    key_file.write_text(PASSPHRASE + "\n")
    os.chmod(key_file, 0o600)
    owner_port, open_port = free_udp_port(), free_udp_port()
    sim = SimBoat(tmp_path, owner_port, "--mavlink-key", str(key_file),
                  links=[f"udpout:127.0.0.1:{owner_port}", f"udpin:127.0.0.1:{open_port}"])
    owner = Gcs(owner_port, key=KEY)
    yield sim, owner, open_port
    owner.close()
    sim.stop()


@pytest.mark.slow
def test_a_signed_set_mode_replayed_on_another_link_is_refused(signed_boat):
    sim, owner, open_port = signed_boat
    assert owner.connect() is not None, sim.output()
    # the owner's signed SET_MODE LOITER on link A, its bytes recorded as they go out
    frame = bytes(owner.mav.set_mode_encode(1, M.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, LOITER).pack(owner.mav))
    assert frame[0] == 0xFD and frame[2] & M.MAVLINK_IFLAG_SIGNED
    owner.conn.write(frame)
    assert owner.until(lambda: owner.mode() == LOITER, 10.0), (owner.texts[-5:], sim.output()[-2000:])
    assert owner.set_mode(HOLD).result == M.MAV_RESULT_ACCEPTED
    assert owner.until(lambda: owner.mode() == HOLD, 5.0)

    # the recording replayed on link B, then on link A: the boat stays in HOLD
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _ in range(3):
            sock.sendto(frame, ("127.0.0.1", open_port))
        owner.poll(2.0)
        assert owner.mode() == HOLD, "the replay on link B was obeyed"
        owner.conn.write(frame)
        owner.poll(2.0)
        assert owner.mode() == HOLD, "the replay on link A was obeyed"
    finally:
        sock.close()

    # the genuine station keeps commanding on both links: its own frames are new ones
    station = Gcs(open_port, key=KEY, connect_out=True)          # the owner's ids, its own link id
    try:
        assert station.connect() is not None
        assert station.set_mode(LOITER).result == M.MAV_RESULT_ACCEPTED, station.texts[-3:]
        assert station.until(lambda: station.mode() == LOITER, 5.0)
        assert owner.set_mode(HOLD).result == M.MAV_RESULT_ACCEPTED, owner.texts[-3:]
        assert owner.until(lambda: owner.mode() == HOLD, 5.0)
    finally:
        station.close()
    assert "Traceback" not in sim.output()
