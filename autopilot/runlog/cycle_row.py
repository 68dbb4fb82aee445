"""One control cycle as a row of state.csv (the columns of autopilot.runlog.columns)."""
from __future__ import annotations

import math
from typing import Optional


def cycle_row(result, frame, *, gps_age_s: float = math.nan, fix_quality: int = 0,
              battery_v: Optional[float] = None, truth=None, imu=None, new_fix=None,
              applied_thrust_n: Optional[tuple] = None, battery_a: Optional[float] = None,
              battery_mah: Optional[float] = None) -> dict:
    """The state.csv row of a `CycleResult`; `truth` (hil.sim.plant.Truth) adds the simulation's truth columns,
    `imu` (the cycle's last ImuSample) the IMU columns and `new_fix` (a GpsFix not yet in any row) the GNSS ones.
    `applied_thrust_n` (what the ESCs output, per thruster [N]) overrides the result's `applied`."""
    sp, w = result.setpoint, result.wrench
    row = {
        "time_s": result.time_s, "mode": result.mode, "armed": int(result.armed),
        **nav_columns(result.nav, frame),
        "heading_ref_deg": math.degrees(sp.heading_rad) if sp is not None else math.nan,
        "speed_ref_mps": sp.speed_mps if sp is not None else math.nan,
        "xte_m": sp.xte_m if sp is not None else math.nan,
        "waypoint_index": sp.waypoint_index if sp is not None else -1,
        "surge_force_n": w.surge_n, "yaw_moment_nm": w.yaw_nm,
        "gps_age_s": gps_age_s, "gnss_fix_quality": fix_quality,
        "battery_v": math.nan if battery_v is None else battery_v,
        "battery_a": battery_a, "battery_mah": battery_mah,
        "mag_consistency_deg": getattr(result, "mag_consistency_deg", None),
    }
    if imu is not None:
        row["gyro_z_dps"] = math.degrees(imu.gyro_rps[2])
        row["accel_x_mps2"], row["accel_y_mps2"] = imu.accel_mps2[0], imu.accel_mps2[1]
    if new_fix is not None and new_fix.valid:
        row["gnss_north_m"], row["gnss_east_m"] = frame.to_ned(new_fix.lat_deg, new_fix.lon_deg)
        row["gnss_speed_mps"] = new_fix.sog_mps
        row["gnss_course_deg"] = None if new_fix.cog_rad is None else math.degrees(new_fix.cog_rad)
    applied = applied_thrust_n
    if applied is None:
        applied = result.applied.thrust_n if result.applied is not None else (None,) * len(result.pulses.pulse_us)
    for i, (f, p, a) in enumerate(zip(result.thrust.thrust_n, result.pulses.pulse_us, applied)):
        row[f"thrust_n_{i}"] = f
        row[f"pulse_us_{i}"] = p
        row[f"applied_thrust_n_{i}"] = a
    if truth is not None:
        row["truth_north_m"] = truth.north_m
        row["truth_east_m"] = truth.east_m
        row["truth_heading_deg"] = math.degrees(truth.heading_rad)
        row["truth_surge_mps"] = truth.surge_mps
        row["truth_sway_mps"] = truth.sway_mps
        row["truth_yaw_rate_dps"] = math.degrees(truth.yaw_rate_rps)
    return row


def nav_columns(nav, frame) -> dict:
    """The estimate's state.csv columns of a NavState (position local NED [m] and WGS84 [deg], heading [deg],
    body velocities [m/s], yaw rate [deg/s], position std [m]); position and heading empty while not valid."""
    lat, lon = frame.to_wgs84(nav.north_m, nav.east_m) if nav.valid else (math.nan, math.nan)
    return {
        "north_m": nav.north_m if nav.valid else math.nan, "east_m": nav.east_m if nav.valid else math.nan,
        "lat_deg": lat, "lon_deg": lon,
        "heading_deg": math.degrees(nav.heading_rad) if nav.valid else math.nan,
        "surge_mps": nav.surge_mps, "sway_mps": nav.sway_mps, "yaw_rate_dps": math.degrees(nav.yaw_rate_rps),
        "pos_std_m": nav.pos_std_m,
    }
