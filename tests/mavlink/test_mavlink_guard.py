"""MAVLink that a stranger, a broken radio or a flood cannot turn against the boat: signing, garbage, two ground
stations at once, fence uploads and the geofence failsafe under MANUAL_CONTROL. A real pymavlink GCS over UDP
on 127.0.0.1 against `autopilot sim --mavlink ... --realtime` in its own process."""
from __future__ import annotations

import hashlib
import math
import os
import random
import socket
import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

PASSPHRASE = "correct horse battery staple"
HOLD, MANUAL = 4, 0
HOME = (51.1099101, 17.0598572)
M_PER_DEG_LAT = 111195.0


def _fence(north_m: float, south_m: float, half_width_m: float) -> list:
    """An inclusion polygon about the launch point, as MISSION_TYPE_FENCE items."""
    import math
    lat0, lon0 = HOME
    k_lon = M_PER_DEG_LAT * math.cos(math.radians(lat0))
    corners = [(north_m, -half_width_m), (north_m, half_width_m), (-south_m, half_width_m),
               (-south_m, -half_width_m)]
    return [(0, M.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, 4, 0, 0, 0, lat0 + n / M_PER_DEG_LAT,
             lon0 + e / k_lon, 0) for n, e in corners]


@pytest.fixture
def signed_boat(tmp_path):
    key_file = tmp_path / "mavlink.key"
    key_file.write_text(PASSPHRASE + "\n")
    os.chmod(key_file, 0o600)
    owner_port, open_port = free_udp_port(), free_udp_port()
    sim = SimBoat(tmp_path, owner_port, "--mavlink-key", str(key_file),
                  links=[f"udpout:127.0.0.1:{owner_port}", f"udpin:127.0.0.1:{open_port}"])
    owner = Gcs(owner_port, key=hashlib.sha256(PASSPHRASE.encode()).digest())
    stranger = Gcs(open_port, system_id=254, connect_out=True)
    yield sim, owner, stranger, open_port
    owner.close()
    stranger.close()
    sim.stop()


def _frames(rng: random.Random) -> list:
    """Garbage, truncated frames, frames with a wrong CRC and valid-looking frames for other systems."""
    mav = M.MAVLink(None, srcSystem=253, srcComponent=1)
    good = [mav.command_long_encode(1, 1, M.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0).pack(mav),
            mav.heartbeat_encode(M.MAV_TYPE_GCS, 0, 0, 0, 0).pack(mav),
            mav.param_set_encode(1, 1, b"X" * 16, 1e30, M.MAV_PARAM_TYPE_REAL32).pack(mav),
            mav.mission_count_encode(1, 1, 65535, 0).pack(mav)]
    out = []
    for _ in range(300):
        kind = rng.randrange(4)
        if kind == 0:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
        elif kind == 1:
            f = rng.choice(good)
            out.append(f[:rng.randrange(1, len(f))])
        elif kind == 2:
            f = bytearray(rng.choice(good))
            f[rng.randrange(len(f))] ^= 1 + rng.randrange(255)
            out.append(bytes(f))
        else:
            out.append(b"\xfd" * rng.randrange(1, 64))          # start markers with nothing behind them
    return out


def test_unsigned_commands_are_refused_but_anyone_can_stop_the_boat(signed_boat):
    sim, owner, stranger, _ = signed_boat
    assert owner.connect() is not None, sim.output()
    assert stranger.connect() is not None                       # telemetry is not secret: it reaches both
    ack = stranger.arm()
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert stranger.wait_text("unsigned"), stranger.texts
    ack = stranger.upload([(0, 16, 0, 0, 0, 0, *HOME, 0), (3, 16, 0, 0, 0, 0, HOME[0] + 1e-4, HOME[1], 0)])
    assert ack is not None and ack.type == M.MAV_MISSION_DENIED
    # the owner's signed commands are obeyed
    assert owner.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED
    assert owner.until(lambda: owner.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), owner.texts[-5:]
    # an unsigned HOLD or disarm is obeyed: stopping the boat never waits for a key
    assert stranger.set_mode(HOLD).result == M.MAV_RESULT_ACCEPTED
    assert stranger.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0).result == M.MAV_RESULT_ACCEPTED
    assert owner.until(lambda: not owner.last["HEARTBEAT"].base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED, 5.0)
    assert "HOLD" in sim.output() and "disarmed" in sim.output()


def test_a_signed_mission_count_does_not_admit_unsigned_items_behind_it(signed_boat):
    sim, owner, _, _ = signed_boat
    owner.connect()
    far = [(0, 16, 0, 0, 0, 0, HOME[0] + north_m / M_PER_DEG_LAT, HOME[1], 0) for north_m in (180.0, 200.0)]
    ack = owner.upload([(0, 16, 0, 0, 0, 0, *HOME, 0), *far], sign_items=False)
    assert ack is not None and ack.type == M.MAV_MISSION_DENIED, ack
    assert owner.wait_text("unsigned"), owner.texts
    # the mission flown and downloaded is still the pond's: one waypoint 12 m north, none 180 m away
    back = owner.download()
    assert back is not None, owner.texts[-3:]
    waypoints = [it for it in back[1:] if it[1] == M.MAV_CMD_NAV_WAYPOINT]
    assert len(waypoints) == 1 and abs((waypoints[0][6] - HOME[0]) * M_PER_DEG_LAT - 12.0) < 0.5, back
    # the same transfer, signed throughout, is taken
    ack = owner.upload([(0, 16, 0, 0, 0, 0, *HOME, 0), *far])
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, owner.texts[-3:]
    assert "Traceback" not in sim.output()


def test_one_forged_frame_with_a_later_timestamp_does_not_lock_the_ground_station_out(signed_boat):
    sim, _, _, open_port = signed_boat
    key = hashlib.sha256(PASSPHRASE.encode()).digest()
    station = Gcs(open_port, key=key, connect_out=True)              # 255/190, the ground station's own ids
    forger = Gcs(open_port, key=bytes(32), connect_out=True)         # the same ids, the wrong key
    try:
        station.connect()
        forger.send_heartbeats = False
        # one frame an hour ahead of the station's clock (10 us units), on the station's link id
        forger.mav.signing.link_id = station.mav.signing.link_id
        forger.mav.signing.timestamp = station.mav.signing.timestamp + 100_000 * 3600
        forger.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)
        time.sleep(0.5)
        # the station's next signed commands are still its own
        assert station.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED, station.texts[-3:]
        assert station.until(lambda: station.mode() == MANUAL, 5.0)
        assert station.arm().result == M.MAV_RESULT_ACCEPTED or station.until(
            lambda: station.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), station.texts[-5:]
    finally:
        station.close()
        forger.close()
    assert "Traceback" not in sim.output()


def test_garbage_and_a_flood_from_a_second_station_neither_crash_nor_stall_the_boat(signed_boat):
    sim, owner, stranger, open_port = signed_boat
    owner.connect()
    stranger.connect()
    owner.poll(3.0)
    before = {k: v for k, v in owner.last.items()}
    assert "GLOBAL_POSITION_INT" in before, sorted(before)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rng = random.Random(4)
    beats, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < 8.0:
        for frame in _frames(rng)[:40]:
            sock.sendto(frame, ("127.0.0.1", open_port))
        for _ in range(20):              # 10x a ground station's request rate: parameter and mission lists
            stranger.mav.param_request_list_send(1, 1)
            stranger.mav.mission_request_list_send(1, 1, 0)
        hb = owner.wait("HEARTBEAT", timeout=0.25)
        beats += hb is not None
    sock.close()
    # the owner kept hearing the boat at its rates, and the boat still obeys it
    assert beats >= 6, beats
    pos = owner.wait("GLOBAL_POSITION_INT", lambda m: m.time_boot_ms > before["GLOBAL_POSITION_INT"].time_boot_ms,
                     timeout=3.0)
    assert pos is not None
    assert owner.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED
    assert sim.proc.poll() is None, sim.output()
    assert "Traceback" not in sim.output()


def test_an_uploaded_fence_is_checked_against_the_mission_and_a_fence_crossing_is_reported(signed_boat):
    sim, owner, _, _ = signed_boat
    owner.connect()
    # the mission's waypoint is 12 m north: a fence 8 m north of the launch point is refused, naming why
    ack = owner.upload(_fence(8.0, 20.0, 20.0), mission_type=M.MAV_MISSION_TYPE_FENCE)
    assert ack is not None and ack.type != M.MAV_MISSION_ACCEPTED
    assert owner.wait_text("outside the geofence"), owner.texts
    ack = owner.upload(_fence(16.0, 20.0, 20.0), mission_type=M.MAV_MISSION_TYPE_FENCE)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, owner.texts[-3:]
    back = owner.download(M.MAV_MISSION_TYPE_FENCE)
    assert back is not None and len(back) == 4 and back[0][1] == M.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION
    # MANUAL at full throttle due north (the boat starts heading north): the geofence failsafe stops it
    assert owner.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED
    assert owner.until(lambda: owner.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), owner.texts[-5:]
    end = time.monotonic() + 40.0
    hit = None
    while time.monotonic() < end and hit is None:
        owner.mav.manual_control_send(1, 1000, 0, 500, 0, 0)
        owner.poll(0.1)
        hit = next((t for t in owner.texts if "geofence" in t.lower()), None)
    assert hit is not None, owner.texts[-8:]


def test_unsigned_guided_targets_are_refused_and_the_owner_s_are_taken(signed_boat):
    """A stranger on an open link cannot send the boat somewhere: DO_REPOSITION (which would switch to GUIDED)
    and position setpoints need a signature like every other command."""
    sim, owner, stranger, _ = signed_boat
    guided = 15
    assert owner.connect() is not None, sim.output()
    assert stranger.connect() is not None
    point = (HOME[0] + 8.0 / M_PER_DEG_LAT, HOME[1])
    ack = stranger.command(M.MAV_CMD_DO_REPOSITION, -1, M.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE, 0, math.nan,
                           *point, 0)
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    stranger.mav.set_position_target_global_int_send(0, 1, 1, M.MAV_FRAME_GLOBAL_INT, 0xDF8,
                                                     int(point[0] * 1e7), int(point[1] * 1e7), 0,
                                                     0, 0, 0, 0, 0, 0, 0, 0)
    assert stranger.wait_text("unsigned SET_POSITION_TARGET_GLOBAL_INT"), stranger.texts[-5:]
    owner.poll(1.0)
    assert owner.mode() == HOLD
    ack = owner.command(M.MAV_CMD_DO_REPOSITION, -1, M.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE, 0, math.nan, *point, 0)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, owner.texts[-5:]
    assert owner.until(lambda: owner.mode() == guided, 10.0)
