"""How late a GNSS receiver's fixes are against their time stamps, from the run itself.

A fix is stamped when its first sentence arrives (drivers/gnss/l76k_epoch.py), but it describes the boat at the
receiver's epoch, earlier by the module's computing and the sentence's time on the line (about 0.08 s for an
L76K at 9600 baud). In a turn the velocity vector rotates by r * latency in that time, which a smoother reads
as sway. The latency is found without a model: between consecutive fixes the receiver's velocity changes by
the integral of the accelerometer's specific force rotated to north/east (less its constant body-frame bias);
the latency is where the two agree best, searched on a grid and refined by a parabola through the best three.
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import cumulative_trapezoid

GRID_S = np.arange(-0.2, 0.5001, 0.02)     # candidate latencies [s]; a fix later than its stamp is positive


def fix_latency_s(t_s: np.ndarray, accel_north_mps2: np.ndarray, accel_east_mps2: np.ndarray,
                  heading_rad: np.ndarray, fix_t_s: np.ndarray, fix_v_north_mps: np.ndarray,
                  fix_v_east_mps: np.ndarray) -> float:
    """Latency [s] of the fixes (stamped fix_t_s, with the receiver's north/east velocity [m/s]) on a run
    sampled at t_s with the accelerometer's specific force rotated to north/east [m/s^2] and the heading [rad]
    it was rotated with. Needs at least 10 fixes inside the run (fewer, or no minimum inside the grid: 0)."""
    t = np.asarray(t_s, float)
    ft = np.asarray(fix_t_s, float)
    ok = (ft > t[0] + GRID_S[-1]) & (ft < t[-1] + GRID_S[0])
    ft, vn, ve = ft[ok], np.asarray(fix_v_north_mps, float)[ok], np.asarray(fix_v_east_mps, float)[ok]
    if len(ft) < 10:
        return 0.0
    c, s = np.cos(heading_rad), np.sin(heading_rad)
    integrals = [cumulative_trapezoid(y, t, initial=0.0) for y in (accel_north_mps2, accel_east_mps2, c, s)]
    dvn, dve = np.diff(vn), np.diff(ve)
    cost = []
    for lat in GRID_S:
        i_n, i_e, i_c, i_s = (np.diff(np.interp(ft - lat, t, y)) for y in integrals)
        # dv = integral of R(psi)(a - b): the body bias b enters through the integrals of cos and sin psi
        a = np.block([[-i_c[:, None], i_s[:, None]], [-i_s[:, None], -i_c[:, None]]])
        y = np.concatenate([dvn - i_n, dve - i_e])
        b = np.linalg.lstsq(a, y, rcond=None)[0]
        cost.append(float(np.mean((y - a @ b) ** 2)))
    k = int(np.argmin(cost))
    if k == 0 or k == len(GRID_S) - 1:
        return 0.0
    c0, c1, c2 = cost[k - 1], cost[k], cost[k + 1]
    curv = c0 - 2.0 * c1 + c2
    step = GRID_S[1] - GRID_S[0]
    return float(GRID_S[k] + (0.5 * (c0 - c2) / curv * step if curv > 0 else 0.0))

