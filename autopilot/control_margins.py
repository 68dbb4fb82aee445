"""How wrong the vessel file may be before the heading loop loses its phase margin.

The heading PID (autopilot.control.HeadingController) is designed from the vessel file. On the true boat the
loop is, linearised about a straight course (Laplace variable s, rad/s):

    L(s) = C(s) G(s),   C(s) = Kp + Kd s + Ki / s          (gains from the FILE's m33, N_r)
    G(s) = k_t e^(-s T) / (s (m33' s + d') (tau' s + 1))   (the TRUE boat: m33', d', thruster lag tau')

with m33 = Iz - N_rdot, d = -N_r, k_t the true thrust over the table's, and T the loop's delay (one control
period of computation plus half a period of zero-order hold). `heading_phase_margin_deg` is 180 deg plus the
phase of L where |L| first falls through 1 (the worst crossing if there are several). `coefficient_margins`
scales one coefficient of the true boat at a time and reports the factor range over which the margin stays
at or above `required_deg` (45 deg): the figure `autopilot check` prints. Pure numpy, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from autopilot.config import VesselConfig

OMEGA_RPS = np.logspace(-3, 3, 4000)
FACTORS = np.exp(np.linspace(math.log(0.05), math.log(20.0), 241))
COEFFICIENTS = ("iz", "n_rdot", "n_r", "thrust", "tau")


def heading_phase_margin_deg(vessel: VesselConfig, iz: float = 1.0, n_rdot: float = 1.0, n_r: float = 1.0,
                             thrust: float = 1.0, tau: float = 1.0) -> Optional[float]:
    """Phase margin [deg] of the heading loop designed from `vessel` on a boat whose coefficients are the
    file's times the given factors; None when |L| never crosses 1 (no crossover in 1e-3..1e3 rad/s)."""
    pm = _phase_margins_deg(vessel, iz=iz, n_rdot=n_rdot, n_r=n_r, thrust=thrust, tau=tau)[0]
    return None if math.isnan(pm) else float(pm)


def _phase_margins_deg(vessel: VesselConfig, **factors) -> np.ndarray:
    """heading_phase_margin_deg for many boats at once: each factor a scalar or a 1-D array (all arrays of one
    length K); returns K margins [deg], NaN where |L| never crosses 1."""
    f = {k: np.atleast_1d(np.asarray(factors.get(k, 1.0), float))[:, None] for k in COEFFICIENTS}
    h, cfg = vessel.hull, vessel.control.heading
    m33 = h.iz_kgm2 - h.n_rdot
    d = -h.n_r
    w, z = cfg.omega_n_rps, cfg.zeta
    kp = m33 * w * w
    kd = max(0.0, 2.0 * z * w * m33 - d)
    ki = kp / cfg.integral_time_s if cfg.integral_time_s > 0 else 0.0
    m33_true = h.iz_kgm2 * f["iz"] - h.n_rdot * f["n_rdot"]
    d_true = d * f["n_r"]
    tau_true = max(t.time_constant_s for t in vessel.thrusters) * f["tau"]
    delay_s = 1.5 / vessel.control.loop_rate_hz
    w_rps = OMEGA_RPS[None, :]
    # gain and phase of L(jw) factor by factor (real arithmetic, no unwrapping): C, the delay, the integrator,
    # the hull's first-order lag and the thruster's
    mag = (np.hypot(kp, kd * w_rps - ki / w_rps) * f["thrust"]
           / (w_rps * np.hypot(m33_true * w_rps, d_true) * np.hypot(tau_true * w_rps, 1.0)))
    phase_rad = (np.arctan2(kd * w_rps - ki / w_rps, kp) - w_rps * delay_s - math.pi / 2
                 - np.arctan2(m33_true * w_rps, d_true) - np.arctan(tau_true * w_rps))
    down = (mag[:, :-1] >= 1.0) & (mag[:, 1:] < 1.0)
    # each margin brought into (-180, 180]
    margin = ((np.degrees(phase_rad[:, :-1]) + 360.0) % 360.0) - 180.0
    return np.where(down.any(axis=1), np.where(down, margin, np.inf).min(axis=1), np.nan)


@dataclass(frozen=True)
class CoefficientMargin:
    coefficient: str
    low: Optional[float]        # smallest factor with PM >= required (None: fails already at 1)
    high: Optional[float]
    low_limited: bool           # True: the margin held down to the smallest factor tried
    high_limited: bool

    def describe(self) -> str:
        if self.low is None:
            return f"{self.coefficient}: below the required margin even as in the file"
        lo = f"<= x{self.low:.2g}" if self.low_limited else f"x{self.low:.2g}"
        hi = f">= x{self.high:.2g}" if self.high_limited else f"x{self.high:.2g}"
        return f"{self.coefficient} {lo} .. {hi}"


def coefficient_margins(vessel: VesselConfig, required_deg: float = 45.0) -> list:
    """For each of COEFFICIENTS alone: the factor range around 1 over which the phase margin stays >=
    required_deg (scanned on a log grid from x0.05 to x20)."""
    out = []
    one = int(np.argmin(np.abs(FACTORS - 1.0)))
    for name in COEFFICIENTS:
        pm = _phase_margins_deg(vessel, **{name: FACTORS})
        ok = ~np.isnan(pm) & (np.nan_to_num(pm, nan=-np.inf) >= required_deg)
        if not ok[one]:
            out.append(CoefficientMargin(name, None, None, False, False))
            continue
        lo = one
        while lo > 0 and ok[lo - 1]:
            lo -= 1
        hi = one
        while hi < len(FACTORS) - 1 and ok[hi + 1]:
            hi += 1
        out.append(CoefficientMargin(name, float(FACTORS[lo]), float(FACTORS[hi]), lo == 0, hi == len(FACTORS) - 1))
    return out
