"""MAV_CMD_DO_MOTOR_TEST, MAV_CMD_MISSION_START and MAV_CMD_DO_CHANGE_SPEED from a pymavlink ground station
against one `autopilot sim --mavlink udpout:... --realtime` process (tests/support/mavlink_gcs.py), in order: the
motor test on the disarmed boat (ArduPilot's params: motor instance, throttle type, throttle, timeout), then a
speed change while an uploaded mission flies."""
from __future__ import annotations

import math
import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

WALL_TIME_S = 40.0
AUTO = 10
HOME = (51.1099101, 17.0598572)          # tests/data/mavlink_pond.yaml's launch point (its cruise: 1.0 m/s)
NEUTRAL_US, RIGHT_15_US = 1500, 1560     # foka's thrusters: 1100..1500..1900 us; the right one at +15 %


@pytest.fixture(scope="module")
def boat(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("speed-motor")
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp, port)
    try:
        gcs.connect()
        yield sim, gcs
    finally:
        gcs.close()
        sim.stop()
        assert "Traceback" not in sim.out_path.read_text()


def _motor_test(gcs: Gcs, instance: float, kind: float, value: float, timeout_s: float):
    return gcs.command(M.MAV_CMD_DO_MOTOR_TEST, instance, kind, value, timeout_s, 0, 0)


def _servos(gcs: Gcs, until, timeout: float) -> list:
    """(boat time [s], servo1, servo2) of each SERVO_OUTPUT_RAW until `until(servo1, servo2)` holds."""
    out = []
    msg = gcs.wait("SERVO_OUTPUT_RAW", lambda m: out.append((m.time_usec / 1e6, m.servo1_raw, m.servo2_raw)) is None
                   and until(m.servo1_raw, m.servo2_raw), timeout)
    assert msg is not None, f"SERVO_OUTPUT_RAW never showed it within {timeout} s: {out[-5:]}"
    return out


def test_the_motor_test_turns_one_thruster_at_the_asked_throttle_for_its_timeout_then_neutral(boat):
    sim, gcs = boat
    ack = gcs.command(M.MAV_CMD_SET_MESSAGE_INTERVAL, M.MAVLINK_MSG_ID_SERVO_OUTPUT_RAW, 50_000)   # 20 Hz
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    # the second thruster (right) at +15 % for 2 s; the ESCs' arming time comes first
    assert gcs.until(lambda: _motor_test(gcs, 2, M.MOTOR_TEST_THROTTLE_PERCENT, 15, 2.0).result
                     == M.MAV_RESULT_ACCEPTED, 30.0), gcs.texts[-3:]
    _servos(gcs, lambda s1, s2: s2 == RIGHT_15_US, 5.0)
    during = _servos(gcs, lambda s1, s2: s2 == NEUTRAL_US, 10.0)           # its timeout brings it back
    running = [t for t, _, s2 in during if s2 == RIGHT_15_US]
    assert all(s1 == NEUTRAL_US for _, s1, _ in during)                    # the other thruster stays neutral
    # on the boat's clock: the 2 s asked for, not the half second of a hold-to-run button's renewal
    assert running and running[-1] - running[0] >= 1.2, during


@pytest.mark.parametrize("params, reason", [
    ((2, M.MOTOR_TEST_THROTTLE_PERCENT, 30, 1.0), "20%"),                 # beyond the bench limit
    ((3, M.MOTOR_TEST_THROTTLE_PERCENT, 10, 1.0), "no thruster"),         # foka has two
    ((1, M.MOTOR_TEST_THROTTLE_PWM, 1600, 1.0), "percent"),               # a pulse width is not taken
    ((1, M.MOTOR_TEST_THROTTLE_PERCENT, 10, 60.0), "test time"),          # longer than a bench test runs
])
def test_a_motor_test_beyond_its_limits_is_denied_with_the_reason_and_nothing_turns(boat, params, reason):
    sim, gcs = boat
    gcs.texts.clear()
    ack = _motor_test(gcs, *params)
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert gcs.wait_text(reason, 5.0), gcs.texts
    seen = []
    gcs.wait("SERVO_OUTPUT_RAW", lambda m: seen.append((m.servo1_raw, m.servo2_raw)) is None and len(seen) >= 10,
             3.0)
    assert seen and all(s == (NEUTRAL_US, NEUTRAL_US) for s in seen), seen


def _offset(north_m: float, east_m: float) -> tuple:
    lat0, lon0 = HOME
    return lat0 + north_m / 111_320.0, lon0 + east_m / (111_320.0 * math.cos(math.radians(lat0)))


def _ground_speed_mps(gcs: Gcs, seconds: float) -> float:
    """The mean VFR_HUD ground speed [m/s] over the next `seconds`."""
    speeds: list = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hud = gcs.wait("VFR_HUD", timeout=max(0.1, end - time.monotonic()))
        if hud is not None:
            speeds.append(hud.groundspeed)
    assert speeds, "no VFR_HUD"
    return sum(speeds) / len(speeds)


def test_a_speed_change_makes_the_mission_fly_at_it_on_the_same_leg(boat):
    sim, gcs = boat
    upload = [(0, 16, 0, 0, 0, 0, *HOME, 0), (3, 16, 0, 0, 0, 0, *_offset(0.0, 90.0), 0)]
    upload.append((3, 16, 0, 0, 0, 0, *_offset(0.0, 110.0), 0))
    ack = gcs.upload(upload)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-3:]
    # a part of the mission (items 2 to 2) is not flown, as on Rover: denied with the reason, still HOLD
    gcs.texts.clear()
    ack = gcs.command(M.MAV_CMD_MISSION_START, 2, 2)
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert gcs.wait_text("whole mission", 5.0) and gcs.mode() == 4, gcs.texts
    # armed, the motor test is refused and the boat does not move for it
    ack = gcs.command(M.MAV_CMD_MISSION_START, 0, 0)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED
    assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
    ack = _motor_test(gcs, 1, M.MOTOR_TEST_THROTTLE_PERCENT, 10, 1.0)
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert gcs.wait_text("only while disarmed", 5.0), gcs.texts[-3:]
    gcs.poll(10.0)                                                       # up to the mission's 1.0 m/s
    before = _ground_speed_mps(gcs, 4.0)
    ack = gcs.command(M.MAV_CMD_DO_CHANGE_SPEED, 1, 1.6, -1)
    assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, gcs.texts[-3:]
    assert gcs.until(lambda: gcs.last["VFR_HUD"].groundspeed > 1.45, 30.0), (gcs.last["VFR_HUD"], gcs.texts[-4:])
    after = _ground_speed_mps(gcs, 4.0)
    assert before == pytest.approx(1.0, abs=0.2) and after == pytest.approx(1.6, abs=0.2), (before, after,
                                                                                           gcs.texts[-4:])
    cur = gcs.wait("MISSION_CURRENT", timeout=5.0)
    nav = gcs.wait("NAV_CONTROLLER_OUTPUT", timeout=5.0)
    assert cur is not None and cur.seq == 1, cur                         # still the first leg, 90 m east
    assert nav is not None and 60 <= nav.target_bearing <= 120, nav
    assert gcs.params()["CRUISE_SPEED"] == pytest.approx(1.6)           # what a ground station reads back
    # faster than the hull: denied with the reason, and the boat flies on at 1.6 m/s
    gcs.texts.clear()
    ack = gcs.command(M.MAV_CMD_DO_CHANGE_SPEED, 1, 5.0, -1)
    assert ack is not None and ack.result == M.MAV_RESULT_DENIED
    assert gcs.wait_text("faster than", 5.0), gcs.texts
    assert _ground_speed_mps(gcs, 3.0) == pytest.approx(1.6, abs=0.2)
