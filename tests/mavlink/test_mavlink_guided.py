"""A companion computer or ground station steers the simulated boat in GUIDED (Rover's custom mode 15): QGC's "Go
to location" (MAV_CMD_DO_REPOSITION), MAVROS/MAVSDK setpoints (SET_POSITION_TARGET_GLOBAL_INT and _LOCAL_NED),
from pymavlink's mavutil over real UDP on 127.0.0.1 against `autopilot sim --mavlink ... --realtime` in its own
process, on a plant unlike its vessel file in wind and current."""
from __future__ import annotations

import math
import time

import pytest

from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

GUIDED, HOLD = 15, 4
START = (51.1099101, 17.0598572)            # tests/data/mavlink_pond.yaml's launch point
ACCEPT_M = 2.0                              # ... and its acceptance radius
NEUTRAL_US = (1500, 1500)                   # foka's thrusters' neutral pulses (config/vessels/foka.yaml)
M_PER_DEG_LAT = 111_320.0
ROUGH = ("--wind", "3,60", "--current", "0.15,200", "--mismatch", "damping=0.7,thrust=0.85,iz=1.3")
POS_ONLY = 0xFFF & ~(M.POSITION_TARGET_TYPEMASK_X_IGNORE | M.POSITION_TARGET_TYPEMASK_Y_IGNORE
                     | M.POSITION_TARGET_TYPEMASK_Z_IGNORE)
VEL_ONLY = 0xFFF & ~(M.POSITION_TARGET_TYPEMASK_VX_IGNORE | M.POSITION_TARGET_TYPEMASK_VY_IGNORE
                     | M.POSITION_TARGET_TYPEMASK_VZ_IGNORE)


def _offset(north_m, east_m):
    lat, lon = START
    return (lat + north_m / M_PER_DEG_LAT, lon + east_m / (M_PER_DEG_LAT * math.cos(math.radians(lat))))


def _distance_m(pos, lat, lon):
    dn = (pos.lat / 1e7 - lat) * M_PER_DEG_LAT
    de = (pos.lon / 1e7 - lon) * M_PER_DEG_LAT * math.cos(math.radians(lat))
    return math.hypot(dn, de)


def _reposition_int(gcs, lat, lon, flags, speed=-1.0, frame=M.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT):
    gcs.mav.command_int_send(gcs.conn.target_system, gcs.conn.target_component, frame, M.MAV_CMD_DO_REPOSITION,
                             0, 0, speed, flags, 0, math.nan, int(round(lat * 1e7)), int(round(lon * 1e7)), 0.0)
    return gcs.wait("COMMAND_ACK", lambda m: m.command == M.MAV_CMD_DO_REPOSITION, 10.0)


def _closest_within(gcs, lat, lon, seconds):
    """The closest the boat's reported position came to (lat, lon) within `seconds` [m]."""
    best, end = math.inf, time.monotonic() + seconds
    while time.monotonic() < end:
        pos = gcs.wait("GLOBAL_POSITION_INT", timeout=1.0)
        if pos is not None:
            best = min(best, _distance_m(pos, lat, lon))
            if best <= ACCEPT_M and gcs.wait_text("reached", 0.1):
                return best
    return best


def test_do_reposition_switches_to_guided_goes_to_the_point_and_keeps_station(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port, *ROUGH)
    try:
        gcs.connect()
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), gcs.texts[-5:]   # in HOLD
        target = _offset(0.0, 14.0)
        # outside GUIDED without the change-mode flag: denied, as Rover does, with the reason
        assert _reposition_int(gcs, *target, 0).result == M.MAV_RESULT_DENIED
        assert gcs.wait_text("MAV_DO_REPOSITION_FLAGS_CHANGE_MODE"), gcs.texts[-5:]
        assert gcs.mode() == HOLD
        # not a position: denied, and the boat stays where it is
        assert _reposition_int(gcs, 0.0, 0.0, M.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE).result == M.MAV_RESULT_DENIED
        ack = _reposition_int(gcs, *target, M.MAV_DO_REPOSITION_FLAGS_CHANGE_MODE)
        assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, gcs.texts[-5:]
        assert gcs.until(lambda: gcs.mode() == GUIDED, 10.0)
        assert gcs.conn.flightmode == "GUIDED"                    # pymavlink names it from the Rover table
        assert _closest_within(gcs, *target, 60.0) <= ACCEPT_M, gcs.texts[-5:]
        assert gcs.wait_text("reached", 5.0), gcs.texts[-5:]
        # it keeps station there, in the wind and the current
        worst, end = 0.0, time.monotonic() + 10.0
        while time.monotonic() < end:
            pos = gcs.wait("GLOBAL_POSITION_INT", timeout=1.0)
            if pos is not None:
                worst = max(worst, _distance_m(pos, *target))
        assert worst < 2.0 * ACCEPT_M + 1.0, worst
        # COMMAND_LONG in GUIDED (no flag needed there): a second point, 8 m north of the first
        second = _offset(8.0, 14.0)
        ack = gcs.command(M.MAV_CMD_DO_REPOSITION, -1.0, 0, 0, math.nan, second[0], second[1], 0.0)
        assert ack is not None and ack.result == M.MAV_RESULT_ACCEPTED, gcs.texts[-5:]
        gcs.texts.clear()
        assert _closest_within(gcs, *second, 45.0) <= ACCEPT_M, gcs.texts[-5:]
        assert gcs.mode() == GUIDED
    finally:
        gcs.close()
        sim.stop()
    assert "Traceback" not in sim.out_path.read_text()


def test_position_and_velocity_setpoints_in_guided_as_rover_reads_their_masks(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port, *ROUGH)
    tgt = None
    try:
        gcs.connect()
        tgt = (gcs.conn.target_system, gcs.conn.target_component)
        # outside GUIDED a setpoint is refused once, with the reason (not per message)
        for _ in range(5):
            gcs.mav.set_position_target_global_int_send(0, *tgt, M.MAV_FRAME_GLOBAL_INT, POS_ONLY,
                                                        *[int(round(x * 1e7)) for x in _offset(10.0, 0.0)],
                                                        0, 0, 0, 0, 0, 0, 0, 0, 0)
            gcs.poll(0.05)
        assert gcs.wait_text("not GUIDED"), gcs.texts[-5:]
        assert sum("not GUIDED" in t for t in gcs.texts) == 1
        assert gcs.set_mode(GUIDED).result == M.MAV_RESULT_ACCEPTED
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), gcs.texts[-5:]
        assert gcs.until(lambda: gcs.mode() == GUIDED, 10.0)
        # an acceleration target and an unknown frame are refused with the reason; NaN positions too
        acc_used = POS_ONLY & ~(M.POSITION_TARGET_TYPEMASK_AX_IGNORE | M.POSITION_TARGET_TYPEMASK_AY_IGNORE
                                | M.POSITION_TARGET_TYPEMASK_AZ_IGNORE)
        gcs.mav.set_position_target_local_ned_send(0, *tgt, M.MAV_FRAME_LOCAL_NED, acc_used, 5, 0, 0, 0, 0, 0,
                                                   0.1, 0, 0, 0, 0)
        assert gcs.wait_text("acceleration"), gcs.texts[-5:]
        gcs.mav.set_position_target_local_ned_send(0, *tgt, M.MAV_FRAME_GLOBAL_INT, POS_ONLY, 5, 0, 0, 0, 0, 0,
                                                   0, 0, 0, 0, 0)
        assert gcs.wait_text("is not one of LOCAL_NED"), gcs.texts[-5:]
        gcs.mav.set_position_target_local_ned_send(0, *tgt, M.MAV_FRAME_LOCAL_OFFSET_NED, POS_ONLY, math.nan, 0,
                                                   0, 0, 0, 0, 0, 0, 0, 0, 0)
        assert gcs.wait_text("finite"), gcs.texts[-5:]
        # position only, streamed at 5 Hz as MAVROS does: 12 m north of the launch point
        target = _offset(12.0, 0.0)
        best, end = math.inf, time.monotonic() + 60.0
        while time.monotonic() < end and best > ACCEPT_M:
            gcs.mav.set_position_target_global_int_send(0, *tgt, M.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, POS_ONLY,
                                                        *[int(round(x * 1e7)) for x in target], 0,
                                                        0, 0, 0, 0, 0, 0, 0, 0)
            pos = gcs.wait("GLOBAL_POSITION_INT", timeout=0.2)
            if pos is not None:
                best = min(best, _distance_m(pos, *target))
        assert best <= ACCEPT_M, (best, gcs.texts[-5:])
        assert sum("GUIDED target" in t and "accepted" in t for t in gcs.texts) == 1, gcs.texts[-8:]
        # velocity only in LOCAL_NED: 0.7 m/s due east over ground, for 12 s
        east_v, driven, end = [], [], time.monotonic() + 12.0
        while time.monotonic() < end:
            gcs.mav.set_position_target_local_ned_send(0, *tgt, M.MAV_FRAME_LOCAL_NED, VEL_ONLY, 0, 0, 0,
                                                       0.0, 0.7, 0, 0, 0, 0, 0, 0)
            pos = gcs.wait("GLOBAL_POSITION_INT", timeout=0.2)
            if pos is not None and end - time.monotonic() < 5.0:
                east_v.append((pos.vx / 100.0, pos.vy / 100.0))
                servo = gcs.last.get("SERVO_OUTPUT_RAW")
                driven.append(servo is not None and (servo.servo1_raw, servo.servo2_raw) != NEUTRAL_US)
        assert east_v
        vn = sum(v[0] for v in east_v) / len(east_v)
        ve = sum(v[1] for v in east_v) / len(east_v)
        assert abs(ve - 0.7) < 0.2 and abs(vn) < 0.2, (vn, ve)
        # the stream stops: neutral after the velocity timeout, and the boat says so
        assert any(driven)
        assert gcs.wait_text("no GUIDED velocity command", 5.0), gcs.texts[-5:]
        gcs.poll(0.5)
        servo = gcs.wait("SERVO_OUTPUT_RAW", timeout=3.0)
        assert servo is not None and (servo.servo1_raw, servo.servo2_raw) == NEUTRAL_US, servo
    finally:
        gcs.close()
        sim.stop()
    assert "Traceback" not in sim.out_path.read_text()
