"""Surge-speed and yaw-rate control through the hull model (inverse dynamics; papers 000 §5.1 and 002 §3.2-3.3).

With the vessel file's diagonal model (m11 = m - X_udot, m22 = m - Y_vdot, m33 = Iz - N_rdot, damping as positive
numbers d = -X_u etc.), for surge u, sway v, yaw rate r (body FRD, r positive turning to starboard):
    gamma_u = u_d_dot - kp_u (u - u_d) - ki_u int(u - u_d)
    gamma_r = r_d_dot - kp_r (r - r_d) - ki_r int(r - r_d)
    tau_u = m11 gamma_u - m22 v r            + (d_u + d_uu |u_f|) u_f
    tau_r = m33 gamma_r + (m22 - m11) u v    + (d_r + d_rr |r_f|) r_f
the Coriolis/centripetal terms C(nu)nu of the plant (hil/sim/dynamics.py, Munk moment included) and its damping
D(nu)nu, so the closed loop is e_dot = -kp e - ki int(e) on each axis when the model is right. The sway force is
dropped: the boat is underactuated. With ki = 0 this is paper 000's law (K = diag(10, ., 15) there); with
kp = 2 lambda, ki = lambda^2 it is paper 002's PI with model feed-forward (lambda_u = 1.4, lambda_r = 3.5 there).

The damping is compensated at u_f = the measured speed clamped between 0 and the reference (likewise r_f): only
for motion the reference asks for. Compensating drag at a measured speed beyond the reference, or of the wrong
sign, is positive feedback: on a hull with less drag than its file it removes damping the boat has (the same
guard as control.SpeedController).

(u_d, r_d) come from second-order reference models (autopilot.control.reference_models; paper 002 Table 3,
w_u = 1.3, w_r = 3 rad/s) or, with the reference model off, straight from the command (rates zero).
Requests are clamped to +-hull.max_speed_mps and +-max_yaw_rate_rps. Outputs: surge force [N] within
[min_surge_n, max_surge_n], yaw moment [N*m] within +-max_yaw_nm; the integrals stop growing into a limit
(clamping anti-windup) and each is bounded to its output's range. Time is passed in; the first call does not
integrate; a non-finite input gives a zero wrench and leaves the state untouched.
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.control.heading_speed import _finite, _step_dt, _windup_guard
from autopilot.control.reference_models import SecondOrderReference
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.types import Wrench


def _between_zero_and(x: float, ref: float) -> float:
    lo, hi = (0.0, ref) if ref >= 0.0 else (ref, 0.0)
    return lo if x < lo else hi if x > hi else x


class VelocityController:
    """(u_ref, r_ref) -> Wrench through the hull model; see the module docstring for the law and the limits."""

    def __init__(self, vessel: VesselConfig, max_surge_n: float, min_surge_n: float, max_yaw_nm: float):
        if not (_finite(max_surge_n, min_surge_n, max_yaw_nm) and min_surge_n <= 0.0 < max_surge_n
                and max_yaw_nm > 0.0):
            raise ValueError("VelocityController: need min_surge_n <= 0 < max_surge_n and max_yaw_nm > 0, got "
                             f"{min_surge_n!r}, {max_surge_n!r}, {max_yaw_nm!r}")
        h, cfg = vessel.hull, vessel.control.velocity
        self.m11, self.m22, self.m33 = h.mass_kg - h.x_udot, h.mass_kg - h.y_vdot, h.iz_kgm2 - h.n_rdot
        self.d_u, self.d_uu, self.d_r, self.d_rr = -h.x_u, -h.x_uu, -h.n_r, -h.n_rr
        self.kp_u, self.ki_u = cfg.kp_u_per_s, cfg.ki_u_per_s2
        self.kp_r, self.ki_r = cfg.kp_r_per_s, cfg.ki_r_per_s2
        self.max_speed_mps = h.max_speed_mps
        self.max_yaw_rate_rps = math.radians(cfg.max_yaw_rate_dps)
        self.max_surge_n, self.min_surge_n, self.max_yaw_nm = float(max_surge_n), float(min_surge_n), float(max_yaw_nm)
        self._ref_u: Optional[SecondOrderReference] = None
        self._ref_r: Optional[SecondOrderReference] = None
        if cfg.reference_model:
            self._ref_u = SecondOrderReference(cfg.omega_u_rps, cfg.zeta)
            self._ref_r = SecondOrderReference(cfg.omega_r_rps, cfg.zeta)
        self.reset()

    def reset(self) -> None:
        """Forget the integrals, the reference models' state and the previous time (e.g. on a mode change)."""
        self.integral_u_n = 0.0       # the surge integral term's contribution to the output [N]
        self.integral_r_nm = 0.0      # the yaw integral term's contribution [N*m]
        self.surge_ref_mps = 0.0      # the reference actually followed (after the reference model)
        self.yaw_rate_ref_rps = 0.0
        self._t_prev: Optional[float] = None
        for ref in (self._ref_u, self._ref_r):
            if ref is not None:
                ref.reset()

    def update(self, t_s: float, surge_mps: float, sway_mps: float, yaw_rate_rps: float,
               surge_cmd_mps: float, yaw_rate_cmd_rps: float, prefilter: bool = True) -> Wrench:
        """Wrench for the commanded surge speed [m/s] and yaw rate [rad/s, + to starboard] at time t_s [s].
        prefilter False: follow the command as given (an outer loop that already shapes it), the reference
        models then restart from the measured values when they are next used."""
        if not _finite(t_s, surge_mps, sway_mps, yaw_rate_rps, surge_cmd_mps, yaw_rate_cmd_rps):
            return Wrench(0.0, 0.0)
        dt = _step_dt(self._t_prev, t_s)
        if self._t_prev is None or t_s > self._t_prev:
            self._t_prev = t_s
        u, v, r = surge_mps, sway_mps, yaw_rate_rps
        uc = max(-self.max_speed_mps, min(self.max_speed_mps, surge_cmd_mps))
        rc = max(-self.max_yaw_rate_rps, min(self.max_yaw_rate_rps, yaw_rate_cmd_rps))
        use_ref = prefilter and self._ref_u is not None
        if not use_ref and self._ref_u is not None:
            assert self._ref_r is not None        # made together with _ref_u
            self._ref_u.reset()
            self._ref_r.reset()
        if use_ref:
            assert self._ref_u is not None and self._ref_r is not None   # use_ref: made (together)
            ud, ud_dot = self._ref_u.update(t_s, uc, u)
            rd, rd_dot = self._ref_r.update(t_s, rc, r)
        else:
            ud, ud_dot = uc, 0.0
            rd, rd_dot = rc, 0.0
        self.surge_ref_mps, self.yaw_rate_ref_rps = ud, rd

        uf, rf = _between_zero_and(u, ud), _between_zero_and(r, rd)
        eu, er = u - ud, r - rd
        pd_u = (self.m11 * (ud_dot - self.kp_u * eu) - self.m22 * v * r
                + (self.d_u + self.d_uu * abs(uf)) * uf)
        pd_r = (self.m33 * (rd_dot - self.kp_r * er) + (self.m22 - self.m11) * u * v
                + (self.d_r + self.d_rr * abs(rf)) * rf)
        lo, hi, ylim = self.min_surge_n, self.max_surge_n, self.max_yaw_nm
        if dt > 0.0:
            if self.ki_u > 0.0:
                cand = self.integral_u_n - self.m11 * self.ki_u * eu * dt
                cand = max(lo - hi, min(hi - lo, cand))
                self.integral_u_n = _windup_guard(self.integral_u_n, cand, pd_u, lo, hi)
            if self.ki_r > 0.0:
                cand = self.integral_r_nm - self.m33 * self.ki_r * er * dt
                cand = max(-2.0 * ylim, min(2.0 * ylim, cand))
                self.integral_r_nm = _windup_guard(self.integral_r_nm, cand, pd_r, -ylim, ylim)
        tau_u = max(lo, min(hi, pd_u + self.integral_u_n))
        tau_r = max(-ylim, min(ylim, pd_r + self.integral_r_nm))
        return Wrench(tau_u, tau_r)
