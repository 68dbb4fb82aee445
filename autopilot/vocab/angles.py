"""Angles: the one wrapping function, used everywhere (controllers, guidance, EKF residuals), and the
roll-pitch-yaw rotation matrix every frame change is built from."""
from __future__ import annotations

import math
from typing import Any, Union, overload

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


@overload
def wrap_pi(angle_rad: float) -> float: ...
@overload
def wrap_pi(angle_rad: Array) -> Array: ...
def wrap_pi(angle_rad: Union[float, Array]) -> Union[float, Array]:
    """Wrap an angle (scalar or array) to [-pi, pi). Inputs of any magnitude are accepted."""
    if isinstance(angle_rad, np.ndarray):
        return (angle_rad + np.pi) % (2.0 * np.pi) - np.pi
    return (float(angle_rad) + math.pi) % (2.0 * math.pi) - math.pi


def compass_deg_for_plot(heading_deg: Array) -> Array:
    """Headings [deg, compass: clockwise from true north, any wrap] as every plot draws them: in [0, 360), with
    a gap (NaN) where consecutive values wrap across north, so no line crosses the whole panel."""
    d = np.mod(np.asarray(heading_deg, dtype=float), 360.0)
    out: Array = d.copy()
    if len(d) > 1:
        jumps = np.abs(np.diff(d)) > 180.0
        out[1:][jumps] = np.nan
    return out


HEADING_TICKS_DEG = (0, 90, 180, 270, 360)   # the heading axis of every plot: N, E, S, W, N


def rotation_rpy(roll_rad: float, pitch_rad: float, yaw_rad: float) -> Array:
    """R = Rz(yaw) Ry(pitch) Rx(roll) [rad in, 3x3 out]: maps vectors of the rotated frame into the reference
    frame (body -> NED for the vessel's attitude; its transpose maps NED into the body)."""
    cr, sr = math.cos(roll_rad), math.sin(roll_rad)
    cp, sp = math.cos(pitch_rad), math.sin(pitch_rad)
    cy, sy = math.cos(yaw_rad), math.sin(yaw_rad)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])
