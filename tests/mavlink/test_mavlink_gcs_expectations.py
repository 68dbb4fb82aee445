"""What MAVSDK, QGroundControl and ArduPilot users expect of the boat's ground-station link, seen from a real
pymavlink ground station against `autopilot sim --mavlink udpout:... --realtime` (tests/support/mavlink_gcs.py):
mission progress (MISSION_ITEM_REACHED, MISSION_CURRENT's mission_state), clearing the mission, AUTOPILOT_VERSION,
REQUEST_MESSAGE, and status texts a ground station can show (one per refusal, no local paths)."""
from __future__ import annotations

import time
from importlib.metadata import version

import pytest

from tests.support.mavlink_gcs import DATA, REPO, Gcs, M, SimBoat, free_udp_port, read_wpl

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

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


def test_autopilot_version_and_request_message_say_what_the_boat_is_and_sends(boat):
    sim, gcs, _ = boat
    gcs.connect()
    ack = gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_AUTOPILOT_VERSION)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    av = gcs.last.get("AUTOPILOT_VERSION") or gcs.wait("AUTOPILOT_VERSION", timeout=5.0)
    assert av is not None
    major, minor, patch = (int(x) for x in version("boat-autopilot").split(".")[:3])
    assert av.flight_sw_version >> 8 == major << 16 | minor << 8 | patch, hex(av.flight_sw_version)
    assert av.flight_sw_version & 0xFF in (M.FIRMWARE_VERSION_TYPE_OFFICIAL, M.FIRMWARE_VERSION_TYPE_DEV,
                                           M.FIRMWARE_VERSION_TYPE_ALPHA, M.FIRMWARE_VERSION_TYPE_BETA,
                                           M.FIRMWARE_VERSION_TYPE_RC)
    # GUIDED takes position targets in local and global frames (SET_POSITION_TARGET_LOCAL_NED, _GLOBAL_INT)
    for cap in ("MISSION_INT", "MISSION_FLOAT", "PARAM_FLOAT", "MAVLINK2", "COMMAND_INT", "MISSION_FENCE",
                "MISSION_RALLY", "SET_POSITION_TARGET_LOCAL_NED", "SET_POSITION_TARGET_GLOBAL_INT"):
        assert av.capabilities & getattr(M, f"MAV_PROTOCOL_CAPABILITY_{cap}"), cap
    for cap in ("SET_ATTITUDE_TARGET", "FTP", "TERRAIN"):
        assert not av.capabilities & getattr(M, f"MAV_PROTOCOL_CAPABILITY_{cap}"), cap

    # a message it does not send: UNSUPPORTED, and nothing arrives
    ack = gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_WIND_COV)
    assert ack is not None and ack.result == M.MAV_RESULT_UNSUPPORTED
    # one it sends, with its stream stopped: ACCEPTED, and it comes exactly once
    ack = gcs.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_VFR_HUD, -1)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    _collect(gcs, "VFR_HUD", 1.0)
    assert _collect(gcs, "VFR_HUD", 1.5) == []                              # the stream is off
    gcs.last.pop("VFR_HUD", None)
    ack = gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_VFR_HUD)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    before_ack = int("VFR_HUD" in gcs.last)                              # it may overtake the COMMAND_ACK
    assert before_ack + len(_collect(gcs, "VFR_HUD", 2.0)) == 1


def test_extended_sys_state_says_the_boat_is_not_under_way_until_armed(boat):
    """MAVSDK's in_air and QGC's flight timer read EXTENDED_SYS_STATE's landed state: ON_GROUND disarmed,
    IN_AIR once armed (a boat has no landing); a streamed message, so it also comes on request."""
    sim, gcs, _ = boat
    gcs.connect()
    ess = gcs.wait("EXTENDED_SYS_STATE", timeout=5.0)
    assert ess is not None and ess.vtol_state == M.MAV_VTOL_STATE_UNDEFINED
    assert ess.landed_state == M.MAV_LANDED_STATE_ON_GROUND
    assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    assert gcs.wait("EXTENDED_SYS_STATE", lambda m: m.landed_state == M.MAV_LANDED_STATE_IN_AIR, timeout=5.0)
    ack = gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_EXTENDED_SYS_STATE)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0)
    assert gcs.wait("EXTENDED_SYS_STATE", lambda m: m.landed_state == M.MAV_LANDED_STATE_ON_GROUND, timeout=5.0)


def test_a_refused_parameter_is_said_once_a_second_and_status_texts_carry_no_local_paths(boat):
    sim, gcs, tmp = boat
    gcs.connect()
    echo = gcs.set_param("WP_RADIUS", 3.5)
    assert echo is not None and echo.param_value == pytest.approx(3.5)
    kept = gcs.wait_text("WP_RADIUS")
    assert kept and "boat.params.yaml" in kept, gcs.texts[-3:]          # where it is kept, by its name
    tgt = (gcs.conn.target_system, gcs.conn.target_component)
    for _ in range(6):                                                   # a client re-sending a refused value
        gcs.mav.param_set_send(*tgt, b"HDG_ZETA", 99.0, M.MAV_PARAM_TYPE_REAL32)
    echoes = [m for m in _collect(gcs, "PARAM_VALUE", 2.0) if m.param_id == "HDG_ZETA"]
    assert len(echoes) == 6 and all(m.param_value != pytest.approx(99.0) for m in echoes)   # each answered
    assert len([t for t in gcs.texts if "HDG_ZETA" in t]) == 1, gcs.texts
    time.sleep(1.1)
    assert gcs.set_param("HDG_ZETA", 99.0) is not None                 # a second later: said again
    assert gcs.until(lambda: len([t for t in gcs.texts if "HDG_ZETA" in t]) == 2, 3.0), gcs.texts

    # a refused mission names the vessel file's limit, not where the file lies on this machine
    too_fast = read_wpl(DATA / "mavlink_pond.waypoints") + [(3, 178, 1, 9.0, -1, 0, 0, 0, 0),
                                                            (3, 16, 0, 2, 0, 0, 51.1099101, 17.0598572, 0)]
    ack = gcs.upload(too_fast)
    assert ack is not None and ack.type != M.MAV_MISSION_ACCEPTED
    assert gcs.wait_text("item 5.speed_mps"), gcs.texts
    gcs.poll(1.0)
    leaks = [t for t in gcs.texts if str(REPO) in t or str(tmp) in t or "/home/" in t or "/tmp/" in t]
    assert not leaks, leaks
