"""Per-thruster effectiveness: the thrust each thruster delivers over the thrust it is commanded, from the yaw motion.

Model (the vessel file's yaw equation), with e_i the effectiveness of thruster i (the same ahead and astern) and
b the yaw moment the file does not explain (wind, waves, a hull asymmetry) [N*m]:

    m33 r_dot - N_r r - N_rr |r| r + (m22 - m11) u v = sum_i e_i a_i T_i + b

a_i is thruster i's yaw arm [m] (fixed thrusters: -y_i; azimuth pods: x_i sin delta_i - y_i cos delta_i), T_i the
thrust commanded to it [N], lagged by its time constant. Both sides go through a first-order low-pass
(FILTER_S); r_dot = (r - lp(r)) / FILTER_S. Rows are taken only in steady straight running (|r| < STRAIGHT_RPS and
|r_dot| < STEADY_RPS2, the thrusters' moment within STEADY_MOMENT_FRACTION of `max_yaw_nm` of its low-pass,
mean |T_i| >= MIN_THRUST_FRACTION of `max_thrust_n`, all for SETTLE_S). A Kalman filter estimates
theta = (e_1 .. e_n, b) as a random walk (e_i by about EFFECTIVENESS_DRIFT within `memory_s`, b by
BIAS_DRIFT_FRACTION of `max_yaw_nm` per root second), with a pseudo-measurement mean(e) = 1 (MEAN_PIN_STD) on
every row: only the thrusters' ratios are estimated.

Judged: `relative` (e_i over the largest e of the thrusters not left out), once the std of e_i is under
EFFECTIVENESS_STD_GATE. A thruster's state (ok / weak / dead, thresholds weak_below and dead_below) changes only
after `hold_s` [s] of continuous evidence; it goes back up only above its threshold plus RECOVER_MARGIN.
Thrusters on the same arm (`groups`) cannot be told apart: a deficit is shared among them.
Why, and how well it works: docs/design-notes/thruster-health.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

FILTER_S = 1.0                 # low-pass of both sides of the yaw equation [s]
EFFECTIVENESS_PRIOR_STD = 0.3  # the thrusters work as filed, to within this, at the start
EFFECTIVENESS_DRIFT = 0.5      # std of the change of e within memory_s
EFFECTIVENESS_MAX_STD = 0.6    # the covariance of an unexcited e grows no further than this
EFFECTIVENESS_STD_GATE = 0.2   # e is judged once its std is under this
MEAN_PIN_STD = 0.01            # std of the pseudo-measurement mean(e) = 1
STRAIGHT_RPS = 0.1             # rows are taken below this yaw rate [rad/s] ...
STEADY_RPS2 = 0.02             # ... and this (low-passed) yaw acceleration [rad/s^2] ...
STEADY_MOMENT_FRACTION = 0.05  # ... with the thrusters' moment within this fraction of max_yaw_nm of its low-pass ...
MIN_THRUST_FRACTION = 0.15     # ... with the thrusters' mean |thrust| at least this fraction of their largest
SETTLE_S = 2.0                 # ... for this long (the heading loop has settled after a turn)
BIAS_PRIOR_FRACTION = 0.1      # std of b at the start, of the largest yaw moment
BIAS_DRIFT_FRACTION = 0.03     # std of b's change per second, of the largest yaw moment
NOISE_FRACTION = 0.02          # std of one row's residual, of the largest yaw moment
RECOVER_MARGIN = 0.1           # a weak or dead thruster is ok again above its threshold by this much
ARM_TOLERANCE_M = 0.01         # thrusters whose yaw arms differ by less than this cannot be told apart
MAX_GAP_S = 1.0                # a longer pause between updates restarts the low-pass (not the estimate)

OK, WEAK, DEAD = "ok", "weak", "dead"


@dataclass(frozen=True)
class ThrusterVerdict:
    """A thruster's state changed: `state` (ok, weak or dead) at `relative` effectiveness after `held_s`."""

    index: int
    name: str
    state: str
    relative: float
    effectiveness: float
    held_s: float


class ThrusterHealth:
    """See the module docstring. `update(...)` at the failsafe rate while the thrusters are driven; `pause()`
    while they are not (neutral, disarmed, output not vouched for); `leave_out(i)` while the allocator gives
    thruster i no thrust (its e is not judged then)."""

    def __init__(self, names: Sequence[str], xs_m: Sequence[float], ys_m: Sequence[float],
                 tau_s: Sequence[float], *, m11: float, m22: float, m33: float, n_r: float, n_rr: float,
                 max_yaw_nm: float, weak_below: float, dead_below: float, hold_s: float, memory_s: float,
                 max_thrust_n: float = 0.0):
        if not 0.0 <= dead_below < weak_below < 1.0:
            raise ValueError(f"thruster health: dead_below ({dead_below}) must be below weak_below ({weak_below}), "
                             f"both in [0, 1)")
        if not max_yaw_nm > 0.0:
            raise ValueError(f"thruster health: the thrusters make no yaw moment (max {max_yaw_nm} N*m)")
        self.names = tuple(names)
        n = len(self.names)
        self._xs = np.asarray(xs_m, dtype=float)
        self._ys = np.asarray(ys_m, dtype=float)
        self._tau = np.maximum(np.asarray(tau_s, dtype=float), 0.0)
        self.m11, self.m22, self.m33, self.n_r, self.n_rr = m11, m22, m33, n_r, n_rr
        self.weak_below, self.dead_below, self.hold_s, self.memory_s = weak_below, dead_below, hold_s, memory_s
        self.max_yaw_nm = max_yaw_nm
        self._min_thrust_n = MIN_THRUST_FRACTION * max_thrust_n
        self.groups: Tuple[Tuple[int, ...], ...] = _groups(self._ys)
        self.theta = np.concatenate([np.ones(n), [0.0]])
        self.P = np.diag([EFFECTIVENESS_PRIOR_STD ** 2] * n + [(BIAS_PRIOR_FRACTION * max_yaw_nm) ** 2])
        self._q = np.array([EFFECTIVENESS_DRIFT ** 2 / memory_s] * n + [(BIAS_DRIFT_FRACTION * max_yaw_nm) ** 2])
        self._r_var = (NOISE_FRACTION * max_yaw_nm) ** 2
        self.state = [OK] * n
        self._since: list = [None] * n        # (candidate state, since t_s)
        self._out = [False] * n
        self._t: Optional[float] = None
        self._steady_since: Optional[float] = None
        self._lag = np.zeros(n)               # commanded thrust through each thruster's lag [N]
        self._lp: Optional[np.ndarray] = None  # low-passed r, the hull terms and each a_i T_i

    @classmethod
    def for_vessel(cls, vessel, max_yaw_nm: float, max_thrust_n: float = 0.0) -> "ThrusterHealth":
        """The detector for a vessel file (its hull, thrusters and failsafe.thruster thresholds); max_thrust_n:
        a thruster's largest forward thrust [N] (rows below MIN_THRUST_FRACTION of it are not taken)."""
        h, c = vessel.hull, vessel.failsafe.thruster
        th = vessel.thrusters
        return cls([t.name for t in th], [t.x_m for t in th], [t.y_m for t in th],
                   [t.time_constant_s for t in th], m11=h.mass_kg - h.x_udot, m22=h.mass_kg - h.y_vdot,
                   m33=h.iz_kgm2 - h.n_rdot, n_r=h.n_r, n_rr=h.n_rr, max_yaw_nm=max_yaw_nm,
                   weak_below=c.weak_below, dead_below=c.dead_below, hold_s=c.hold_s, memory_s=c.memory_s,
                   max_thrust_n=max_thrust_n)

    # ------------------------------------------------------------------ figures
    @property
    def effectiveness(self) -> Tuple[float, ...]:
        """Each thruster's estimated delivered / commanded thrust (1: as filed; 0: nothing)."""
        return tuple(float(x) for x in self.theta[:len(self.names)])

    @property
    def std(self) -> Tuple[float, ...]:
        """The standard deviation of each effectiveness."""
        return tuple(float(math.sqrt(max(p, 0.0))) for p in np.diag(self.P)[:len(self.names)])

    @property
    def relative(self) -> Tuple[float, ...]:
        """Each effectiveness over the best one's (of those not left out; the best taken within [0.5, 2]), clipped
        to [0, 1.5] (see the module docstring)."""
        e = self.effectiveness
        ref = min(max(max((x for x, out in zip(e, self._out) if not out), default=1.0), 0.5), 2.0)
        return tuple(float(min(max(x / ref, 0.0), 1.5)) for x in e)

    def group_of(self, i: int) -> Tuple[int, ...]:
        """The thrusters that push like thruster i (itself included): not told apart by their motion alone."""
        return next(g for g in self.groups if i in g)

    # ------------------------------------------------------------------ inputs
    def leave_out(self, i: int, out: bool = True) -> None:
        self._out[i] = out

    def pause(self) -> None:
        """The thrusters are not driven: the next update starts the low-pass afresh."""
        self._t = None

    def update(self, t_s: float, yaw_rate_rps: float, surge_mps: float, sway_mps: float,
               thrust_n: Sequence[float], angle_rad: Optional[Sequence[float]] = None) -> list:
        """One row: the estimated yaw rate [rad/s], surge and sway [m/s] and the thrust commanded since the last
        update [N, + ahead] (pod angles [rad] for azimuth thrusters). Returns the ThrusterVerdicts of this call
        (state changes). Non-finite inputs are skipped (the low-pass restarts)."""
        T = np.asarray(thrust_n, dtype=float)
        if (len(T) != len(self.names) or not np.all(np.isfinite(T))
                or not all(math.isfinite(x) for x in (t_s, yaw_rate_rps, surge_mps, sway_mps))):
            self._t = None
            return []
        if angle_rad is not None:
            d = np.asarray(angle_rad, dtype=float)
            arms = self._xs * np.sin(d) - self._ys * np.cos(d)
        else:
            arms = -self._ys
        r, u, v = yaw_rate_rps, surge_mps, sway_mps
        damping = self.n_r * r + self.n_rr * abs(r) * r
        coupling = (self.m22 - self.m11) * u * v
        if self._t is None or not 0.0 < t_s - self._t <= MAX_GAP_S:
            self._t = t_s
            self._lag = T.copy()
            self._lp = np.concatenate([[r, damping, coupling], arms * self._lag])
            return []
        dt = t_s - self._t
        self._t = t_s
        self._lag += (T - self._lag) * np.where(self._tau > 0.0, 1.0 - np.exp(-dt / np.maximum(self._tau, 1e-9)),
                                                1.0)
        assert self._lp is not None               # set on the first update
        alpha = dt / (FILTER_S + dt)
        self._lp += alpha * (np.concatenate([[r, damping, coupling], arms * self._lag]) - self._lp)
        r_dot = (r - self._lp[0]) / FILTER_S
        moment = arms * self._lag
        if (abs(r) >= STRAIGHT_RPS or abs(r_dot) >= STEADY_RPS2
                or abs(float(np.sum(moment - self._lp[3:]))) >= STEADY_MOMENT_FRACTION * self.max_yaw_nm
                or float(np.mean(np.abs(self._lag))) < self._min_thrust_n):
            self._steady_since = None
            return self._judge(t_s)
        if self._steady_since is None:
            self._steady_since = t_s
        if t_s - self._steady_since < SETTLE_S:
            return self._judge(t_s)
        y = self.m33 * r_dot - self._lp[1] + self._lp[2]
        phi = np.concatenate([self._lp[3:], [1.0]])
        for i, out in enumerate(self._out):
            if out:
                phi[i] = 0.0              # left out by the allocator: its commanded thrust is zero anyway
        self._kalman(y, phi, dt)
        return self._judge(t_s)

    # ------------------------------------------------------------------ internals
    def _kalman(self, y: float, phi: np.ndarray, dt: float) -> None:
        P = self.P
        P[np.diag_indices_from(P)] += self._q * dt
        n = len(self.names)
        cap = EFFECTIVENESS_MAX_STD ** 2
        for i in range(n):
            if P[i, i] > cap:
                s = math.sqrt(cap / P[i, i])
                P[i, :] *= s
                P[:, i] *= s
        Pphi = P @ phi
        s_var = float(phi @ Pphi) + self._r_var
        k = Pphi / s_var
        self.theta += k * (y - float(phi @ self.theta))
        P = P - np.outer(k, Pphi)
        pin = np.concatenate([np.full(n, 1.0 / n), [0.0]])
        Ppin = P @ pin
        k = Ppin / (float(pin @ Ppin) + MEAN_PIN_STD ** 2)
        self.theta += k * (1.0 - float(pin @ self.theta))
        P = P - np.outer(k, Ppin)
        self.P = 0.5 * (P + P.T)

    def _judge(self, t_s: float) -> list:
        out = []
        rel, std = self.relative, self.std
        for i, name in enumerate(self.names):
            if self._out[i] or std[i] >= EFFECTIVENESS_STD_GATE:
                self._since[i] = None
                continue
            x = rel[i]
            cur = self.state[i]
            if x < self.dead_below:
                cand = DEAD
            elif x < self.weak_below:
                cand = WEAK if cur != DEAD or x >= self.dead_below + RECOVER_MARGIN else DEAD
            elif cur != OK and x < self.weak_below + RECOVER_MARGIN:
                cand = cur
            else:
                cand = OK
            if cand == cur:
                self._since[i] = None
                continue
            if self._since[i] is None or self._since[i][0] != cand:
                self._since[i] = (cand, t_s)
            held = t_s - self._since[i][1]
            if held >= self.hold_s:
                self.state[i] = cand
                self._since[i] = None
                out.append(ThrusterVerdict(i, name, cand, x, float(self.theta[i]), held))
        return out


def _groups(ys_m: np.ndarray) -> Tuple[Tuple[int, ...], ...]:
    """Thrusters on the same lateral arm (within ARM_TOLERANCE_M), in vessel order."""
    groups: list = []
    for i, y in enumerate(ys_m):
        for g in groups:
            if abs(ys_m[g[0]] - y) < ARM_TOLERANCE_M:
                g.append(i)
                break
        else:
            groups.append([i])
    return tuple(tuple(g) for g in groups)
