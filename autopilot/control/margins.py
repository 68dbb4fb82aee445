"""How wrong the vessel file may be before the heading loop loses its phase margin.

The heading PID (autopilot.control.heading_speed.HeadingController) is designed from the vessel file's yaw model. On the
true boat the loop is, linearised about a straight course at speed U through the water (Laplace variable s,
rad/s):

    L(s) = C(s) k_t e^(-s T) G_r(s) / (s (tau' s + 1)),   C(s) = Kp + Kd s + Ki / s   (gains from the FILE)
    G_r(s) = (m22' s + d_v') / ((m33' s + d_r')(m22' s + d_v') - (m22' - m11') m11' U^2)

G_r is the yaw rate per unit yaw moment of the TRUE boat's sway-yaw pair (Fossen's 3-DOF model as the
plant flies it: m22 v_dot = -m11 U r - d_v v, m33 r_dot = tau - (m22 - m11) U v - d_r r), with m11 = m -
X_udot, m22 = m - Y_vdot, m33 = Iz - N_rdot, d_v = -Y_v, d_r = -N_r, the thruster lag tau', k_t the true
thrust over the table's and T the loop's delay (one control period of computation plus half a period of
zero-order hold). At rest (U = 0) G_r is the yaw model alone, 1 / (m33 s + d_r). Under way the Munk moment
(m22 - m11) U v of the sway a turn makes acts against the yaw damping; on a hull with m22 > m11 it can undo it
(the hull is then directionally unstable: d_r d_v < (m22 - m11) m11 U^2).

`heading_phase_margin_deg` is the least phase lag that, added to the loop, brings L(jw) onto -1 at one of the
frequencies where |L| = 1, when the loop is stable as it is (its closed-loop poles, with a first-order Pade
delay, all in the left half plane); -inf when it is not. `coefficient_margins` scales one coefficient of the
true boat at a time and reports the factor range over which the margin stays at or above `required_deg` (45
deg): the figure `autopilot check` prints, at rest and at the hull's max_speed_mps. Pure numpy, no I/O.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from autopilot.control.heading_speed import heading_pd_gains
from autopilot.vocab.config import VesselConfig

OMEGA_RPS = np.logspace(-3, 3, 4000)
FACTORS = np.exp(np.linspace(math.log(0.05), math.log(20.0), 241))
YAW_COEFFICIENTS = ("iz", "n_rdot", "n_r", "thrust", "tau")
SWAY_COEFFICIENTS = ("x_udot", "y_vdot", "y_v")     # enter the loop only under way
COEFFICIENTS = YAW_COEFFICIENTS + SWAY_COEFFICIENTS
REQUIRED_MARGIN_DEG = 45.0        # the phase margin `autopilot check` asks of the heading loop


def heading_phase_margin_deg(vessel: VesselConfig, speed_mps: float = 0.0, **factors: float) -> float:
    """Phase margin [deg] of the heading loop designed from `vessel` on a boat whose coefficients (names in
    COEFFICIENTS) are the file's times the given factors, at speed_mps through the water; -inf when that loop
    is unstable, inf when |L| never crosses 1 (in 1e-3..1e3 rad/s)."""
    unknown = set(factors) - set(COEFFICIENTS)
    if unknown:
        raise ValueError(f"heading_phase_margin_deg: unknown coefficient(s) {sorted(unknown)}")
    return float(_phase_margins_deg(vessel, speed_mps, **factors)[0])


def _phase_margins_deg(vessel: VesselConfig, speed_mps: float, **factors) -> np.ndarray:
    """heading_phase_margin_deg for many boats at once: each factor a scalar or a 1-D array (all arrays of one
    length K); returns K margins [deg]."""
    f = {k: np.atleast_1d(np.asarray(factors.get(k, 1.0), float))[:, None] for k in COEFFICIENTS}
    h, cfg = vessel.hull, vessel.control.heading
    m33_file = h.iz_kgm2 - h.n_rdot
    w, z = cfg.omega_n_rps, cfg.zeta
    kp, kd = heading_pd_gains(m33_file, -h.n_r, w, z)
    ki = kp / cfg.integral_time_s if cfg.integral_time_s > 0 else 0.0
    m11 = h.mass_kg - h.x_udot * f["x_udot"]
    m22 = h.mass_kg - h.y_vdot * f["y_vdot"]
    m33 = h.iz_kgm2 * f["iz"] - h.n_rdot * f["n_rdot"]
    d_r = -h.n_r * f["n_r"]
    d_v = -h.y_v * f["y_v"]
    munk = (m22 - m11) * m11 * speed_mps * speed_mps
    tau = max(t.time_constant_s for t in vessel.thrusters) * f["tau"]
    kt = f["thrust"]
    delay_s = 1.5 / vessel.control.loop_rate_hz
    s = 1j * OMEGA_RPS[None, :]
    sway = m22 * s + d_v
    loop = ((kp + kd * s + ki / s) * kt * np.exp(-s * delay_s) * sway
            / (s * (tau * s + 1.0) * ((m33 * s + d_r) * sway - munk)))
    mag = np.abs(loop)
    crossing = (mag[:, :-1] >= 1.0) != (mag[:, 1:] >= 1.0)
    lag_deg = (np.degrees(np.angle(loop[:, :-1])) + 180.0) % 360.0
    margin = np.where(crossing.any(axis=1), np.where(crossing, lag_deg, np.inf).min(axis=1), np.inf)
    stable = np.array([_closed_loop_stable(kp, kd, ki, kt_k, delay_s, tau_k, m33_k, d_r_k, m22_k, d_v_k, munk_k)
                       for kt_k, tau_k, m33_k, d_r_k, m22_k, d_v_k, munk_k in
                       np.broadcast(kt[:, 0], tau[:, 0], m33[:, 0], d_r[:, 0], m22[:, 0], d_v[:, 0], munk[:, 0])])
    return np.where(stable, margin, -np.inf)


def _closed_loop_stable(kp, kd, ki, kt, delay_s, tau, m33, d_r, m22, d_v, munk) -> bool:
    """All roots of 1 + L(s) = 0 in the left half plane, the delay as (1 - sT/2) / (1 + sT/2). Without the Munk
    term the sway factor cancels from L and is left out (it would put a root of its own, -d_v / m22, in)."""
    P = np.polynomial.polynomial
    sway = [d_v, m22] if munk != 0.0 else [1.0]
    num = P.polymul(P.polymul([ki * kt, kp * kt, kd * kt], sway), [1.0, -delay_s / 2.0])
    yaw = P.polysub(P.polymul([d_r, m33], sway), [munk])
    den = P.polymul(P.polymul(P.polymul([0.0, 0.0, 1.0], [1.0, tau]), [1.0, delay_s / 2.0]), yaw)
    roots = P.polyroots(P.polyadd(den, num))
    return bool(np.all(roots.real < 0.0))


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


def coefficient_margins(vessel: VesselConfig, required_deg: float = REQUIRED_MARGIN_DEG,
                        speed_mps: float = 0.0) -> list:
    """For each coefficient alone (YAW_COEFFICIENTS at rest, all of COEFFICIENTS under way): the factor range
    around 1 over which the phase margin at speed_mps stays >= required_deg (scanned on a log grid from x0.05
    to x20)."""
    out = []
    one = int(np.argmin(np.abs(FACTORS - 1.0)))
    for name in (COEFFICIENTS if speed_mps > 0.0 else YAW_COEFFICIENTS):
        ok = _phase_margins_deg(vessel, speed_mps, **{name: FACTORS}) >= required_deg
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


def margin_kept_to_mps(vessel: VesselConfig, up_to_mps: float, required_deg: float = REQUIRED_MARGIN_DEG,
                       steps: int = 72) -> Optional[float]:
    """The highest speed [m/s] on a grid of `steps` intervals from rest to up_to_mps below which the loop as
    filed keeps required_deg at every grid speed; None when it does not even at rest."""
    kept = None
    for u in np.linspace(0.0, up_to_mps, steps + 1):
        if heading_phase_margin_deg(vessel, float(u)) < required_deg:
            break
        kept = float(u)
    return kept


def zeta_keeping_margin(vessel: VesselConfig, speed_mps: float, required_deg: float = REQUIRED_MARGIN_DEG,
                        zeta_max: float = 3.0) -> Optional[float]:
    """The least control.heading.zeta, from the file's up in steps of 0.05 to zeta_max, with which the loop keeps
    required_deg both at rest and at speed_mps [m/s]; None when none does."""
    heading = vessel.control.heading
    zeta = heading.zeta
    while zeta <= zeta_max:
        tried = dataclasses.replace(vessel, control=dataclasses.replace(
            vessel.control, heading=dataclasses.replace(heading, zeta=zeta)))
        if min(heading_phase_margin_deg(tried), heading_phase_margin_deg(tried, speed_mps)) >= required_deg:
            return zeta
        zeta = round(zeta + 0.05, 2)
    return None
