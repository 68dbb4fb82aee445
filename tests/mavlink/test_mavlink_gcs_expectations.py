"""What MAVSDK, QGroundControl and ArduPilot users expect of the boat's ground-station link, seen from a real
pymavlink ground station against `autopilot sim --mavlink udpout:... --realtime` (tests/support/mavlink_gcs.py):
mission progress (MISSION_ITEM_REACHED, MISSION_CURRENT's mission_state), clearing the mission, AUTOPILOT_VERSION,
REQUEST_MESSAGE, and status texts a ground station can show (one per refusal, no local paths)."""
from __future__ import annotations

import time

import pytest

from tests.support.mavlink_gcs import DATA, Gcs, M, SimBoat, free_udp_port, read_wpl

HOLD, AUTO = 4, 10
HOME_ITEM = (0, 16, 0, 0, 0, 0, 51.1099101, 17.0598572, 0)


@pytest.fixture
def boat(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port, "--params", str(tmp_path / "boat.params.yaml"))
    yield sim, gcs, tmp_path
    gcs.close()
    sim.stop()


def _collect(gcs: Gcs, kind: str, seconds: float) -> list:
    """Every message of `kind` that arrives within `seconds` (the GCS keeps only the newest of each)."""
    out = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gcs._beat()
        msg = gcs.conn.recv_match(blocking=True, timeout=0.05)
        if msg is not None:
            gcs._keep(msg)
            if msg.get_type() == kind:
                out.append(msg)
    return out


def test_a_flown_mission_reports_each_item_reached_and_its_state_before_during_and_after(boat):
    sim, gcs, _ = boat
    gcs.connect()
    items = read_wpl(DATA / "mavlink_pond.waypoints")        # home, a speed item, waypoints at items 2 and 3
    ack = gcs.upload(items)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    cur = gcs.wait("MISSION_CURRENT", timeout=5.0)
    assert cur is not None and cur.mission_state == M.MISSION_STATE_NOT_STARTED, cur
    assert cur.total == 3 and cur.mission_mode == 2, cur            # home is not counted; not in AUTO
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    assert gcs.wait("MISSION_CURRENT", lambda m: m.mission_state == M.MISSION_STATE_ACTIVE and m.mission_mode == 1,
                    timeout=10.0), gcs.texts[-5:]
    reached = [m.seq for m in _until_text(gcs, "mission complete", 90.0) if m.get_type() == "MISSION_ITEM_REACHED"]
    assert reached == [2, 3], (reached, gcs.texts[-5:])             # the ground station's numbering, each once
    done = gcs.wait("MISSION_CURRENT", lambda m: m.mission_state == M.MISSION_STATE_COMPLETE, timeout=5.0)
    assert done is not None and done.seq == 3, done


def _until_text(gcs: Gcs, fragment: str, timeout: float) -> list:
    """Every message until a STATUSTEXT containing `fragment` arrives (or the timeout)."""
    out = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        gcs._beat()
        msg = gcs.conn.recv_match(blocking=True, timeout=0.05)
        if msg is None:
            continue
        gcs._keep(msg)
        out.append(msg)
        if any(fragment in t for t in gcs.texts):
            break
    return out


def test_clearing_the_mission_is_accepted_and_leaves_nothing_to_fly(boat):
    sim, gcs, _ = boat
    gcs.connect()
    tgt = (gcs.conn.target_system, gcs.conn.target_component)
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.mode() == AUTO, 5.0)
    gcs.mav.mission_clear_all_send(*tgt, M.MAV_MISSION_TYPE_MISSION)
    ack = gcs.wait("MISSION_ACK", lambda m: m.mission_type == M.MAV_MISSION_TYPE_MISSION, timeout=10.0)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    assert gcs.until(lambda: gcs.mode() == HOLD, 5.0), gcs.texts[-3:]      # in AUTO it holds
    back = gcs.download()
    assert back is not None and len(back) == 1 and back[0][1] == M.MAV_CMD_NAV_WAYPOINT, back   # home alone
    assert gcs.wait("MISSION_CURRENT", lambda m: m.mission_state == M.MISSION_STATE_NO_MISSION and m.total == 0,
                    timeout=5.0), gcs.texts[-3:]
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_DENIED                # nothing to fly
    assert gcs.wait_text("no mission"), gcs.texts[-3:]

    # a mission uploaded again flies; an upload of home alone (what QGC sends for an empty plan) clears it
    assert gcs.upload(read_wpl(DATA / "mavlink_pond.waypoints")).type == M.MAV_MISSION_ACCEPTED
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
    ack = gcs.upload([HOME_ITEM])
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    assert gcs.until(lambda: gcs.mode() == HOLD, 5.0), gcs.texts[-3:]
    back = gcs.download()
    assert back is not None and len(back) == 1 and back[0][6:8] == pytest.approx(HOME_ITEM[6:8], abs=1e-7), back
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_DENIED
