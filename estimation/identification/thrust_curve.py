"""Thruster curve from bench samples: a generalised logistic (Richards) curve per side, fitted by least squares.

Regression form (paper 000, Saldarriaga-Mesa et al., Robotics 2025, Eq. 16), with the command
cmd = (pulse_us - neutral_pulse_us) / half_range_us (dimensionless, -1..1 over 1100-1900 us with the defaults):

    T(pulse) = 0                                                   dead_zone_us[0] <= pulse <= dead_zone_us[1]
    T(pulse) = A_f + (K_f - A_f) / (C_f + exp(-B_f (cmd - M_f)))^(1/v_f)      pulse > dead_zone_us[1]  (forward)
    T(pulse) = A_r + (K_r - A_r) / (C_r + exp(-B_r (cmd - M_r)))^(1/v_r)      pulse < dead_zone_us[0]  (reverse)
    then clipped to [-max_reverse_n, max_forward_n]

T in newtons, positive = forward thrust (pulses above neutral), negative = reverse. B > 0 on both sides: thrust
rises with the pulse everywhere. The dead zone is a pulse interval estimated from the data (the paper writes
|cmd| <= 0.01).

Free per side: the outer parameter (K_f > 0 forward, A_r < 0 reverse), B, v and C, within bounds
(`OUTER_BOUND_FACTOR` times the side's largest measured thrust, B in [0.1, 30], v in [0.05, 10], C in
[0.01, 20]). Held: M at the paper's value (0 forward, -1 reverse; it is redundant with C and K) and the inner
asymptote (A_f forward, K_r reverse) at 0 N, as in the paper's Table 2. The outer parameter may end at its
bound, trading off against C: the fitted numbers describe the curve over the measured pulse range, not
physical constants; `ThrustFit.at_bounds` lists the parameters that ended on a bound. Near the dead zone a
thrust map should use the table form (thrust_table).

Also here: the dead zone from the data, the bench samples as a monotonic table (a drivers.thrust_map.ThrustMap),
goodness figures, and paper 000's Table 2 curve as a ThrustCurve to compare on the same data.
Pure numpy/scipy, no I/O.
Why: docs/design-notes/estimation-and-drivers.md, "Identification fits".
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from scipy.optimize import least_squares

NEUTRAL_PULSE_US = 1500.0
HALF_RANGE_US = 400.0                 # cmd = (pulse - neutral) / HALF_RANGE_US: 1100-1900 us -> -1..1
DEAD_ZONE_FRACTION = 0.005            # |thrust| below this fraction of the largest |thrust| counts as none
MIN_SAMPLES = 10                      # fewer samples are refused
MIN_SIDE_PULSES = 6                   # distinct pulses outside the dead zone needed to fit a side (4 free params)
OUTER_BOUND_FACTOR = 10.0             # |outer parameter| <= this x the side's largest measured |thrust|
B_BOUNDS = (0.1, 30.0)
V_BOUNDS = (0.05, 10.0)
C_BOUNDS = (0.01, 20.0)
START_B = (1.0, 3.0, 8.0)              # start values tried (best cost kept): a grid, since
START_V = (0.2, 1.0)                   # the cost has shallow valleys along the K-C trade-off
START_C = (0.7, 1.5)
FORWARD_M = 0.0                       # fixed M per side (redundant with C and K; the paper's values)
REVERSE_M = -1.0


@dataclass(frozen=True)
class RichardsSide:
    """One side of the curve: T = A + (K - A) / (C + exp(-B (cmd - M)))^(1/v) [N], cmd dimensionless.

    A, K in newtons (the forward side's K > 0, the reverse side's A < 0); B, v, C, M dimensionless; B, v, C > 0.
    """
    A: float
    K: float
    B: float
    v: float
    C: float
    M: float

    def thrust_n(self, cmd: np.ndarray) -> np.ndarray:
        cmd = np.asarray(cmd, dtype=float)
        with np.errstate(over="ignore"):
            base = self.C + np.exp(-self.B * (cmd - self.M))
        return self.A + (self.K - self.A) / base ** (1.0 / self.v)

    def as_dict(self) -> dict:
        return {"A": self.A, "K": self.K, "B": self.B, "v": self.v, "C": self.C, "M": self.M}


@dataclass(frozen=True)
class ThrustCurve:
    """A thruster's curve at one supply voltage (see the module docstring for the form).

    forward / reverse: the side's parameters, None when the data had no thrust on that side (the curve is then
      NaN beyond the dead zone on that side: not measured).
    dead_zone_us: (low, high), closed pulse interval of zero thrust around neutral [us].
    neutral_pulse_us, half_range_us: cmd = (pulse_us - neutral_pulse_us) / half_range_us.
    max_forward_n, max_reverse_n: clip limits, magnitudes >= 0 [N] (the curve never exceeds +max_forward_n nor
      goes below -max_reverse_n).
    note: where the curve comes from (assumptions), for reports.
    """
    forward: Optional[RichardsSide]
    reverse: Optional[RichardsSide]
    dead_zone_us: Tuple[float, float]
    neutral_pulse_us: float = NEUTRAL_PULSE_US
    half_range_us: float = HALF_RANGE_US
    max_forward_n: float = 0.0
    max_reverse_n: float = 0.0
    note: str = ""

    def cmd(self, pulse_us) -> np.ndarray:
        return (np.asarray(pulse_us, dtype=float) - self.neutral_pulse_us) / self.half_range_us

    @property
    def asymmetry(self) -> Optional[float]:
        """max_reverse_n / max_forward_n (dimensionless; < 1: weaker in reverse); None without forward thrust."""
        return self.max_reverse_n / self.max_forward_n if self.max_forward_n > 0 else None


def evaluate(curve: ThrustCurve, pulse_us) -> np.ndarray:
    """Thrust [N] (positive forward) at each pulse width [us]; vectorised, same shape as pulse_us.

    0 in the dead zone; NaN beyond the dead zone on a side the curve has no parameters for."""
    p = np.asarray(pulse_us, dtype=float)
    cmd = curve.cmd(p)
    out = np.zeros_like(p)
    low, high = curve.dead_zone_us
    for side, mask in ((curve.forward, p > high), (curve.reverse, p < low)):
        if np.any(mask):
            out[mask] = side.thrust_n(cmd[mask]) if side is not None else np.nan
    return np.clip(out, -curve.max_reverse_n, curve.max_forward_n)


def paper000_table2(neutral_pulse_us: float = NEUTRAL_PULSE_US, half_range_us: float = HALF_RANGE_US) -> ThrustCurve:
    """Paper 000's Table 2 T200 curve (Eq. 16) as a ThrustCurve.

    ASSUMPTION: the paper does not say how pulses map to cmd; this takes cmd = (pulse_us - 1500) / 400, so that
    1100-1900 us is -1..1. Its dead zone |cmd| <= 0.01 is then 1496-1504 us. Clip limits are the paper's
    maxForceFwd 36.3827 N and maxForceRev -28.4393 N.
    """
    dz = 0.01 * half_range_us
    return ThrustCurve(
        forward=RichardsSide(A=0.000001, K=40.0209, B=2.6249, v=0.1615, C=0.9432, M=0.00001),
        reverse=RichardsSide(A=-31.4990, K=-0.00001, B=3.6986, v=0.3264, C=0.9713, M=-1.0000),
        dead_zone_us=(neutral_pulse_us - dz, neutral_pulse_us + dz),
        neutral_pulse_us=neutral_pulse_us, half_range_us=half_range_us,
        max_forward_n=36.3827, max_reverse_n=28.4393,
        note=f"paper 000 Table 2, assuming cmd = (pulse_us - {neutral_pulse_us:g}) / {half_range_us:g}")


# ------------------------------------------------------------------------------------------------ data
def check_samples(pulse_us, thrust_n) -> Tuple[np.ndarray, np.ndarray]:
    """(pulse_us, thrust_n) as 1-D float arrays; ValueError when lengths differ, a value is not finite or there
    are fewer than MIN_SAMPLES samples."""
    p = np.asarray(pulse_us, dtype=float).ravel()
    t = np.asarray(thrust_n, dtype=float).ravel()
    if p.size != t.size:
        raise ValueError(f"{p.size} pulse widths but {t.size} thrust values")
    bad = ~(np.isfinite(p) & np.isfinite(t))
    if np.any(bad):
        raise ValueError(f"{int(bad.sum())} sample(s) are not finite numbers (first at sample {int(np.argmax(bad))})")
    if p.size < MIN_SAMPLES:
        raise ValueError(f"only {p.size} samples: a thrust curve needs at least {MIN_SAMPLES}")
    return p, t


def average_per_pulse(pulse_us, thrust_n) -> Tuple[np.ndarray, np.ndarray]:
    """(distinct pulses ascending [us], mean thrust at each [N]): repeated pulses averaged, any order accepted."""
    p, t = np.asarray(pulse_us, dtype=float), np.asarray(thrust_n, dtype=float)
    pulses, inverse = np.unique(p, return_inverse=True)
    sums = np.bincount(inverse, weights=t)
    counts = np.bincount(inverse)
    return pulses, sums / counts


def zero_threshold_n(thrust_n, fraction: float = DEAD_ZONE_FRACTION) -> float:
    """|thrust| [N] below which a mean thrust counts as none: `fraction` of the largest measured |thrust|.

    Default 0.5 %. Why: docs/design-notes/estimation-and-drivers.md, "Identification fits"."""
    return fraction * float(np.max(np.abs(thrust_n)))


def estimate_dead_zone(pulse_us, thrust_n, neutral_pulse_us: float = NEUTRAL_PULSE_US,
                       threshold_n: Optional[float] = None) -> Tuple[float, float]:
    """(low, high) [us]: the outermost pulses of the run of per-pulse mean thrusts with |thrust| <= threshold_n
    that contains the neutral pulse (default threshold: zero_threshold_n). The true edges lie between these and
    the next logged pulses out.

    ValueError when thrust is not zero at neutral (or at both logged pulses either side of it), or neutral is
    outside the logged pulses: the neutral pulse is wrong for this log.
    """
    pulses, means = average_per_pulse(pulse_us, thrust_n)
    thr = zero_threshold_n(means) if threshold_n is None else float(threshold_n)
    zero = np.abs(means) <= thr
    n = float(neutral_pulse_us)
    if not pulses[0] <= n <= pulses[-1]:
        raise ValueError(f"neutral pulse {n:g} us is outside the logged pulses {pulses[0]:g}-{pulses[-1]:g} us")
    i = int(np.searchsorted(pulses, n, side="right")) - 1          # pulses[i] <= n
    if pulses[i] == n:
        lo = hi = i
        ok = zero[i]
    else:
        lo, hi = i, i + 1
        ok = zero[lo] and zero[hi]
    if not ok:
        near = ", ".join(f"{pulses[j]:g} us: {means[j]:.3g} N" for j in sorted({lo, hi}))
        raise ValueError(f"thrust is not zero at the neutral pulse {n:g} us ({near}; threshold {thr:.3g} N): "
                         f"is the neutral pulse right?")
    while lo > 0 and zero[lo - 1]:
        lo -= 1
    while hi < len(pulses) - 1 and zero[hi + 1]:
        hi += 1
    return float(pulses[lo]), float(pulses[hi])


@dataclass(frozen=True)
class ThrustTable:
    """Bench samples as a table: per-pulse means, zero in the dead zone, made monotonic outward from it (the
    running maximum of |thrust|, as drivers/thrust_map.py does) so that it inverts. pulse_us ascending [us],
    thrust_n [N] positive forward."""
    pulse_us: Tuple[float, ...]
    thrust_n: Tuple[float, ...]
    neutral_pulse_us: float
    dead_zone_us: Tuple[float, float]

    def to_thrust_map(self, name: str = "bench", voltage_v: Optional[float] = None):
        from drivers.thrust_map import ThrustMap
        return ThrustMap(self.pulse_us, self.thrust_n, int(round(self.neutral_pulse_us)), name=name,
                         voltage_v=voltage_v)


def thrust_table(pulse_us, thrust_n, neutral_pulse_us: float = NEUTRAL_PULSE_US,
                 dead_zone_us: Optional[Tuple[float, float]] = None) -> ThrustTable:
    """The samples as a monotonic ThrustTable (dead zone estimated when not given)."""
    p, t = check_samples(pulse_us, thrust_n)
    if dead_zone_us is None:
        dead_zone_us = estimate_dead_zone(p, t, neutral_pulse_us)
    low, high = dead_zone_us
    pulses, means = average_per_pulse(p, t)
    out = np.where((pulses >= low) & (pulses <= high), 0.0, means)
    fwd = pulses > high
    rev = pulses < low
    out[fwd] = np.maximum.accumulate(np.maximum(out[fwd], 0.0))
    out[rev] = -np.maximum.accumulate(np.maximum(-out[rev], 0.0)[::-1])[::-1]
    return ThrustTable(tuple(float(x) for x in pulses), tuple(float(x) for x in out), float(neutral_pulse_us),
                       (float(low), float(high)))


# ------------------------------------------------------------------------------------------------ goodness
@dataclass(frozen=True)
class Goodness:
    """Model minus data over the samples: rmse_n, mae_n, max_abs_n [N]; r2 = 1 - SS_res / SS_tot; n samples.
    Samples where the curve is NaN (a side it has no parameters for) are left out and counted in n_skipped."""
    rmse_n: float
    mae_n: float
    max_abs_n: float
    r2: float
    n: int
    n_skipped: int = 0

    def as_dict(self) -> dict:
        return {"rmse_n": self.rmse_n, "mae_n": self.mae_n, "max_abs_n": self.max_abs_n, "r2": self.r2,
                "n": self.n, "n_skipped": self.n_skipped}


def goodness(curve: ThrustCurve, pulse_us, thrust_n) -> Goodness:
    p, t = np.asarray(pulse_us, dtype=float), np.asarray(thrust_n, dtype=float)
    model = evaluate(curve, p)
    ok = np.isfinite(model)
    err = model[ok] - t[ok]
    if err.size == 0:
        raise ValueError("the curve covers none of the samples")
    ss_tot = float(np.sum((t[ok] - t[ok].mean()) ** 2))
    r2 = 1.0 - float(np.sum(err ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return Goodness(rmse_n=float(np.sqrt(np.mean(err ** 2))), mae_n=float(np.mean(np.abs(err))),
                    max_abs_n=float(np.max(np.abs(err))), r2=r2, n=int(err.size), n_skipped=int((~ok).sum()))


# ------------------------------------------------------------------------------------------------ fitting
@dataclass(frozen=True)
class ThrustFit:
    """A fitted curve with its goodness on the samples it was fitted to, the bench table, and notes (sides not
    fitted, parameters that ended on a bound)."""
    curve: ThrustCurve
    goodness: Goodness
    table: ThrustTable
    at_bounds: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = field(default=())


def _fit_side(cmd: np.ndarray, thrust_n: np.ndarray, forward: bool) -> Tuple[RichardsSide, Tuple[str, ...]]:
    """Least squares of one side (free: outer, B, v, C; see the module docstring), best of a few starts."""
    peak_n = float(np.max(np.abs(thrust_n)))
    m = FORWARD_M if forward else REVERSE_M
    if forward:
        outer_bounds = (peak_n, OUTER_BOUND_FACTOR * peak_n)

        def side(q):
            return RichardsSide(A=0.0, K=float(q[0]), B=float(q[1]), v=float(q[2]), C=float(q[3]), M=m)
    else:
        outer_bounds = (-OUTER_BOUND_FACTOR * peak_n, -peak_n)

        def side(q):
            return RichardsSide(A=float(q[0]), K=0.0, B=float(q[1]), v=float(q[2]), C=float(q[3]), M=m)
    lower = np.array([outer_bounds[0], B_BOUNDS[0], V_BOUNDS[0], C_BOUNDS[0]])
    upper = np.array([outer_bounds[1], B_BOUNDS[1], V_BOUNDS[1], C_BOUNDS[1]])
    outer0 = (1.2 if forward else -1.2) * peak_n

    def residual(q):
        return side(q).thrust_n(cmd) - thrust_n

    best = None
    for b0, v0, c0 in itertools.product(START_B, START_V, START_C):
        x0 = np.clip([outer0, b0, v0, c0], lower, upper)
        try:
            r = least_squares(residual, x0, bounds=(lower, upper), x_scale="jac", max_nfev=2000)
        except ValueError:          # a start whose residuals overflow
            continue
        if np.isfinite(r.cost) and (best is None or r.cost < best.cost):
            best = r
    if best is None:
        raise ValueError(f"the {'forward' if forward else 'reverse'} fit did not converge from any start")
    names = ("K" if forward else "A", "B", "v", "C")
    span = upper - lower
    hit = tuple(n for n, x, lo, hi, s in zip(names, best.x, lower, upper, span)
                if min(x - lo, hi - x) <= 1e-6 * s)
    return side(best.x), hit


def fit_thrust_curve(pulse_us: Sequence[float], thrust_n: Sequence[float],
                     neutral_pulse_us: float = NEUTRAL_PULSE_US, half_range_us: float = HALF_RANGE_US,
                     dead_zone_fraction: float = DEAD_ZONE_FRACTION) -> ThrustFit:
    """Fit the curve to bench samples: pulse widths [us] and thrust [N, positive forward], any order, repeated
    pulses allowed. Each side is fitted to its samples beyond the dead zone; a side with no thrust in the log
    is left out (None) and said so in `notes`. max_forward_n / max_reverse_n are the largest per-pulse mean
    thrusts measured. ValueError (the reason named) for fewer than MIN_SAMPLES samples, non-finite values,
    no thrust at all, thrust of the wrong sign on a side, or a side with fewer than MIN_SIDE_PULSES pulses.
    """
    p, t = check_samples(pulse_us, thrust_n)
    if not (math.isfinite(half_range_us) and half_range_us > 0):
        raise ValueError(f"half range must be a positive number of microseconds, got {half_range_us!r}")
    if not np.any(t != 0.0):
        raise ValueError("no thrust in any sample")
    low, high = estimate_dead_zone(p, t, neutral_pulse_us, zero_threshold_n(t, dead_zone_fraction))
    cmd = (p - neutral_pulse_us) / half_range_us
    sides: Dict[str, Optional[RichardsSide]]
    sides, at_bounds, notes = {}, [], []
    for name, mask, forward in (("forward", p > high, True), ("reverse", p < low, False)):
        if not np.any(mask):
            sides[name] = None
            notes.append(f"no {name} thrust in the log: {name} side not fitted")
            continue
        sign = 1.0 if forward else -1.0
        if np.mean(sign * t[mask]) <= 0:
            raise ValueError(f"thrust on the {name} side ({'above' if forward else 'below'} the dead zone) has "
                             f"the wrong sign: positive thrust must be forward, at pulses above neutral")
        n_pulses = np.unique(p[mask]).size
        if n_pulses < MIN_SIDE_PULSES:
            raise ValueError(f"only {n_pulses} distinct {name} pulses beyond the dead zone: fitting a side needs "
                             f"at least {MIN_SIDE_PULSES}")
        sides[name], hit = _fit_side(cmd[mask], t[mask], forward)
        at_bounds += [f"{name}.{h}" for h in hit]
    table = thrust_table(p, t, neutral_pulse_us, (low, high))
    thrust_tab = np.array(table.thrust_n)
    curve = ThrustCurve(forward=sides["forward"], reverse=sides["reverse"], dead_zone_us=(low, high),
                        neutral_pulse_us=float(neutral_pulse_us), half_range_us=float(half_range_us),
                        max_forward_n=float(max(thrust_tab.max(), 0.0)),
                        max_reverse_n=float(max(-thrust_tab.min(), 0.0)),
                        note=f"fitted, cmd = (pulse_us - {neutral_pulse_us:g}) / {half_range_us:g}")
    if at_bounds:
        notes.append("ended on a bound (curve fine, parameter not identified by the data): " + ", ".join(at_bounds))
    return ThrustFit(curve=curve, goodness=goodness(curve, p, t), table=table, at_bounds=tuple(at_bounds),
                     notes=tuple(notes))
