"""The messages a ground station shows, encoded from a VehicleSnapshot (autopilot/mavlink/snapshot.py).

Each `encode_<name>(mav, snap)` returns one pymavlink message, or None when there is nothing true to say (no
position yet: no GLOBAL_POSITION_INT rather than a made-up one). `mav` is any link's MAVLink encoder; the
server sends the message on every link. MAVLink's own units are used on the wire: degE7, mm, cm/s, cdeg.

What a ground station reads where:
- HEARTBEAT: MAV_TYPE_SURFACE_BOAT, ArduPilot Rover's custom mode numbers (modes.py), armed flag;
- SYS_STATUS: gyro, accelerometer, magnetometer, GNSS, AHRS, motor outputs, battery and the pre-arm checks as
  present/enabled/healthy bits (QGC shows "Ready To Arm" from the pre-arm bit), the geofence (present when one
  is in force, unhealthy while its failsafe is active); pack voltage;
- GPS_RAW_INT: the receiver's latest fix as it came; GLOBAL_POSITION_INT: the estimate;
- ATTITUDE: heading and yaw rate (roll and pitch are not estimated: 0);
- VFR_HUD: surge speed as "airspeed", speed over ground, heading, throttle as % of the largest forward thrust;
- NAV_CONTROLLER_OUTPUT: desired heading, bearing and distance to the waypoint, cross-track error;
- MISSION_CURRENT, SERVO_OUTPUT_RAW (the ESC pulses), BATTERY_STATUS, EXTENDED_SYS_STATE (landed state);
- HOME_POSITION: from the first good estimate before arming, then where it armed, or where DO_SET_HOME put it;
  GPS_GLOBAL_ORIGIN: the local frame's origin, once there is an estimate (both also sent whenever they change);
- EKF_STATUS_REPORT: the estimator's innovation statistics as ArduPilot's "test ratios" (0.5 is fine, above 1
  is bad): moving-average NIS divided by four times its degrees of freedom.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, Optional

from autopilot.mavlink.modes import custom_mode
from autopilot.mavlink.pymav import mavlink
from autopilot.mavlink.snapshot import VehicleSnapshot
from autopilot.vocab.modes import ModeName

S = mavlink   # enum namespace

GYRO, ACCEL, MAG = S.MAV_SYS_STATUS_SENSOR_3D_GYRO, S.MAV_SYS_STATUS_SENSOR_3D_ACCEL, S.MAV_SYS_STATUS_SENSOR_3D_MAG
GPS, AHRS = S.MAV_SYS_STATUS_SENSOR_GPS, S.MAV_SYS_STATUS_AHRS
MOTORS, BATTERY = S.MAV_SYS_STATUS_SENSOR_MOTOR_OUTPUTS, S.MAV_SYS_STATUS_SENSOR_BATTERY
PREARM, FENCE = S.MAV_SYS_STATUS_PREARM_CHECK, S.MAV_SYS_STATUS_GEOFENCE
IMU_FRESH_S, MAG_FRESH_S, GPS_FRESH_S = 0.5, 2.0, 2.0


def time_boot_ms(snap: VehicleSnapshot) -> int:
    return max(0, int(snap.time_s * 1000.0)) & 0xFFFFFFFF


def _deg_e7(deg: float) -> int:
    return int(round(deg * 1e7))


def _cdeg_0_36000(rad: float) -> int:
    return int(round(math.degrees(rad) % 360.0 * 100.0)) % 36000


def encode_heartbeat(mav, snap: VehicleSnapshot):
    base = S.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED
    if snap.armed:
        base |= S.MAV_MODE_FLAG_SAFETY_ARMED
    if snap.mode == ModeName.MANUAL:
        base |= S.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED
    elif snap.mode in (ModeName.AUTO, ModeName.RTL, ModeName.LOITER, ModeName.GUIDED):
        base |= S.MAV_MODE_FLAG_AUTO_ENABLED | S.MAV_MODE_FLAG_GUIDED_ENABLED | S.MAV_MODE_FLAG_STABILIZE_ENABLED
    if snap.mode in (ModeName.HEADING_HOLD, ModeName.BRAKE):
        status = S.MAV_STATE_CRITICAL                  # a failsafe is flying the boat
    else:
        status = S.MAV_STATE_ACTIVE if snap.armed else S.MAV_STATE_STANDBY
    return mav.heartbeat_encode(S.MAV_TYPE_SURFACE_BOAT, S.MAV_AUTOPILOT_ARDUPILOTMEGA, base,
                                custom_mode(snap.mode), status)


def sensor_bits(snap: VehicleSnapshot) -> tuple[int, int, int]:
    """(present, enabled, healthy) SYS_STATUS bit masks."""
    h = snap.health
    present = GYRO | ACCEL | MAG | GPS | AHRS | MOTORS | BATTERY | PREARM
    healthy = 0
    if h is not None:
        if h.since_imu_s < IMU_FRESH_S:
            healthy |= GYRO | ACCEL
        if h.since_mag_s < MAG_FRESH_S:
            healthy |= MAG
        if h.since_gps_s < GPS_FRESH_S:
            healthy |= GPS
        if h.converged:
            healthy |= AHRS
    if snap.actuator_connected is not False:
        healthy |= MOTORS
    if snap.battery_v is None or snap.battery_v > snap.low_voltage_v:
        healthy |= BATTERY
    if snap.prearm_failures is not None and not snap.prearm_failures:
        healthy |= PREARM
    if snap.fence_present:
        present |= FENCE
    if not snap.fence_breached:
        healthy |= FENCE
    return present, present, healthy


def encode_sys_status(mav, snap: VehicleSnapshot, prearm_ok: Optional[bool] = None):
    present, enabled, healthy = sensor_bits(snap)
    if prearm_ok is not None:            # the last evaluated pre-arm result, carried between evaluations
        healthy = (healthy | PREARM) if prearm_ok else (healthy & ~PREARM)
    mv = 0xFFFF if snap.battery_v is None else int(round(snap.battery_v * 1000.0)) & 0xFFFF
    return mav.sys_status_encode(present, enabled, healthy, 0, mv, _centiamps(snap.battery_a), -1, 0, 0, 0, 0, 0, 0)


def _centiamps(current_a: Optional[float]) -> int:
    """MAVLink's current_battery [cA], -1 when not measured (int16: clipped to +-327.67 A)."""
    if current_a is None or not math.isfinite(current_a):
        return -1
    return max(-32767, min(32767, int(round(current_a * 100.0))))


def _fix_type(fix) -> int:
    if fix is None:
        return S.GPS_FIX_TYPE_NO_GPS
    if not fix.valid:
        return S.GPS_FIX_TYPE_NO_FIX
    return {2: S.GPS_FIX_TYPE_DGPS, 4: S.GPS_FIX_TYPE_RTK_FIXED, 5: S.GPS_FIX_TYPE_RTK_FLOAT}.get(
        fix.fix_quality, S.GPS_FIX_TYPE_3D_FIX)


def encode_gps_raw_int(mav, snap: VehicleSnapshot):
    fix = snap.fix
    if fix is None:
        return mav.gps_raw_int_encode(0, S.GPS_FIX_TYPE_NO_GPS, 0, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0)
    ok = fix.valid
    vel = 0xFFFF if fix.sog_mps is None else min(0xFFFE, int(round(fix.sog_mps * 100.0)))
    cog = 0xFFFF if fix.cog_rad is None else _cdeg_0_36000(fix.cog_rad)
    return mav.gps_raw_int_encode(int(fix.time_s * 1e6), _fix_type(fix),
                                  _deg_e7(fix.lat_deg) if ok else 0, _deg_e7(fix.lon_deg) if ok else 0,
                                  int(round(fix.alt_m * 1000.0)) if ok and math.isfinite(fix.alt_m) else 0,
                                  min(0xFFFE, int(round(fix.hdop * 100.0))) if math.isfinite(fix.hdop) else 0xFFFF,
                                  0xFFFF, vel, cog, min(255, max(0, int(fix.sats))),
                                  h_acc=(min(0xFFFFFFFE, int(round(fix.pos_std_m * 1000.0)))
                                         if math.isfinite(fix.pos_std_m) else 0))


def encode_global_position_int(mav, snap: VehicleSnapshot):
    if not snap.nav_valid:
        return None
    vn, ve = snap.ground_velocity_ne
    return mav.global_position_int_encode(time_boot_ms(snap), _deg_e7(snap.lat_deg), _deg_e7(snap.lon_deg), 0, 0,
                                          int(round(vn * 100.0)), int(round(ve * 100.0)), 0,
                                          _cdeg_0_36000(snap.heading_rad))


def encode_attitude(mav, snap: VehicleSnapshot):
    if not snap.nav_valid:
        return None
    yaw = math.remainder(snap.heading_rad, 2.0 * math.pi)
    return mav.attitude_encode(time_boot_ms(snap), 0.0, 0.0, yaw, 0.0, 0.0, snap.yaw_rate_rps)


def encode_vfr_hud(mav, snap: VehicleSnapshot):
    ground = math.hypot(*snap.ground_velocity_ne)
    push = max(snap.thrust_n, default=0.0) if snap.thrust_n else 0.0
    throttle = int(round(100.0 * max(-1.0, min(1.0, push / snap.max_thrust_n)))) if snap.max_thrust_n > 0 else 0
    heading = int(round(math.degrees(snap.heading_rad))) % 360
    return mav.vfr_hud_encode(snap.surge_mps, ground, heading, throttle, 0.0, 0.0)


def encode_nav_controller_output(mav, snap: VehicleSnapshot):
    sp = snap.setpoint
    if sp is None:
        return None
    bearing = int(round(math.degrees(sp.heading_rad))) % 360
    return mav.nav_controller_output_encode(0.0, 0.0, bearing, bearing,
                                            min(0xFFFF, max(0, int(round(sp.distance_to_waypoint_m)))),
                                            0.0, 0.0, float(sp.xte_m))


def encode_servo_output_raw(mav, snap: VehicleSnapshot):
    pulses = [int(p) & 0xFFFF for p in snap.pulses_us[:16]] + [0] * (16 - min(16, len(snap.pulses_us)))
    return mav.servo_output_raw_encode(int(snap.time_s * 1e6) & 0xFFFFFFFF, 0, *pulses)


def encode_home_position(mav, snap: VehicleSnapshot):
    if snap.home is None:
        return None
    lat, lon = snap.home
    north, east = snap.home_ned if snap.home_ned is not None else (0.0, 0.0)
    return mav.home_position_encode(_deg_e7(lat), _deg_e7(lon), 0, north, east, 0.0, [1.0, 0.0, 0.0, 0.0],
                                    0.0, 0.0, 0.0, time_usec=int(snap.time_s * 1e6))


def encode_gps_global_origin(mav, snap: VehicleSnapshot):
    if snap.origin is None:
        return None
    lat, lon = snap.origin
    return mav.gps_global_origin_encode(_deg_e7(lat), _deg_e7(lon), 0, time_usec=int(snap.time_s * 1e6))


def encode_ekf_status_report(mav, snap: VehicleSnapshot):
    h = snap.health
    if h is None:
        return None
    flags = 0
    if h.valid:
        flags |= (S.EKF_ATTITUDE | S.EKF_VELOCITY_HORIZ | S.EKF_POS_HORIZ_REL | S.EKF_PRED_POS_HORIZ_REL)
        if h.since_gps_s < GPS_FRESH_S:
            flags |= S.EKF_POS_HORIZ_ABS | S.EKF_PRED_POS_HORIZ_ABS
    if not h.converged:
        flags |= S.EKF_UNINITIALIZED if not h.valid else 0

    def ratio(nis: float, dof: int) -> float:
        return float(nis) / (4.0 * dof) if math.isfinite(nis) else 0.0
    # compass: the worse of the filter's innovation ratio and the heading's disagreement with the GNSS course
    # (mag_consistency_deg / the warning threshold: 1.0 at the warning, as ArduPilot's test ratios)
    compass = ratio(h.mag_nis_avg, 1)
    cons = getattr(h, "mag_consistency_deg", None)
    if cons is not None and math.isfinite(cons):
        compass = max(compass, float(cons) / max(float(getattr(snap, "mag_warn_deg", 8.0)), 1e-9))
    return mav.ekf_status_report_encode(flags, ratio(h.gps_vel_nis_avg, 2), ratio(h.gps_nis_avg, 2), 0.0,
                                        compass, 0.0)


def encode_battery_status(mav, snap: VehicleSnapshot):
    volts = [0xFFFF] * 10
    if snap.battery_v is not None:
        volts[0] = min(0xFFFE, int(round(snap.battery_v * 1000.0)))
    mah = snap.battery_mah
    consumed = -1 if mah is None or not math.isfinite(mah) else max(0, min(2**31 - 1, int(round(mah))))
    return mav.battery_status_encode(0, S.MAV_BATTERY_FUNCTION_ALL, S.MAV_BATTERY_TYPE_UNKNOWN, 0x7FFF, volts,
                                     _centiamps(snap.battery_a), consumed, -1, -1)


def encode_mission_current(mav, snap: VehicleSnapshot, seq: int, total: int):
    """seq: the ground station's item number of the active waypoint; total: the mission's items without home
    (item 0), as ArduPilot counts them. mission_state and mission_mode are MAVLink's MISSION_CURRENT extensions."""
    if snap.mission_cleared or total == 0:
        state = S.MISSION_STATE_NO_MISSION
    elif snap.mission_complete:
        state = S.MISSION_STATE_COMPLETE
    elif snap.mode == ModeName.AUTO:
        state = S.MISSION_STATE_ACTIVE
    else:
        state = S.MISSION_STATE_PAUSED if snap.waypoint_index > 0 else S.MISSION_STATE_NOT_STARTED
    # mission_mode: 1 in a mode that flies the mission, 2 suspended (0 would say "unknown")
    return mav.mission_current_encode(seq, total, state, 1 if snap.mode == ModeName.AUTO else 2)


# the streamed messages, by the name the boat config's mavlink.streams uses
def encode_extended_sys_state(mav, snap: VehicleSnapshot):
    """No VTOL state; the landed state a ground station reads as "under way": ON_GROUND while disarmed, IN_AIR
    while armed (a boat has no landing; MAVSDK's in_air and QGC's flight timer follow this)."""
    landed = S.MAV_LANDED_STATE_IN_AIR if snap.armed else S.MAV_LANDED_STATE_ON_GROUND
    return mav.extended_sys_state_encode(S.MAV_VTOL_STATE_UNDEFINED, landed)


ENCODERS: Dict[str, Callable] = {
    "heartbeat": encode_heartbeat, "gps_raw_int": encode_gps_raw_int,
    "global_position_int": encode_global_position_int, "attitude": encode_attitude, "vfr_hud": encode_vfr_hud,
    "nav_controller_output": encode_nav_controller_output, "servo_output_raw": encode_servo_output_raw,
    "home_position": encode_home_position, "ekf_status_report": encode_ekf_status_report,
    "battery_status": encode_battery_status, "gps_global_origin": encode_gps_global_origin,
    "extended_sys_state": encode_extended_sys_state,
}
MESSAGE_IDS = {"heartbeat": S.MAVLINK_MSG_ID_HEARTBEAT, "sys_status": S.MAVLINK_MSG_ID_SYS_STATUS,
               "gps_raw_int": S.MAVLINK_MSG_ID_GPS_RAW_INT,
               "global_position_int": S.MAVLINK_MSG_ID_GLOBAL_POSITION_INT, "attitude": S.MAVLINK_MSG_ID_ATTITUDE,
               "vfr_hud": S.MAVLINK_MSG_ID_VFR_HUD, "nav_controller_output": S.MAVLINK_MSG_ID_NAV_CONTROLLER_OUTPUT,
               "mission_current": S.MAVLINK_MSG_ID_MISSION_CURRENT,
               "servo_output_raw": S.MAVLINK_MSG_ID_SERVO_OUTPUT_RAW,
               "home_position": S.MAVLINK_MSG_ID_HOME_POSITION,
               "ekf_status_report": S.MAVLINK_MSG_ID_EKF_STATUS_REPORT,
               "battery_status": S.MAVLINK_MSG_ID_BATTERY_STATUS,
               "gps_global_origin": S.MAVLINK_MSG_ID_GPS_GLOBAL_ORIGIN,
               "extended_sys_state": S.MAVLINK_MSG_ID_EXTENDED_SYS_STATE}
# REQUEST_DATA_STREAM's groups, as ArduPilot fills them
DATA_STREAMS = {
    S.MAV_DATA_STREAM_EXTENDED_STATUS: ("sys_status", "gps_raw_int", "nav_controller_output", "mission_current",
                                        "extended_sys_state"),
    S.MAV_DATA_STREAM_POSITION: ("global_position_int",),
    S.MAV_DATA_STREAM_EXTRA1: ("attitude",),
    S.MAV_DATA_STREAM_EXTRA2: ("vfr_hud",),
    S.MAV_DATA_STREAM_EXTRA3: ("battery_status", "ekf_status_report", "home_position", "gps_global_origin"),
    S.MAV_DATA_STREAM_RAW_CONTROLLER: ("servo_output_raw",),
    S.MAV_DATA_STREAM_RC_CHANNELS: ("servo_output_raw",),
}


def statustext_chunks(mav, severity: int, text: str, text_id: int) -> list:
    """STATUSTEXT messages for `text`: one if it fits in 50 characters, else chunks sharing `text_id` (MAVLink 2's
    long-text rule; the last chunk is shorter than 50 or followed by an empty one)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= 50:
        return [mav.statustext_encode(severity, data)]
    chunks = [data[i:i + 50] for i in range(0, len(data), 50)][:255]
    out = [mav.statustext_encode(severity, c, text_id & 0xFFFF or 1, k) for k, c in enumerate(chunks)]
    if len(chunks[-1]) == 50:
        out.append(mav.statustext_encode(severity, b"", text_id & 0xFFFF or 1, len(chunks)))
    return out
