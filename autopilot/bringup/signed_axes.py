"""Signed axis permutations: the 48 ways three sensor axes can be swapped and sign-flipped, and what to do about one.

Convention used throughout: a sensor that is wrong by C reads `measured = C @ true`, where `true` is the vector
body FRD should read and C is a signed 3x3 permutation matrix (one +-1 in each row and column). Column j of C is
where the true body axis j shows up in the measurement: C = identity is a correct sensor. The correction that maps
what was measured back to body FRD is C^T (C is orthogonal).

A proper C (det +1) is a rotation: the board is mounted differently from what the vessel file says, and a new
`sensors.imu.mount_rpy_deg` fixes it (`corrected_mount_rpy_deg`). An improper C (det -1) is a mirror: no
rotation of the board produces it, so no mounting fixes it; an axis has the wrong sign in the driver's (or the
chip's) axis convention.

Mounting convention (drivers/lsm9ds1.py): v_body = R v_S with R = Rz(yaw) Ry(pitch) Rx(roll) from
mount_rpy_deg = (roll, pitch, yaw) in degrees.
"""
from __future__ import annotations

import itertools
import math
from typing import List, Optional, Tuple

import numpy as np

from autopilot.vocab.angles import rotation_rpy

AXIS_NAMES = ("x (forward)", "y (starboard)", "z (down)")
_LETTERS = "xyz"


def signed_permutations() -> List[np.ndarray]:
    """All 48 signed 3x3 permutation matrices (integer entries), the identity first."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), dtype=int)
            for col, (row, s) in enumerate(zip(perm, signs)):
                m[row, col] = s
            out.append(m)
    return out


def snap_to_axis(v) -> Tuple[np.ndarray, float]:
    """The signed unit axis nearest to the direction of `v` (an int 3-vector) and the angle between them [deg].

    `v` must not be zero (ValueError)."""
    v = np.asarray(v, dtype=float)
    norm = float(np.linalg.norm(v))
    if not norm > 0.0:
        raise ValueError("cannot find the axis of a zero vector")
    i = int(np.argmax(np.abs(v)))
    axis = np.zeros(3, dtype=int)
    axis[i] = 1 if v[i] > 0 else -1
    off_deg = math.degrees(math.acos(min(1.0, abs(v[i]) / norm)))
    return axis, off_deg


def is_signed_permutation(m) -> bool:
    m = np.asarray(m)
    return m.shape == (3, 3) and bool(np.all(np.abs(m).sum(axis=0) == 1)) and \
        bool(np.all(np.abs(m).sum(axis=1) == 1)) and bool(np.all(np.isin(m, (-1, 0, 1))))


def signed_axis(v) -> str:
    """'+x', '-z', ... for a signed unit axis (int 3-vector)."""
    i = int(np.argmax(np.abs(v)))
    return ("+" if v[i] > 0 else "-") + _LETTERS[i]


def describe(c) -> List[str]:
    """One line per true body axis: where it shows up in the measurement (`measured = c @ true`)."""
    c = np.asarray(c)
    lines = []
    for j, name in enumerate(AXIS_NAMES):
        col = c[:, j]
        where = signed_axis(col)
        ok = where == "+" + _LETTERS[j]
        lines.append(f"{name:<14} reads as {where}" + ("" if ok else "   <- wrong"))
    return lines


def wrong_axes(c) -> List[str]:
    """The true body axes ('x', 'y', 'z') that do not read as themselves under `c`."""
    c = np.asarray(c)
    return [_LETTERS[j] for j in range(3) if c[j, j] != 1]


def rpy_deg_from_rotation(r) -> Tuple[float, float, float]:
    """(roll, pitch, yaw) [deg] with rotation_rpy(roll, pitch, yaw) == r, r a rotation matrix (det +1).

    Angles in [-180, 180]; pitch in [-90, 90]. At pitch +-90 (gimbal lock) roll is taken as 0."""
    r = np.asarray(r, dtype=float)
    sp = float(np.clip(-r[2, 0], -1.0, 1.0))
    if abs(sp) > 1.0 - 1e-9:
        roll = 0.0
        pitch = math.copysign(math.pi / 2.0, sp)
        yaw = math.atan2(-r[0, 1], r[1, 1])
    else:
        roll = math.atan2(r[2, 1], r[2, 2])
        pitch = math.asin(sp)
        yaw = math.atan2(r[1, 0], r[0, 0])
    return _tidy(math.degrees(roll)), _tidy(math.degrees(pitch)), _tidy(math.degrees(yaw))


def _tidy(deg: float) -> float:
    """Round to 0.01 deg, -0.0 -> 0.0, -180 -> 180 (both are the same angle; the config allows [-180, 180])."""
    d = round(deg, 2) + 0.0
    return 180.0 if d == -180.0 else d


def mount_matrix(mount_rpy_deg) -> np.ndarray:
    """R (sensor frame S -> body) of a mount_rpy_deg triple, as the driver builds it."""
    return rotation_rpy(*(math.radians(a) for a in mount_rpy_deg))


def corrected_mount_rpy_deg(c, mount_rpy_deg, tolerance: float = 1e-3) -> Optional[Tuple[float, float, float]]:
    """The mount_rpy_deg that makes a sensor wrong by `c` (measured with `mount_rpy_deg`) read body FRD.

    With the present mounting R0 the driver reads measured = R0 v_S = c v_body, so the board's real mounting is
    R = c^T R0. Returns its (roll, pitch, yaw) [deg], rounded to 0.01 deg and checked by re-applying: the driver
    with the new value must turn every measurement by c^T (to `tolerance` in each matrix entry), else
    RuntimeError. None when c is improper (det -1): no mounting rotation fixes a mirror.
    """
    c = np.asarray(c, dtype=float)
    if round(float(np.linalg.det(c))) != 1:
        return None
    r0 = mount_matrix(mount_rpy_deg)
    rpy = rpy_deg_from_rotation(c.T @ r0)
    reapplied = mount_matrix(rpy) @ r0.T          # what the new mounting does to what was measured
    if not np.allclose(reapplied, c.T, atol=tolerance):
        raise RuntimeError(f"mount_rpy_deg {rpy} does not reproduce the correction (internal error)")
    return rpy
