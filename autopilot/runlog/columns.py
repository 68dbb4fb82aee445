"""The columns of state.csv: what the control loop puts in each row passed to `RunLogger.log_cycle`.

Units follow the names (degrees in `_deg` columns: this file is for people and spreadsheets). A row is a dict
keyed by these names; a key that is missing or None, or a NaN, is written as an empty cell.

Per thruster i (0-based, in the vessel file's order): thrust_n_<i> (commanded thrust [N]), pulse_us_<i>
(ESC pulse width [us]) and applied_thrust_n_<i> (the thrust that pulse gives through the thruster's map at the
battery voltage, dead zone and whole microseconds included, before the thruster's own lag [N]). In a
simulation, the truth_* columns carry the plant's true pose and body velocities for comparison.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Dict, Iterable, Tuple

STATE_COLUMNS: Tuple[str, ...] = (
    "time_s",             # runner clock [s] (wall or simulated); the row's time
    "mode",               # MANUAL, HOLD, LOITER, AUTO, RTL (a str, or an Enum written by its name)
    "armed",              # 1 armed, 0 disarmed
    "north_m",            # estimated position, local NED [m]
    "east_m",
    "lat_deg",            # the same position in WGS84 [deg]
    "lon_deg",
    "heading_deg",        # estimated compass heading, clockwise from true north [deg]
    "surge_mps",          # estimated body-forward speed [m/s]
    "sway_mps",           # estimated body-starboard speed [m/s]
    "yaw_rate_dps",       # estimated yaw rate, positive turning to starboard [deg/s]
    "pos_std_m",          # estimator's position uncertainty (1 sigma, larger axis) [m]
    "heading_ref_deg",    # guidance: desired heading [deg]
    "speed_ref_mps",      # guidance: desired speed [m/s]
    "xte_m",              # cross-track error, positive right of the leg [m]
    "waypoint_index",     # active waypoint (index into the mission's waypoints)
    "surge_force_n",      # control: surge force demand [N]
    "yaw_moment_nm",      # control: yaw moment demand, positive turning to starboard [N*m]
    "gps_age_s",          # time since the last valid GNSS fix [s]
    "gnss_fix_quality",   # GGA quality of the last fix: 0 none, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float
    "battery_v",          # measured or provided pack voltage [V]
    "battery_a",          # measured pack current, positive discharging [A]; empty when not measured
    "battery_mah",        # charge drawn since the power monitor started [mAh]; empty when not measured
    # what a hull identification fits (autopilot identify); empty when the cycle had no such sample
    "gyro_z_dps",         # IMU yaw rate of the cycle's last sample, body FRD, positive to starboard [deg/s]
    "accel_x_mps2",       # IMU specific force of that sample, body forward [m/s^2]
    "accel_y_mps2",       # and body starboard [m/s^2]
    "gnss_north_m",       # a valid GNSS fix that arrived since the previous row, local NED [m]
    "gnss_east_m",
    "gnss_speed_mps",     # its speed over ground [m/s] and course over ground [deg], when the receiver gave them
    "gnss_course_deg",
    "mag_consistency_deg",  # RMS of magnetic minus GNSS-course heading (after crab) at speed, last minute [deg]
)
THRUSTER_COLUMNS: Tuple[str, ...] = ("thrust_n_{i}", "pulse_us_{i}", "applied_thrust_n_{i}")
TRUTH_COLUMNS: Tuple[str, ...] = ("truth_north_m", "truth_east_m", "truth_heading_deg",
                                  "truth_surge_mps", "truth_sway_mps", "truth_yaw_rate_dps")

_THRUSTER_RE = re.compile(r"^(thrust_n|pulse_us|applied_thrust_n)_(\d+)$")
_INT_COLUMNS = {"waypoint_index", "gnss_fix_quality"}
_TEXT_COLUMNS = {"mode"}


def state_columns(n_thrusters: int, simulation: bool = False) -> Tuple[str, ...]:
    """The full header for a vessel with `n_thrusters` (plus truth columns in a simulation)."""
    cols = list(STATE_COLUMNS)
    cols += [c.format(i=i) for c in THRUSTER_COLUMNS for i in range(n_thrusters)]
    if simulation:
        cols += list(TRUTH_COLUMNS)
    return tuple(cols)


def columns_for_row(row_keys: Iterable[str]) -> Tuple[str, ...]:
    """The header implied by a first row: thruster count from the highest index, truth columns if any.

    Raises ValueError naming keys that are not state columns (a typo would otherwise vanish silently).
    """
    keys = set(row_keys)
    n = 0
    unknown = []
    for k in keys:
        m = _THRUSTER_RE.match(k)
        if m:
            n = max(n, int(m.group(2)) + 1)
        elif k not in STATE_COLUMNS and k not in TRUTH_COLUMNS:
            unknown.append(k)
    if unknown:
        raise ValueError(f"not state.csv columns: {', '.join(sorted(unknown))} "
                         f"(see autopilot.runlog.STATE_COLUMNS)")
    return state_columns(n, simulation=bool(keys & set(TRUTH_COLUMNS)))


def formatter(column: str) -> Callable[[object], str]:
    """The cell formatter of a column: fixed decimals where resolution matters, 6 significant digits else."""
    if column == "time_s":
        return _float_fmt("{:.3f}")
    if column in ("lat_deg", "lon_deg"):
        return _float_fmt("{:.8f}")                       # ~1 mm
    if column in _TEXT_COLUMNS:
        return lambda v: "" if v is None else mode_text(v).replace(",", ";").replace("\n", " ")
    if column == "armed":
        return lambda v: "" if v is None else ("1" if v else "0")
    if column in _INT_COLUMNS or column.startswith("pulse_us_"):
        return _int_fmt
    return _float_fmt("{:.6g}")


def mode_text(v) -> str:
    """A mode as text: an Enum member by its name (Mode.AUTO -> 'AUTO'), anything else as str()."""
    return str(getattr(v, "name", v))


def column_kind(column: str) -> str:
    """'text' for the mode column, 'number' for everything else (how the reader parses it)."""
    return "text" if column in _TEXT_COLUMNS else "number"


def _float_fmt(spec: str) -> Callable[[object], str]:
    def fmt(v) -> str:
        if v is None:
            return ""
        v = float(v)
        return "" if math.isnan(v) else spec.format(v)
    return fmt


def _int_fmt(v) -> str:
    if v is None:
        return ""
    f = float(v)
    return "" if math.isnan(f) else str(int(round(f)))


def format_row(formatters: Dict[str, Callable], columns: Tuple[str, ...], row: dict) -> str:
    """One CSV line (with its newline) for `row`."""
    return ",".join(formatters[c](row.get(c)) for c in columns) + "\n"
