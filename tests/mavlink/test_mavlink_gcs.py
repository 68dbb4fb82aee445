"""A ground station flies the simulated boat over MAVLink: pymavlink's mavutil as the GCS over real UDP on
127.0.0.1, against `autopilot sim --mavlink udpout:... --realtime` in its own process.

Real time: each test flies a 20 m pond for a minute or two of wall clock."""
from __future__ import annotations

import math

import pytest

from tests.support.mavlink_gcs import DATA, Gcs, M, SimBoat, free_udp_port, read_wpl

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

HOLD, LOITER, AUTO, RTL, MANUAL = 4, 5, 10, 11, 0
HOME = (51.1099101, 17.0598572)


def _distance_m(lat1, lon1, lat2, lon2) -> float:
    dn = (lat2 - lat1) * 111195.0
    de = (lon2 - lon1) * 111195.0 * math.cos(math.radians(lat1))
    return math.hypot(dn, de)


@pytest.fixture
def boat(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port, "--log", str(tmp_path / "log"))
    yield sim, gcs, tmp_path
    gcs.close()
    sim.stop()


def test_a_ground_station_uploads_a_mission_arms_when_the_checks_pass_flies_it_and_brings_the_boat_home(boat):
    sim, gcs, tmp = boat
    hb = gcs.connect()
    assert hb.type == M.MAV_TYPE_SURFACE_BOAT and hb.autopilot == M.MAV_AUTOPILOT_ARDUPILOTMEGA, sim.output()
    assert gcs.conn.flightmode == "HOLD"                      # pymavlink names it from the Rover table

    # upload a QGC WPL file; download it again: identical
    items = read_wpl(DATA / "mavlink_pond.waypoints")
    ack = gcs.upload(items)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, (gcs.texts, sim.output())
    back = gcs.download()
    assert back is not None and len(back) == len(items)
    for a, b in zip(items, back):
        assert a[:2] == b[:2] and a[2:6] == pytest.approx(b[2:6]) and a[6:8] == pytest.approx(b[6:8], abs=1e-7)
    kept = list((tmp / "log").glob("upload-*-mission.waypoints"))
    assert kept, "the upload is kept with the run's log"
    from autopilot.files.mission_files import read_mission_file
    assert len(read_mission_file(kept[0]).mission.waypoints) == 2            # and reads back as a mission

    # a mission that fails our checks is refused with MAV_MISSION_* and a STATUSTEXT naming the item
    too_fast = list(items) + [(3, 178, 1, 9.0, -1, 0, 0, 0, 0), (3, 16, 0, 2, 0, 0, 51.1099101, 17.0598572, 0)]
    ack = gcs.upload(too_fast)                                  # 9 m/s on the leg to item 5: FOKA makes 2
    assert ack is not None and ack.type != M.MAV_MISSION_ACCEPTED
    assert gcs.wait_text("item 5.speed_mps"), gcs.texts
    assert gcs.download() == back                               # the refused upload changed nothing

    # AUTO, then arm at once: refused while the navigation checks fail, with the reasons as STATUSTEXT
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
    first = gcs.arm()
    if first.result != M.MAV_RESULT_ACCEPTED:
        assert gcs.wait_text("PreArm:"), gcs.texts
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    assert gcs.until(lambda: gcs.last["HEARTBEAT"].base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED, 5.0)

    # it flies the mission to completion: MISSION_CURRENT walks the items, NAV_CONTROLLER_OUTPUT has the leg
    assert gcs.wait("MISSION_CURRENT", lambda m: m.seq == 3, timeout=60.0), gcs.texts[-5:]
    assert "NAV_CONTROLLER_OUTPUT" in gcs.last and "GLOBAL_POSITION_INT" in gcs.last
    assert gcs.wait_text("mission complete", timeout=60.0), gcs.texts[-5:]

    # RTL brings it home (then it loiters there)
    assert gcs.set_mode(RTL).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.mode() == LOITER, 60.0), gcs.texts[-5:]
    pos = gcs.last["GLOBAL_POSITION_INT"]
    assert _distance_m(pos.lat / 1e7, pos.lon / 1e7, *HOME) < 5.0
    servo = gcs.last["SERVO_OUTPUT_RAW"]
    assert 1100 <= servo.servo1_raw <= 1900 and 1100 <= servo.servo2_raw <= 1900

    # the ground station goes quiet: the link-loss failsafe fires and says so
    gcs.send_heartbeats = False
    assert gcs.wait_text("no operator heartbeat", timeout=20.0), gcs.texts[-5:]


def test_parameters_set_from_the_ground_station_read_back_survive_a_restart_and_refuse_bad_values(tmp_path):
    overlay = tmp_path / "boat.params.yaml"
    values = {}
    for run in range(2):
        port = free_udp_port()
        gcs = Gcs(port)
        sim = SimBoat(tmp_path, port, "--params", str(overlay))
        try:
            gcs.connect()
            values = gcs.params()
            assert {"CRUISE_SPEED", "HDG_ZETA", "FS_LINK_ACTION", "LOIT_RADIUS"} <= set(values), sorted(values)
            if run == 0:
                assert values["WP_RADIUS"] == pytest.approx(2.0)
                echo = gcs.set_param("WP_RADIUS", 3.5)
                assert echo is not None and echo.param_value == pytest.approx(3.5)
                echo = gcs.set_param("HDG_ZETA", 99.0)               # the vessel file's schema allows <= 3
                assert echo is not None and echo.param_value == pytest.approx(values["HDG_ZETA"])
                assert gcs.wait_text("HDG_ZETA"), gcs.texts
                assert "refused" in gcs.wait_text("HDG_ZETA")
        finally:
            gcs.close()
            sim.stop()
    assert values["WP_RADIUS"] == pytest.approx(3.5)                 # read back after the restart
    assert "WP_RADIUS" in overlay.read_text() and "HDG_ZETA" not in overlay.read_text()


def _offset(north_m: float, east_m: float) -> tuple:
    lat0, lon0 = HOME
    return lat0 + north_m / 111195.0, lon0 + east_m / (111195.0 * math.cos(math.radians(lat0)))


def test_a_parameter_change_and_a_fence_upload_keep_the_uploaded_mission_flying(boat):
    sim, gcs, _ = boat
    gcs.connect()
    # three waypoints east of the launch point (the pond's file has one, 12 m north)
    upload = [(0, 16, 0, 0, 0, 0, *HOME, 0)] + [(3, 16, 0, 0, 0, 0, *_offset(n, e), 0)
                                                 for n, e in ((0.0, 15.0), (-10.0, 25.0), (-20.0, 15.0))]
    ack = gcs.upload(upload)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    echo = gcs.set_param("WP_RADIUS", 3.0)
    assert echo is not None and echo.param_value == pytest.approx(3.0)
    fence = [(0, M.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, 4, 0, 0, 0, *_offset(n, e), 0)
             for n, e in ((40.0, -40.0), (40.0, 60.0), (-50.0, 60.0), (-50.0, -40.0))]
    ack = gcs.upload(fence, mission_type=M.MAV_MISSION_TYPE_FENCE)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    # the fence went onto the uploaded mission, not the start-up file's
    loaded = [t for t in gcs.texts if "loaded" in t]
    assert loaded and "mavlink-pond" not in loaded[-1] and "3 waypoints" in loaded[-1], loaded
    # the download is the upload's waypoints, with the new acceptance radius
    back = gcs.download()
    assert back is not None
    waypoints = [it for it in back[1:] if it[1] == M.MAV_CMD_NAV_WAYPOINT]
    assert [it[6:8] for it in waypoints] == [pytest.approx(it[6:8], abs=1e-6) for it in upload[1:]], back
    assert gcs.params()["WP_RADIUS"] == pytest.approx(3.0)
    # and the boat flies it: in AUTO it steers for the first uploaded waypoint, 15 m east
    assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    nav = gcs.wait("NAV_CONTROLLER_OUTPUT", timeout=10.0)
    assert nav is not None and 60 <= nav.target_bearing <= 120 and 10 <= nav.wp_dist <= 20, nav
    assert gcs.until(lambda: _distance_m(gcs.last["GLOBAL_POSITION_INT"].lat / 1e7,
                                         gcs.last["GLOBAL_POSITION_INT"].lon / 1e7, *_offset(0.0, 15.0)) < 4.0,
                     60.0), gcs.texts[-5:]
