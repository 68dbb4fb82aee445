"""Heading and surge-speed controllers: plain classes with explicit state, time passed in.

Signs (body FRD): yaw moment positive turns to starboard (heading increases); surge force positive pushes
forward. Heading in radians, clockwise from north; errors are wrapped with autopilot.vocab.angles.wrap_pi.

Both controllers:
  - take the runner's time t_s; the first call after construction or reset() has no previous time and does
    not integrate (no spike); a call with t_s not after the previous one (dt <= 0) does not integrate
    either, and a gap longer than MAX_DT_S integrates as MAX_DT_S (a stalled loop must not dump a large
    integral step when it resumes);
  - guard the integral against windup: it grows only until the output reaches its limit and never further
    into saturation, while a move back from the limit is always allowed; it is also clamped;
  - return 0 for a non-finite measurement or reference and leave their state untouched.
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.control.yaw_adaptation import YawModelEstimator
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import VesselConfig

MAX_DT_S = 0.5      # longest time step integrated in one call [s]


def _finite(*xs) -> bool:
    return all(math.isfinite(x) for x in xs)


def _step_dt(t_prev: Optional[float], t_s: float) -> float:
    if t_prev is None:
        return 0.0
    dt = t_s - t_prev
    if dt <= 0.0:
        return 0.0
    return dt if dt < MAX_DT_S else MAX_DT_S


def heading_pd_gains(m_kgm2: float, d_nms: float, omega_n_rps: float, zeta: float) -> tuple[float, float]:
    """(Kp [N*m/rad], Kd [N*m/(rad/s)]) placing the poles of m r_dot = -d r + tau at omega_n, zeta: Kp = m w^2,
    Kd = max(0, 2 z w m - d); m = Iz - N_rdot > 0, d = -N_r >= 0 (HeadingController's design)."""
    return m_kgm2 * omega_n_rps * omega_n_rps, max(0.0, 2.0 * zeta * omega_n_rps * m_kgm2 - d_nms)


class HeadingController:
    """Heading PID by pole placement on the yaw model (Iz - N_rdot) r_dot - N_r r = tau_r (Fossen).

    With m = Iz - N_rdot, d = -N_r >= 0, natural frequency w and damping ratio z from control.heading:
        Kp = m w^2,  Kd = max(0, 2 z w m - d),  Ki = Kp / integral_time_s (0 disables)
        tau = -Kp e - Kd (r - r_ref) - Ki int(e) + d r_ref - N_rr r_ref |r_ref|,  e = wrap(psi - psi_ref)
    The derivative acts on the measured yaw rate (relative to the reference rate), so a step of the heading
    reference gives no derivative kick. The last two terms feed forward the damping moment of the reference
    yaw rate. The integral term is limited to integral_limit_frac * max_yaw_nm; the output to +-max_yaw_nm.

    Besides the anti-windup on saturation, the integral is held while the heading is already closing on the
    reference fast enough to get there within INTEGRAL_HOLD_PERIODS / w seconds at the present rate: a
    setpoint step is not integrated, a steady offset from a disturbance (which does not close by itself) is.

    Adaptive (control.heading.adaptive): m and d are those the boat shows.
    autopilot.control.yaw_adaptation.YawModelEstimator fits the yaw response to the moments commanded; once its fit
    is trusted, Kp, Kd and the fed-forward damping are designed on its m_hat and d_hat (each within x/÷3 of
    the file's). The integral and the output limits are as above.
    Why: docs/design-notes/core.md, "Control".
    """

    INTEGRAL_HOLD_PERIODS = 4.0

    def __init__(self, vessel: VesselConfig, max_yaw_nm: float):
        if not (math.isfinite(max_yaw_nm) and max_yaw_nm > 0.0):
            raise ValueError(f"HeadingController: max_yaw_nm must be a positive number, got {max_yaw_nm!r}")
        hull, cfg = vessel.hull, vessel.control.heading
        m = hull.iz_kgm2 - hull.n_rdot
        d = -hull.n_r
        self._w, self._z, self._ti = cfg.omega_n_rps, cfg.zeta, cfg.integral_time_s
        self.max_yaw_nm = float(max_yaw_nm)
        self._m_file, self._d_file = m, d
        self._design(m, d)
        self.integral_limit_nm = cfg.integral_limit_frac * self.max_yaw_nm
        self._drr = -hull.n_rr
        self._hold_s = self.INTEGRAL_HOLD_PERIODS / self._w
        lag = max((t.time_constant_s for t in vessel.thrusters), default=0.0)
        self.yaw_model = (YawModelEstimator(m, d, self.max_yaw_nm, drr_nms2=self._drr, thrust_lag_s=lag)
                          if cfg.adaptive else None)
        self._drr_file = self._drr
        self._last_out = 0.0
        self._rows_seen = 0           # the yaw model's rows when the gains were last designed on it
        self.reset()

    def redesign(self) -> None:
        """Gains again from the present bandwidth, damping and integral time (after a retune), on the learned
        yaw model when it is trusted, else on the file's."""
        self._design_on_yaw_model()
        self._hold_s = self.INTEGRAL_HOLD_PERIODS / self._w

    def _design_on_yaw_model(self) -> None:
        ym = self.yaw_model
        if ym is not None and ym.trusted:
            self._design(ym.m_hat, ym.d_hat)
            self._drr = ym.drr_hat
        else:
            self._design(self._m_file, self._d_file)
            self._drr = self._drr_file

    def _design(self, m: float, d: float) -> None:
        """Gains by pole placement on m r_dot = -d r + tau (see the class docstring)."""
        self.kp, self.kd = heading_pd_gains(m, d, self._w, self._z)
        self.ki = self.kp / self._ti if self._ti > 0.0 else 0.0   # N*m/(rad*s)
        self._d = d

    def reset(self) -> None:
        """Forget the integral and the previous time (e.g. on a mode change)."""
        self.integral_nm = 0.0        # the integral term's contribution to the output [N*m]
        self._t_prev: Optional[float] = None

    def delivered(self, yaw_nm: float) -> None:
        """The yaw moment [N*m] the allocator gave for this cycle's output: less than asked when the thrusters
        saturate (autopilot/control/allocation.py). The yaw model learns from it."""
        if math.isfinite(yaw_nm):
            self._last_out = float(yaw_nm)

    def update(self, t_s: float, heading_rad: float, yaw_rate_rps: float, heading_ref_rad: float,
               yaw_rate_ref_rps: float = 0.0) -> float:
        """Yaw moment [N*m], positive turns to starboard, within +-max_yaw_nm."""
        if not _finite(t_s, heading_rad, yaw_rate_rps, heading_ref_rad, yaw_rate_ref_rps):
            return 0.0
        dt = _step_dt(self._t_prev, t_s)
        if self._t_prev is None or t_s > self._t_prev:
            self._t_prev = t_s
        ym = self.yaw_model
        if ym is not None and dt > 0.0:
            ym.update(t_s, yaw_rate_rps, self._last_out)
            if ym.rows != self._rows_seen:        # the fit moves only with a new row (every SAMPLE_S)
                self._rows_seen = ym.rows
                self._design_on_yaw_model()
        e = wrap_pi(heading_rad - heading_ref_rad)
        r_ref = yaw_rate_ref_rps
        r_err = yaw_rate_rps - r_ref
        u_pd = -self.kp * e - self.kd * r_err + self._d * r_ref + self._drr * r_ref * abs(r_ref)
        lim = self.max_yaw_nm
        closing = e * r_err < 0.0 and abs(e) < abs(r_err) * self._hold_s
        if dt > 0.0 and self.ki > 0.0 and not closing:
            cand = self.integral_nm - self.ki * e * dt
            ilim = self.integral_limit_nm
            cand = -ilim if cand < -ilim else ilim if cand > ilim else cand
            self.integral_nm = _windup_guard(self.integral_nm, cand, u_pd, -lim, lim)
        u = u_pd + self.integral_nm
        u = -lim if u < -lim else lim if u > lim else u
        self._last_out = u
        return u


class SpeedController:
    """Surge-speed PI with model feed-forward (Fossen):
        tau_u = (m - X_udot)(u_d_dot - Kp e - Ki int(e)) - X_u u_d - X_u|u| u_d|u_d|,   e = u - u_d
    (Fossen signs: X_u, X_u|u| <= 0, so the last two terms are the drag to overcome). The drag is fed forward
    at the measured speed u_ff, but never beyond the reference's (u_ff = min(u, u_d) going ahead, max going
    astern): no drag compensation from a measured speed above the reference (that is positive feedback).
    The reference u_d is the requested surge speed ramped at control.speed.accel_limit_mps2, starting from the
    measured speed on the first call, and u_d_dot is that ramp's rate. Requests beyond +-hull.max_speed_mps are
    clamped to it. The output is clamped to [min_surge_n, max_surge_n]; the integral term to the width of that
    range.
    Why: docs/design-notes/core.md, "Control".
    """

    def __init__(self, vessel: VesselConfig, max_surge_n: float, min_surge_n: float):
        if not (_finite(max_surge_n, min_surge_n) and min_surge_n <= 0.0 < max_surge_n):
            raise ValueError("SpeedController: need min_surge_n <= 0 < max_surge_n, got "
                             f"{min_surge_n!r}, {max_surge_n!r}")
        hull, cfg = vessel.hull, vessel.control.speed
        self.mass_kg = hull.mass_kg - hull.x_udot
        self.kp = cfg.kp_per_s
        self.ki = cfg.ki_per_s2
        self.accel_limit_mps2 = cfg.accel_limit_mps2
        self.max_speed_mps = hull.max_speed_mps
        self.max_surge_n = float(max_surge_n)
        self.min_surge_n = float(min_surge_n)
        self._xu = hull.x_u
        self._xuu = hull.x_uu
        self.reset()

    def reset(self) -> None:
        """Forget the integral, the ramped reference and the previous time."""
        self.integral_m = 0.0         # int(e) dt [m]
        self.surge_ref_ramped_mps: Optional[float] = None
        self._t_prev: Optional[float] = None

    def update(self, t_s: float, surge_mps: float, surge_ref_mps: float) -> float:
        """Surge force [N], positive forward, within [min_surge_n, max_surge_n]."""
        if not _finite(t_s, surge_mps, surge_ref_mps):
            return 0.0
        dt = _step_dt(self._t_prev, t_s)
        if self._t_prev is None or t_s > self._t_prev:
            self._t_prev = t_s
        vmax = self.max_speed_mps
        target = -vmax if surge_ref_mps < -vmax else vmax if surge_ref_mps > vmax else surge_ref_mps
        u = surge_mps
        if self.surge_ref_ramped_mps is None:
            self.surge_ref_ramped_mps = u if abs(u) < vmax else math.copysign(vmax, u)
        udot_d = 0.0
        if dt > 0.0:
            step_max = self.accel_limit_mps2 * dt
            step = target - self.surge_ref_ramped_mps
            step = -step_max if step < -step_max else step_max if step > step_max else step
            self.surge_ref_ramped_mps += step
            udot_d = step / dt
        e = u - self.surge_ref_ramped_mps
        m = self.mass_kg
        # drag fed forward at the measured speed, but never beyond the reference's (see the class docstring)
        u_ref = self.surge_ref_ramped_mps
        u_ff = min(u, u_ref) if u_ref >= 0.0 else max(u, u_ref)
        u_pd = m * (udot_d - self.kp * e) - self._xu * u_ff - self._xuu * u_ff * abs(u_ff)
        lo, hi = self.min_surge_n, self.max_surge_n
        if dt > 0.0 and self.ki > 0.0:
            gain = -m * self.ki                           # N per (m of integrated error)
            ilim = hi - lo
            cand = gain * (self.integral_m + e * dt)
            cand = -ilim if cand < -ilim else ilim if cand > ilim else cand
            self.integral_m = _windup_guard(gain * self.integral_m, cand, u_pd, lo, hi) / gain
        out = u_pd - m * self.ki * self.integral_m
        return _clamp(out, lo, hi)


def _windup_guard(old: float, cand: float, u_pd: float, lo: float, hi: float) -> float:
    """Anti-windup by clamping: the integral term moves from `old` toward `cand` only as far as keeps the
    output u_pd + term within [lo, hi]; a move back from a limit is always allowed."""
    if u_pd + cand > hi:
        return min(cand, max(old, hi - u_pd))
    if u_pd + cand < lo:
        return max(cand, min(old, lo - u_pd))
    return cand


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x
