"""Health and home before arming, as MAVSDK, QGroundControl and ArduPilot users expect: pymavlink's mavutil as
the ground station over real UDP against `autopilot sim --mavlink udpout:... --realtime` (tests/support/
mavlink_gcs.py). ArduPilot reports its sensors and EKF from power-on, sets home at the first good position, moves
it to where the vehicle arms, and keeps a home a ground station set (MAV_CMD_DO_SET_HOME) where it was put.

Real time: each test runs the 20 m pond (tests/data/mavlink_pond.yaml: launch point, one waypoint 12 m north)
for up to a minute or two of wall clock."""
from __future__ import annotations

import math

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

HOLD, LOITER, AUTO, RTL = 4, 5, 10, 11
LAUNCH = (51.1099101, 17.0598572)          # the pond's start point
WAYPOINT = (51.1100180, 17.0598572)        # its one waypoint, 12 m north; also the mission frame's origin
SENSORS = (M.MAV_SYS_STATUS_SENSOR_3D_GYRO | M.MAV_SYS_STATUS_SENSOR_3D_ACCEL | M.MAV_SYS_STATUS_SENSOR_3D_MAG
           | M.MAV_SYS_STATUS_SENSOR_GPS | M.MAV_SYS_STATUS_AHRS)
EKF_OK = (M.EKF_ATTITUDE | M.EKF_VELOCITY_HORIZ | M.EKF_POS_HORIZ_REL | M.EKF_POS_HORIZ_ABS)


def _distance_m(lat1, lon1, lat2, lon2) -> float:
    dn = (lat2 - lat1) * 111195.0
    de = (lon2 - lon1) * 111195.0 * math.cos(math.radians(lat1))
    return math.hypot(dn, de)


def _offset(north_m: float, east_m: float) -> tuple:
    lat0, lon0 = LAUNCH
    return lat0 + north_m / 111195.0, lon0 + east_m / (111195.0 * math.cos(math.radians(lat0)))


def _home(msg) -> tuple:
    return msg.latitude / 1e7, msg.longitude / 1e7


def _position(gcs) -> tuple:
    pos = gcs.last["GLOBAL_POSITION_INT"]
    return pos.lat / 1e7, pos.lon / 1e7


def _armed(gcs) -> bool:
    return bool(gcs.last["HEARTBEAT"].base_mode & M.MAV_MODE_FLAG_SAFETY_ARMED)


def _arm(gcs, mode: int) -> None:
    assert gcs.set_mode(mode).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    assert gcs.until(lambda: _armed(gcs), 5.0)


@pytest.fixture
def boat(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port)
    yield sim, gcs
    gcs.close()
    sim.stop()


def test_before_arming_the_sensors_and_estimator_are_healthy_home_is_the_launch_point_and_the_origin_is_sent(
        boat):
    sim, gcs = boat
    gcs.connect()
    # SYS_STATUS: gyro, accelerometer, magnetometer, GNSS and AHRS present, enabled and healthy, disarmed
    status = gcs.wait("SYS_STATUS", lambda m: m.onboard_control_sensors_health & SENSORS == SENSORS, 40.0)
    assert status is not None, (gcs.last.get("SYS_STATUS"), sim.output()[-2000:])
    assert status.onboard_control_sensors_present & SENSORS == SENSORS
    assert status.onboard_control_sensors_enabled & SENSORS == SENSORS
    assert not _armed(gcs)
    # EKF_STATUS_REPORT: attitude, horizontal velocity, relative and absolute horizontal position good
    ekf = gcs.wait("EKF_STATUS_REPORT", lambda m: m.flags & EKF_OK == EKF_OK, 10.0)
    assert ekf is not None, gcs.last.get("EKF_STATUS_REPORT")
    assert not ekf.flags & M.EKF_UNINITIALIZED
    # HOME_POSITION comes without being asked for, at the launch point
    home = gcs.last.get("HOME_POSITION") or gcs.wait("HOME_POSITION", timeout=10.0)
    assert home is not None, "no HOME_POSITION before arming"
    assert _distance_m(*_home(home), *LAUNCH) < 3.0, _home(home)
    assert not _armed(gcs)
    # and REQUEST_MESSAGE(HOME_POSITION) is answered with one (its stream stopped: this one is the answer)
    assert gcs.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_HOME_POSITION, -1).result == \
        M.MAV_RESULT_ACCEPTED
    gcs.poll(0.5)
    gcs.last.pop("HOME_POSITION", None)
    assert gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_HOME_POSITION).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: "HOME_POSITION" in gcs.last, 3.0)
    assert _distance_m(*_home(gcs.last["HOME_POSITION"]), *LAUNCH) < 3.0
    # GPS_GLOBAL_ORIGIN: the local frame's origin (the mission's first waypoint), sent unasked and on request
    origin = gcs.last.get("GPS_GLOBAL_ORIGIN") or gcs.wait("GPS_GLOBAL_ORIGIN", timeout=10.0)
    assert origin is not None, "no GPS_GLOBAL_ORIGIN"
    assert (origin.latitude, origin.longitude) == (round(WAYPOINT[0] * 1e7), round(WAYPOINT[1] * 1e7))
    gcs.last.pop("GPS_GLOBAL_ORIGIN")
    assert gcs.command(M.MAV_CMD_REQUEST_MESSAGE, M.MAVLINK_MSG_ID_GPS_GLOBAL_ORIGIN).result == \
        M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: "GPS_GLOBAL_ORIGIN" in gcs.last, 3.0)
    # the pre-arm checks still decide: arming in AUTO is accepted only once they pass, and the boat then flies
    _arm(gcs, AUTO)
    assert gcs.wait("NAV_CONTROLLER_OUTPUT", timeout=10.0) is not None


def test_arming_moves_home_to_where_the_boat_armed(boat):
    sim, gcs = boat
    gcs.connect()
    home = gcs.wait("HOME_POSITION", timeout=40.0)
    assert home is not None and _distance_m(*_home(home), *LAUNCH) < 3.0
    _arm(gcs, AUTO)                                   # at the launch point: home stays there
    assert gcs.wait_text("mission complete", timeout=90.0), gcs.texts[-5:]
    assert gcs.until(lambda: _distance_m(*_position(gcs), *WAYPOINT) < 3.0, 20.0), _position(gcs)
    assert _distance_m(*_home(gcs.last["HOME_POSITION"]), *LAUNCH) < 3.0
    assert gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: not _armed(gcs), 5.0)
    gcs.poll(1.5)
    assert _distance_m(*_home(gcs.last["HOME_POSITION"]), *LAUNCH) < 3.0      # disarming leaves it
    here = _position(gcs)
    _arm(gcs, HOLD)                                   # 12 m north: home moves here, and is sent at once
    moved = gcs.wait("HOME_POSITION", lambda m: _distance_m(*_home(m), *LAUNCH) > 8.0, timeout=3.0)
    assert moved is not None, _home(gcs.last["HOME_POSITION"])
    assert _distance_m(*_home(moved), *here) < 2.0 and _distance_m(*_home(moved), *WAYPOINT) < 3.0
    assert moved.x == pytest.approx(0.0, abs=3.0)     # local NED: the origin is the waypoint


def test_do_set_home_moves_home_and_rtl_goes_to_the_new_home(boat):
    sim, gcs = boat
    gcs.connect()
    assert gcs.wait("HOME_POSITION", timeout=40.0) is not None
    # a home set before arming (param1=0, a position) is kept when the boat arms elsewhere
    east = _offset(0.0, 10.0)
    assert gcs.command(M.MAV_CMD_DO_SET_HOME, 0, 0, 0, 0, *east).result == M.MAV_RESULT_ACCEPTED
    assert gcs.wait("HOME_POSITION", lambda m: _distance_m(*_home(m), *east) < 0.5, timeout=3.0)
    _arm(gcs, AUTO)
    gcs.poll(1.5)
    assert _distance_m(*_home(gcs.last["HOME_POSITION"]), *east) < 0.5
    # param1=1 on the way north: home is where the boat is then
    assert gcs.until(lambda: _distance_m(*_position(gcs), *LAUNCH) > 5.0, 40.0), _position(gcs)
    assert gcs.command(M.MAV_CMD_DO_SET_HOME, 1).result == M.MAV_RESULT_ACCEPTED
    there = _position(gcs)
    mid = gcs.wait("HOME_POSITION", lambda m: _distance_m(*_home(m), *east) > 5.0, timeout=3.0)
    assert mid is not None and _distance_m(*_home(mid), *there) < 2.0, (_home(gcs.last["HOME_POSITION"]), there)
    middle = _home(mid)
    # at the waypoint, RTL goes back to it: "home reached" and LOITER there, not at the launch point
    assert gcs.wait_text("mission complete", timeout=60.0), gcs.texts[-5:]
    assert gcs.set_mode(RTL).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.mode() == LOITER, 60.0), gcs.texts[-5:]
    gcs.poll(2.0)
    assert _distance_m(*_position(gcs), *middle) < 3.0, (_position(gcs), middle)
    assert _distance_m(*_position(gcs), *LAUNCH) > _distance_m(*_position(gcs), *middle)
    # param1=0 again, 10 m east of the launch point: RTL goes there
    assert gcs.command(M.MAV_CMD_DO_SET_HOME, 0, 0, 0, 0, *east).result == M.MAV_RESULT_ACCEPTED
    assert gcs.set_mode(RTL).result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.mode() == RTL, 5.0)
    assert gcs.until(lambda: gcs.mode() == LOITER, 60.0), gcs.texts[-5:]
    gcs.poll(2.0)
    assert _distance_m(*_position(gcs), *east) < 3.0, (_position(gcs), east)
