"""What a GNSS fix should read, given the navigation filter's state: the measurement model of the antenna's
position and velocity at the fix's time, with its Jacobian (estimation/navekf/ekf.py gates and fuses the rows).

The state is estimation/navekf/model.py's (NED/FRD, SI units). The antenna sits at (ax_m, ay_m) in body axes
(x forward, y to starboard) from the point the model describes. A fix stamped dt_s after the filter's time
(negative: the fix describes the boat earlier) is compared with the state carried to that time to first order:
  position   n + R(psi) a + dt_s * ground velocity of the reference point        (rows row, row + 1)
  velocity   R(psi + r dt_s) (u - r ay, v + r ax) + current                       (rows row, row + 1)
the velocity being the antenna's: in a turn at r it moves r x (ax, ay) faster than the reference point.
Each function writes the two rows of H (shape (k, N_STATES), other columns of those rows untouched: the caller
zeroes them) and of hx (shape (k, 1)); the Jacobian is exact for the expressions above
(tests/estimation/test_ekf_jacobians.py).
"""
from __future__ import annotations

import math

import numpy as np

from estimation.navekf.model import IX_CE, IX_CN, IX_E, IX_N, IX_PSI, IX_R, IX_U, IX_V


def antenna_position_rows(x: np.ndarray, dt_s: float, ax_m: float, ay_m: float, H: np.ndarray, hx: np.ndarray,
                          row: int = 0) -> tuple[float, float]:
    """Predicted antenna north/east [m] at the fix time into hx[row:row + 2], its Jacobian into H's rows.
    Returns (cos, sin) of the filter's heading (the bow the caller splits the innovation along)."""
    psi = x[IX_PSI, 0]
    c, s = math.cos(psi), math.sin(psi)
    u, v = x[IX_U, 0], x[IX_V, 0]
    vn = u * c - v * s + x[IX_CN, 0]
    ve = u * s + v * c + x[IX_CE, 0]
    a, b = row, row + 1
    H[a, IX_N] = 1.0
    H[b, IX_E] = 1.0
    H[a, IX_PSI] = -ax_m * s - ay_m * c + dt_s * (-u * s - v * c)
    H[b, IX_PSI] = ax_m * c - ay_m * s + dt_s * (u * c - v * s)
    H[a, IX_U] = dt_s * c
    H[a, IX_V] = -dt_s * s
    H[b, IX_U] = dt_s * s
    H[b, IX_V] = dt_s * c
    H[a, IX_CN] = dt_s
    H[b, IX_CE] = dt_s
    hx[a, 0] = x[IX_N, 0] + ax_m * c - ay_m * s + dt_s * vn
    hx[b, 0] = x[IX_E, 0] + ax_m * s + ay_m * c + dt_s * ve
    return c, s


def antenna_velocity_rows(x: np.ndarray, dt_s: float, ax_m: float, ay_m: float, H: np.ndarray, hx: np.ndarray,
                          row: int = 0) -> tuple[float, float]:
    """Predicted antenna velocity over ground, north/east [m/s], at the fix time into hx[row:row + 2], its
    Jacobian into H's rows. Returns (cos, sin) of the heading at the fix time (the body axes the caller
    splits the innovation along)."""
    r = x[IX_R, 0]
    psi = x[IX_PSI, 0] + dt_s * r
    c, s = math.cos(psi), math.sin(psi)
    u, v = x[IX_U, 0] - r * ay_m, x[IX_V, 0] + r * ax_m     # the antenna's velocity through the water, body
    a, b = row, row + 1
    H[a, IX_PSI] = -u * s - v * c
    H[a, IX_R] = dt_s * H[a, IX_PSI] - ay_m * c - ax_m * s
    H[a, IX_U] = c
    H[a, IX_V] = -s
    H[a, IX_CN] = 1.0
    H[b, IX_PSI] = u * c - v * s
    H[b, IX_R] = dt_s * H[b, IX_PSI] - ay_m * s + ax_m * c
    H[b, IX_U] = s
    H[b, IX_V] = c
    H[b, IX_CE] = 1.0
    hx[a, 0] = u * c - v * s + x[IX_CN, 0]
    hx[b, 0] = u * s + v * c + x[IX_CE, 0]
    return c, s
