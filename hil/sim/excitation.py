"""Open-loop excitation for hull identification, and a run of the 3-DOF plant under it.

`excitation(vessel, seed)` returns the surge force X [N] and yaw moment N [N m] over time, in segments the
identification papers use (000, 001, 002): surge steps at three levels, fixed-moment turns both ways (Nomoto),
sinusoidal and square differential thrust at cruise, and a PRBS on both channels. Levels come from the
vessel's thrusters: the largest common forward thrust and the yaw moment their lever arms give.
`plant_run(vessel, t, x, n)` flies the plant (hil/sim/dynamics.py) under those inputs with fixed-step RK4 and returns
the true body velocities: an identification run without sensors, for tests of the regression itself.
"""
from __future__ import annotations

import numpy as np

from estimation.identification.hull_least_squares import RunData
from hil.sim.dynamics import HullDynamics


def thrust_levels(vessel):
    """(largest forward thrust all thrusters give together [N], yaw moment of every thruster at that thrust,
    one side forward and the other back [N m]: two on a catamaran, all four on the IAcquaBot)."""
    from drivers.thrust_map import make_thrust_maps
    fwd = min(m.max_forward_n for m in make_thrust_maps(vessel))
    return fwd * len(vessel.thrusters), fwd * sum(abs(t.y_m) for t in vessel.thrusters)


def excitation(vessel, seed: int = 0, dt_s: float = 0.02, scale: float = 1.0):
    """(t_s, x_n, n_nm): about 220 s of segments (see the module docstring), `scale` x the vessel's levels."""
    x_max, n_max = thrust_levels(vessel)
    x_max, n_max = 0.6 * scale * x_max, 0.5 * scale * n_max
    rng = np.random.default_rng(seed)
    segs = []

    def seg(duration, fx, fn):
        t = np.arange(0.0, duration, dt_s)
        segs.append((np.broadcast_to(fx(t), t.shape).astype(float), np.broadcast_to(fn(t), t.shape).astype(float)))

    for level in (0.3, 0.6, 1.0):                                     # surge steps
        seg(20.0, lambda t, lv=level: lv * x_max, lambda t: 0.0)
    seg(8.0, lambda t: 0.0, lambda t: 0.0)                            # coast down
    for sign in (1.0, -1.0):                                          # fixed-moment turns, both ways
        seg(15.0, lambda t: 0.5 * x_max, lambda t, s=sign: s * 0.6 * n_max)
    seg(30.0, lambda t: 0.6 * x_max, lambda t: n_max * np.sin(2 * np.pi * t / 10.0))    # sinusoid
    seg(30.0, lambda t: 0.6 * x_max, lambda t: n_max * np.sign(np.sin(2 * np.pi * t / 6.0)))  # square
    bits_x = rng.integers(0, 2, 40)
    bits_n = rng.integers(0, 2, 40)                                   # PRBS, 1.5 s bits, on both channels
    seg(60.0, lambda t: x_max * (0.3 + 0.7 * bits_x[(t / 1.5).astype(int) % 40]),
        lambda t: n_max * (2 * bits_n[(t / 1.5).astype(int) % 40] - 1))
    x = np.concatenate([s[0] for s in segs])
    n = np.concatenate([s[1] for s in segs])
    return np.arange(len(x)) * dt_s, x, n


def plant_run(vessel, t_s, x_n, n_nm, substeps: int = 2) -> RunData:
    """True u, v, r of the vessel's own hull under the inputs, with the exact derivatives of the model."""
    hull = HullDynamics.for_vessel(vessel)
    dt = float(t_s[1] - t_s[0])
    state = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    u, v, r = (np.empty(len(t_s)) for _ in range(3))
    for k in range(len(t_s)):
        u[k], v[k], r[k] = state[3], state[4], state[5]
        for _ in range(substeps):
            state = hull.rk4_step(state, dt / substeps, float(x_n[k]), 0.0, float(n_nm[k]), 0.0, 0.0)
    # the model's own accelerations at each sample (what a perfect differentiator would give)
    m11, m22, m33 = hull.m11, hull.m22, hull.m33
    ud = (x_n + m22 * v * r - (hull.d_u + hull.d_uu * np.abs(u)) * u) / m11
    vd = (-m11 * u * r - (hull.d_v + hull.d_vv * np.abs(v)) * v) / m22
    rd = (n_nm - (m22 - m11) * u * v - (hull.d_r + hull.d_rr * np.abs(r)) * r) / m33
    return RunData(np.asarray(t_s, float), u, v, r, np.asarray(x_n, float), np.zeros(len(t_s)),
                   np.asarray(n_nm, float), ud, vd, rd)
