"""THE one place where the autopilot's frames meet ROS's (REP-103 / REP-105).

Inside the autopilot: local NED (north, east, down) and body FRD (forward, right, down); heading is the compass
heading, clockwise from true north. On ROS topics: ENU `map`/`odom` (x east, y north, z up) and FLU
`base_link` (x forward, y left, z up); yaw is counter-clockwise from east.

Both frame changes are 180-degree rotations (NED<->ENU swaps x/y and flips z; FRD<->FLU flips y and z), so every
function here is its own inverse up to naming; the pairs exist so call sites say which way they go.
Quaternions are (x, y, z, w) like geometry_msgs/Quaternion, Hamilton convention, active rotation from the body
frame into the world frame. Pure Python + numpy: no rclpy, so these are testable anywhere.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np

from autopilot.vocab.angles import wrap_pi

Vec3 = Tuple[float, float, float]
Quat = Tuple[float, float, float, float]   # (x, y, z, w)

# World: ENU <- NED (x_e = east, y_n = north, z_u = -down). Symmetric and its own inverse.
R_ENU_NED = np.array([[0.0, 1.0, 0.0],
                      [1.0, 0.0, 0.0],
                      [0.0, 0.0, -1.0]])
# Body: FLU <- FRD (x same, y left = -right, z up = -down). Symmetric and its own inverse.
R_FLU_FRD = np.diag([1.0, -1.0, -1.0])


# ------------------------------------------------------------------------------------------ vectors
def ned_to_enu(v: Sequence[float]) -> Vec3:
    """A vector or point in local NED -> the same in ENU."""
    n, e, d = v
    return (float(e), float(n), -float(d))


def enu_to_ned(v: Sequence[float]) -> Vec3:
    """A vector or point in ENU -> the same in local NED."""
    x, y, z = v
    return (float(y), float(x), -float(z))


def frd_to_flu(v: Sequence[float]) -> Vec3:
    """A body vector (velocity, angular rate, specific force, magnetic field) FRD -> FLU."""
    x, y, z = v
    return (float(x), -float(y), -float(z))


def flu_to_frd(v: Sequence[float]) -> Vec3:
    """A body vector FLU -> FRD."""
    x, y, z = v
    return (float(x), -float(y), -float(z))


# ------------------------------------------------------------------------------------------ heading / yaw
def heading_to_enu_yaw(heading_rad: float) -> float:
    """Compass heading (clockwise from north) -> ENU yaw of the FLU body (counter-clockwise from east), [-pi, pi)."""
    return wrap_pi(math.pi / 2.0 - heading_rad)


def goal_to_ned(frame_id: str, x_m: float, y_m: float, world_frames: Sequence[str]) -> Tuple[float, float] | str:
    """A goal position in a world ENU frame (x east, y north [m], REP-105 map/odom, which this autopilot keeps
    identical) -> (north, east) [m] in the local NED frame; or why not: a frame that is not one of
    `world_frames` (leading '/' ignored, as tf2 does), or values that are not finite numbers."""
    name = (frame_id or "").lstrip("/")
    allowed = [f.lstrip("/") for f in world_frames]
    if name not in allowed:
        return f"frame {frame_id[:60]!r} is not {' or '.join(repr(f) for f in allowed)} (a world ENU frame)"
    if not (math.isfinite(x_m) and math.isfinite(y_m)):
        return f"the position must be finite numbers, got x={x_m!r}, y={y_m!r}"
    north, east, _ = enu_to_ned((x_m, y_m, 0.0))
    return north, east


def enu_yaw_to_heading(yaw_rad: float) -> float:
    """ENU yaw (counter-clockwise from east) -> compass heading (clockwise from north), [-pi, pi)."""
    return wrap_pi(math.pi / 2.0 - yaw_rad)


def yaw_rate_frd_to_flu(r_rps: float) -> float:
    """Yaw rate positive to starboard (FRD z down) -> angular.z of a FLU twist (positive to port)."""
    return -float(r_rps)


def yaw_rate_flu_to_frd(wz_rps: float) -> float:
    return -float(wz_rps)


# ------------------------------------------------------------------------------------------ quaternions
def quat_from_matrix(r: np.ndarray) -> Quat:
    """Rotation matrix -> unit quaternion (x, y, z, w) with w >= 0 (Shepperd's method, stable everywhere)."""
    m = np.asarray(r, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    q = np.array([x, y, z, w])
    q /= np.linalg.norm(q)
    if q[3] < 0:
        q = -q
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def matrix_from_quat(q: Sequence[float]) -> np.ndarray:
    """Unit quaternion (x, y, z, w) -> rotation matrix (normalises first; a zero quaternion is an error)."""
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n < 1e-12:
        raise ValueError("quaternion has zero length")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_from_rpy(roll_rad: float, pitch_rad: float, yaw_rad: float) -> np.ndarray:
    """Z-Y-X Euler angles -> rotation matrix body -> world (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    cr, sr = math.cos(roll_rad), math.sin(roll_rad)
    cp, sp = math.cos(pitch_rad), math.sin(pitch_rad)
    cy, sy = math.cos(yaw_rad), math.sin(yaw_rad)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def rpy_from_matrix(r: np.ndarray) -> Vec3:
    """Rotation matrix -> Z-Y-X Euler angles (roll, pitch, yaw) [rad], yaw wrapped to [-pi, pi)."""
    m = np.asarray(r, dtype=float)
    pitch = math.asin(max(-1.0, min(1.0, -m[2, 0])))
    roll = math.atan2(m[2, 1], m[2, 2])
    yaw = math.atan2(m[1, 0], m[0, 0])
    return (roll, pitch, wrap_pi(yaw))


def ned_frd_to_enu_flu_matrix(r_ned_frd: np.ndarray) -> np.ndarray:
    """Attitude of an FRD body in NED -> attitude of the matching FLU body in ENU."""
    return R_ENU_NED @ np.asarray(r_ned_frd, dtype=float) @ R_FLU_FRD


def enu_flu_to_ned_frd_matrix(r_enu_flu: np.ndarray) -> np.ndarray:
    return R_ENU_NED @ np.asarray(r_enu_flu, dtype=float) @ R_FLU_FRD


def attitude_ned_frd_to_enu_flu(roll_rad: float, pitch_rad: float, heading_rad: float) -> Quat:
    """Fossen roll/pitch/heading (FRD in NED) -> geometry_msgs orientation (FLU in ENU) as (x, y, z, w)."""
    return quat_from_matrix(ned_frd_to_enu_flu_matrix(matrix_from_rpy(roll_rad, pitch_rad, heading_rad)))


def attitude_enu_flu_to_ned_frd(q_enu_flu: Sequence[float]) -> Vec3:
    """geometry_msgs orientation (FLU in ENU) -> (roll, pitch, heading) of the FRD body in NED [rad]."""
    return rpy_from_matrix(enu_flu_to_ned_frd_matrix(matrix_from_quat(q_enu_flu)))


def heading_to_quat_enu(heading_rad: float) -> Quat:
    """A level boat's compass heading -> its FLU-in-ENU orientation quaternion (rotation about +z up)."""
    yaw = heading_to_enu_yaw(heading_rad)
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


def quat_enu_to_heading(q_enu_flu: Sequence[float]) -> float:
    """The compass heading of an FLU-in-ENU orientation (roll and pitch ignored), [-pi, pi)."""
    return attitude_enu_flu_to_ned_frd(q_enu_flu)[2]


# ------------------------------------------------------------------------------------------ covariances
def cov3_ned_to_enu(cov: np.ndarray) -> np.ndarray:
    """A 3x3 covariance of a NED vector -> ENU (P C P^T with the axis swap)."""
    c = np.asarray(cov, dtype=float).reshape(3, 3)
    return R_ENU_NED @ c @ R_ENU_NED.T


def cov3_enu_to_ned(cov: np.ndarray) -> np.ndarray:
    c = np.asarray(cov, dtype=float).reshape(3, 3)
    return R_ENU_NED @ c @ R_ENU_NED.T


def cov3_frd_to_flu(cov: np.ndarray) -> np.ndarray:
    c = np.asarray(cov, dtype=float).reshape(3, 3)
    return R_FLU_FRD @ c @ R_FLU_FRD.T


def cov3_flu_to_frd(cov: np.ndarray) -> np.ndarray:
    c = np.asarray(cov, dtype=float).reshape(3, 3)
    return R_FLU_FRD @ c @ R_FLU_FRD.T


# ------------------------------------------------------------------------------------------ sensor placement
def sensor_transforms(vessel, frame_ids) -> list:
    """Static transforms of the sensors on the hull: [(parent, child, (x, y, z) [m] FLU, quaternion)].

    base_link -> gnss frame: the antenna's lever arm (vessel sensors.gnss.antenna_x_m / antenna_y_m, body FRD).
    base_link -> imu frame: identity, because the IMU driver already rotates its readings into body axes
    (sensors.imu.mount_rpy_deg), so the Imu and MagneticField messages stamped with the imu frame are in body
    axes. `frame_ids` is the boat config's ros.frames (base_link, gnss, imu).
    """
    g = vessel.sensors.gnss
    ident = (0.0, 0.0, 0.0, 1.0)
    return [(frame_ids.base_link, frame_ids.gnss, frd_to_flu((g.antenna_x_m, g.antenna_y_m, 0.0)), ident),
            (frame_ids.base_link, frame_ids.imu, (0.0, 0.0, 0.0), ident)]
