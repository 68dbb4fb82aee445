"""Continuous magnetometer calibration while underway, checked against the GNSS course over ground.

Watches the field the sensor path delivers (the backend's calibration already applied: the "delivered" field)
while the boat turns, and keeps a running correction D on top of it: m_corr = D.matrix @ (m_delivered -
D.offset_t); D starts as the identity. Every `fit_period_s` the delivered field, corrected by D, is fitted over
sliding windows ending now (`windows_s`) with the richest method the window's data allow: "3d"
(mag_calibration.fit_calibration, coverage >= MagFitLimits.min_coverage_3d), "2d" (horizontal coverage >=
MagFitLimits.min_coverage_2d), else "hard-iron" when the headings span >= `min_arc_deg` (the centre of a circle
of the known horizontal field strength field_t cos(inclination) through the horizontal readings, soft iron
kept). Each fit carries the one-off fit's quality figures and must pass the same MagFitLimits.

A passing fit is applied only when it agrees with the GNSS over the same window: its tilt-compensated heading
is compared with `reference = COG - crab` (crab: bow to velocity over ground, given by the caller;
autopilot/calibration/mag_watch.py derives it from the EKF's drift) at `min_refs` or more fixes, on straight
running (|yaw rate| <= `max_ref_yaw_rate_rps`), on headings spanning >= `min_ref_span_deg`. Accepted when its
RMS disagreement is <= `max_consistency_deg` and at least `min_improvement_deg` better than D's; of the
windows accepted the longest wins. After an update, the next small one (less than `max_consistency_deg`
better) waits `min_update_interval_s`; a large one never waits. A round's fits are spread over successive
update() calls, one window each. Data from a straight line alone never produce an update (no arc, no fit).

`mag_consistency_deg()`: RMS of (magnetic heading - GNSS-course heading) over the last `consistency_window_s`
of reference fixes. Every such RMS is taken over means of `block_s` blocks of fixes, weighted by their fixes.

Units: tesla, radians inside (degrees in figures named `_deg`), seconds on the caller's clock. Frames: body FRD
for fields, headings clockwise from true north (declination added to the magnetic heading). Roll and pitch for
the tilt compensation are passed in with each sample. No I/O, no clock.
Why: docs/design-notes/estimation-and-drivers.md, "Heading and magnetometer".
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Deque, Generator, List, Optional, cast

import numpy as np

from autopilot.vocab.angles import wrap_pi
from estimation.heading.mag_calibration import CalibrationFit, MagCalibration, MagFitLimits, fit_calibration

IDENTITY = MagCalibration(method="2d")


@dataclass(frozen=True)
class OnlineCalLimits:
    """What the continuous calibration needs before it proposes, and before it applies, an update."""

    sample_period_s: float = 0.5          # delivered fields are kept at this spacing (not every sample)
    max_history_s: float = 600.0          # nothing older is kept
    windows_s: tuple = (60.0, 90.0, 120.0, 180.0, 240.0, 360.0, 600.0)   # candidate fit windows ending now
    fit_period_s: float = 5.0             # how often a proposal is fitted
    min_arc_deg: float = 150.0            # heading span a hard-iron fit needs (a straight line spans ~0)
    # the one-off fit's thresholds, with a tighter residual: noise is ~1 % of the field, and a window that
    # straddles a change of the hard iron must fail here rather than average the two calibrations
    fit: MagFitLimits = field(default_factory=lambda: MagFitLimits(max_residual_pct=2.5))
    min_speed_mps: float = 0.5            # GNSS course is used as a reference only above this speed
    max_ref_yaw_rate_rps: float = 0.05    # ... and only on straight running
    max_ref_age_s: float = 0.5            # a fix is paired with a stored field at most this far away in time
    min_refs: int = 20                    # reference fixes in the window needed to judge a proposal
    min_ref_span_deg: float = 60.0        # the references must come from headings at least this far apart
    max_consistency_deg: float = 4.0      # accept only when the proposal's RMS disagreement is this small
    min_improvement_deg: float = 0.3      # ... and this much smaller than the running correction's
    min_update_interval_s: float = 60.0   # after an accepted update, refinements (improving the agreement by
    #                                       less than max_consistency_deg) wait this long
    consistency_window_s: float = 60.0    # the window of mag_consistency_deg
    block_s: float = 15.0                 # heading errors are averaged over blocks of this long before the RMS:
    #                                       one GNSS course at 1 m/s is good to ~5-10 deg, a 15 s mean to ~2
    min_consistency_refs: int = 10        # fewer reference fixes in that window: no figure (None)
    min_block_refs: int = 3               # mag_consistency_deg leaves out blocks of fewer fixes: a lone course
    #                                       after a turn (a wave's sway, a mismatched hull's slide) is 20-40 deg off

    def __post_init__(self):
        for name in ("sample_period_s", "max_history_s", "fit_period_s", "min_arc_deg", "min_speed_mps",
                     "max_ref_yaw_rate_rps", "max_ref_age_s", "min_ref_span_deg", "max_consistency_deg",
                     "consistency_window_s", "min_update_interval_s", "block_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"OnlineCalLimits.{name} must be a finite number > 0, got {v!r}")
        if not 0 <= self.min_improvement_deg < math.inf:
            raise ValueError(f"OnlineCalLimits.min_improvement_deg must be >= 0, got {self.min_improvement_deg!r}")
        if not self.min_arc_deg <= 360.0:
            raise ValueError(f"OnlineCalLimits.min_arc_deg must be <= 360, got {self.min_arc_deg!r}")
        if not self.windows_s or any(not (math.isfinite(w) and 0 < w <= self.max_history_s) for w in self.windows_s):
            raise ValueError(f"OnlineCalLimits.windows_s must be times in (0, max_history_s={self.max_history_s}], "
                             f"got {self.windows_s!r}")
        for name in ("min_refs", "min_consistency_refs"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 2):
                raise ValueError(f"OnlineCalLimits.{name} must be an integer >= 2, got {getattr(self, name)!r}")
        if not (isinstance(self.min_block_refs, int) and self.min_block_refs >= 1):
            raise ValueError(f"OnlineCalLimits.min_block_refs must be an integer >= 1 (1: every block counts), "
                             f"got {self.min_block_refs!r}")


@dataclass(frozen=True)
class MagProposal:
    """One fitted proposal and its verdict.

    `delta`: the correction on top of the running one (None when no fit was possible); `figures`: the fit's
    quality figures (as CalibrationFit.figures); `consistency_before_deg` / `_after_deg`: RMS of (magnetic
    heading - GNSS-course heading) over the window's reference fixes with the running correction and with the
    proposal (None without references); `reason`: empty when accepted, else why not.
    """

    time_s: float
    method: str                           # "3d", "2d", "hard-iron" or "" (nothing fitted)
    window_s: float
    accepted: bool
    reason: str
    figures: dict
    delta: Optional[MagCalibration] = None
    n_refs: int = 0
    consistency_before_deg: Optional[float] = None
    consistency_after_deg: Optional[float] = None
    heading_arc_deg: float = 0.0          # span of the window's headings (0 on a straight line)
    decided_s: Optional[float] = None     # when update() finished the round of fits (and applied it) [s]


def compose(outer: MagCalibration, inner: MagCalibration, method: Optional[str] = None) -> MagCalibration:
    """The calibration of outer applied after inner: W_o (W_i (m - b_i) - b_o) = W_o W_i (m - (b_i + W_i^-1 b_o)).

    Fields in tesla; the result's figures are outer's; method is the given one, else inner's."""
    wi, wo = np.asarray(inner.matrix), np.asarray(outer.matrix)
    offset = np.asarray(inner.offset_t) + np.linalg.solve(wi, np.asarray(outer.offset_t))
    return MagCalibration(offset_t=tuple(offset.tolist()), matrix=tuple(map(tuple, (wo @ wi).tolist())),
                          method=method or inner.method, figures=dict(outer.figures))


def headings_rad(fields_t: np.ndarray, roll_rad: np.ndarray, pitch_rad: np.ndarray,
                 declination_rad: float = 0.0) -> np.ndarray:
    """Tilt-compensated true headings [rad] of (n, 3) fields in FRD, vectorised
    (estimation.heading.tilt_compensated.tilt_compensated_heading_rad, element by element)."""
    mx, my, mz = fields_t[:, 0], fields_t[:, 1], fields_t[:, 2]
    cr, sr, cp, sp = np.cos(roll_rad), np.sin(roll_rad), np.cos(pitch_rad), np.sin(pitch_rad)
    xh = mx * cp + (my * sr + mz * cr) * sp
    yh = my * cr - mz * sr
    return wrap_pi(np.arctan2(-yh, xh) + declination_rad)


def heading_arc_deg(headings: np.ndarray) -> float:
    """Span of a set of headings [rad] on the circle [deg]: 360 minus the largest gap between neighbours."""
    if len(headings) < 2:
        return 0.0
    a = np.sort(np.mod(headings, 2.0 * np.pi))
    gaps = np.diff(np.concatenate([a, [a[0] + 2.0 * np.pi]]))
    return float(np.degrees(2.0 * np.pi - gaps.max()))


def fit_hard_iron(readings_t, field_t: float, inclination_deg: float,
                  limits: Optional[MagFitLimits] = None, min_arc_deg: float = 150.0) -> CalibrationFit:
    """Hard iron only, from an arc of level headings: the centre (x, y) [T] of the circle of radius
    field_t cos(inclination) through the horizontal readings (n, 3) [T]; z and the soft iron untouched.

    Figures and verdict as estimation.heading.mag_calibration.fit_calibration's ("coverage": the arc about the fitted
    centre as a fraction of the circle, judged against min_arc_deg / 360; "field_ratio": the radius of the
    best free circle over the expected one). ValueError for unusable input.
    """
    lim = limits or MagFitLimits()
    m = np.asarray(readings_t, dtype=float)
    if m.ndim != 2 or m.shape[1] != 3 or len(m) < 3:
        raise ValueError(f"readings must be an (n >= 3, 3) array of fields in tesla, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("readings contain non-finite values")
    if not field_t > 0 or not -90.0 < inclination_deg < 90.0:
        raise ValueError(f"need field_t > 0 and an inclination within (-90, 90) deg, got {field_t}, "
                         f"{inclination_deg}")
    radius = field_t * math.cos(math.radians(inclination_deg))
    p = m[:, :2]
    # free circle (Kasa): |p|^2 = 2 c.p + k, for the field-strength check
    a = np.column_stack([2.0 * p, np.ones(len(p))])
    sol = np.linalg.lstsq(a, (p * p).sum(axis=1), rcond=None)[0]
    free_r2 = sol[2] + sol[0] ** 2 + sol[1] ** 2
    free_radius = math.sqrt(free_r2) if free_r2 > 0 else 0.0
    c = _circle_centre(p, radius)
    resid = np.hypot(p[:, 0] - c[0], p[:, 1] - c[1]) - radius
    residual = float(np.sqrt(np.mean(resid ** 2)))
    arc = heading_arc_deg(np.arctan2(p[:, 1] - c[1], p[:, 0] - c[0]))
    figures = dict(n_samples=int(len(m)), residual_rms_t=residual, residual_rms_pct=100.0 * residual / field_t,
                   coverage=arc / 360.0, field_ratio=float(free_radius / radius), anisotropy=1.0,
                   expected_field_t=float(radius))
    reasons = []
    if len(m) < lim.min_samples_2d:
        reasons.append(f"only {len(m)} readings, at least {lim.min_samples_2d} needed")
    if arc < min_arc_deg:
        reasons.append(f"the headings span {arc:.0f} deg, a hard-iron fit needs {min_arc_deg:.0f} deg of turning")
    if figures["residual_rms_pct"] > lim.max_residual_pct:
        reasons.append(f"residual {figures['residual_rms_pct']:.1f} % of the field exceeds "
                       f"{lim.max_residual_pct:.1f} % (the disturbance changed within the window, or the hull rolls)")
    lo, hi = lim.field_ratio_range
    if not lo <= figures["field_ratio"] <= hi:
        reasons.append(f"measured horizontal field is {figures['field_ratio']:.2f} x the expected "
                       f"{radius * 1e6:.1f} uT (allowed {lo}-{hi})")
    cal = MagCalibration(offset_t=(float(c[0]), float(c[1]), 0.0), method="2d", figures=figures)
    return CalibrationFit(cal, not reasons, "; ".join(reasons), figures)


def _circle_centre(p: np.ndarray, radius: float, iterations: int = 20) -> np.ndarray:
    """Centre c minimising sum (|p_i - c| - radius)^2 by Gauss-Newton from c = 0 (the running correction's
    belief), so of the two mirror solutions a short arc allows, the one nearer the present calibration."""
    c = np.zeros(2)
    for _ in range(iterations):
        d = p - c
        r = np.hypot(d[:, 0], d[:, 1])
        r = np.where(r > 0.0, r, 1e-12)
        jac = -d / r[:, None]                        # d(|p - c| - radius)/dc
        step = np.linalg.lstsq(jac, -(r - radius), rcond=None)[0]
        c = c + step
        if np.hypot(*step) < 1e-4 * radius:
            break
    return c


class OnlineMagCalibration:
    """The running correction and the evidence for changing it (see the module docstring).

    Feed it every delivered magnetometer sample (`add_sample`), every GNSS fix at speed with the EKF's crab
    (`add_reference`), and call `update(t_s)` once per cycle: it returns the MagProposal of a fit when one was
    made (accepted or not), else None. `correct(field)` applies the running correction to a delivered field.
    """

    def __init__(self, field_t: float, inclination_deg: float, declination_deg: float = 0.0,
                 limits: Optional[OnlineCalLimits] = None):
        if not (math.isfinite(field_t) and field_t > 0):
            raise ValueError(f"field_t must be a field strength > 0 T, got {field_t!r}")
        if not (math.isfinite(inclination_deg) and -90.0 < inclination_deg < 90.0):
            raise ValueError(f"inclination_deg must be within (-90, 90), got {inclination_deg!r}")
        if not math.isfinite(declination_deg):
            raise ValueError(f"declination_deg must be finite, got {declination_deg!r}")
        self.field_t = field_t
        self.inclination_deg = inclination_deg
        self.declination_rad = math.radians(declination_deg)
        self.limits = limits or OnlineCalLimits()
        self.delta = IDENTITY                      # the running correction on top of the delivered field
        self.updates = 0                           # accepted proposals
        self.last_proposal: Optional[MagProposal] = None
        self.ignored_samples = 0                   # non-finite or all-zero fields, not stored
        # [t_s, fx, fy, fz, roll, pitch, reference heading (nan: none)], delivered fields, every sample_period_s
        self._rows: Deque[List[float]] = deque()
        self._next_fit_s = -math.inf
        # the round of fits under way (a generator), if any
        self._round: Optional[Generator[None, None, Optional[MagProposal]]] = None
        self._last_update_s = -math.inf

    # ------------------------------------------------------------------------------------------ input
    def add_sample(self, t_s: float, field_t, roll_rad: float = 0.0, pitch_rad: float = 0.0) -> None:
        """A delivered field (FRD [T]) at t_s with the attitude to de-rotate it by. Unusable samples are counted
        in `ignored_samples`, never raised."""
        try:
            fx, fy, fz = (float(v) for v in field_t)
            vals = (float(t_s), fx, fy, fz, float(roll_rad), float(pitch_rad))
        except (TypeError, ValueError):
            self.ignored_samples += 1
            return
        if not all(math.isfinite(v) for v in vals) or fx == fy == fz == 0.0:
            self.ignored_samples += 1
            return
        rows = self._rows
        if rows and vals[0] < rows[-1][0] + self.limits.sample_period_s:
            return
        rows.append([*vals, math.nan])
        horizon = vals[0] - self.limits.max_history_s
        while rows and rows[0][0] < horizon:
            rows.popleft()

    def add_reference(self, t_s: float, cog_rad: Optional[float], sog_mps: Optional[float], crab_rad: float,
                      yaw_rate_rps: float) -> bool:
        """A GNSS course over ground (true [rad]) and speed [m/s] received at t_s, with the EKF's crab angle
        (bow to velocity over ground, + when the boat moves to starboard of its bow) and yaw rate [rad/s].
        It becomes the reference heading COG - crab of the stored field nearest in time (within max_ref_age_s)
        when the boat runs straight at speed; returns whether it was used."""
        lim = self.limits
        if cog_rad is None or sog_mps is None:      # no course or speed: float() below would refuse it too
            return False
        try:
            vals = [float(v) for v in (t_s, cog_rad, sog_mps, crab_rad, yaw_rate_rps)]
        except (TypeError, ValueError):
            return False
        if not all(math.isfinite(v) for v in vals):
            return False
        t, cog, sog, crab, rate = vals
        if sog < lim.min_speed_mps or abs(rate) > lim.max_ref_yaw_rate_rps or not self._rows:
            return False
        row = None
        for r in reversed(self._rows):          # the stored field nearest in time (either side)
            if row is None or abs(r[0] - t) < abs(row[0] - t):
                row = r
            if r[0] < t - lim.max_ref_age_s:
                break
        assert row is not None                  # self._rows is not empty
        if abs(row[0] - t) > lim.max_ref_age_s:
            return False
        row[6] = wrap_pi(cog - crab)
        return True

    # ------------------------------------------------------------------------------------------ output
    def correct(self, field_t) -> tuple:
        """A delivered field [T] with the running correction applied (floats)."""
        return self.delta.apply_xyz(*field_t)

    def mag_consistency_deg(self, t_s: float) -> Optional[float]:
        """RMS of (magnetic heading with the running correction - GNSS-course heading) over the reference fixes
        of the last consistency_window_s before t_s [deg], counting only blocks of at least min_block_refs
        fixes; None with fewer than min_consistency_refs fixes in those."""
        a = self._array(t_s - self.limits.consistency_window_s)
        if a is None:
            return None
        a = a[np.isfinite(a[:, 6])]
        if not len(a):
            return None
        # a block of one or two courses is no mean: one course is good to 7-20 deg at boat speeds. The blocks
        # left keep their boundaries (re-blocking from the first fix left would mix neighbouring blocks)
        block = self._blocks(a)
        keep = np.bincount(block)[block] >= self.limits.min_block_refs
        if np.count_nonzero(keep) < self.limits.min_consistency_refs:
            return None
        a = a[keep]
        return self._block_rms_deg(self._errors(a, self.delta), block[keep])

    def recent_error_deg(self, n: int) -> Optional[float]:
        """|mean| of (magnetic heading with the running correction - reference) over the last n reference
        fixes [deg] (a mean: a single course is noisy); None before there are n."""
        refs = []
        for row in reversed(self._rows):
            if row[6] == row[6]:                    # not NaN
                refs.append(row)
                if len(refs) == n:
                    break
        if len(refs) < n:
            return None
        e = self._errors(np.array(refs), self.delta)
        return float(np.degrees(abs(np.mean(e))))

    def update(self, t_s: float) -> Optional[MagProposal]:
        """Once per cycle. Every fit_period_s a round of fits starts; it fits one window per call (a few
        milliseconds each, so a 50 Hz loop keeps its deadline) and, at its last window, applies the proposal if
        it is accepted and returns it. Other calls return None."""
        if self._round is None:
            if t_s < self._next_fit_s:
                return None
            self._next_fit_s = t_s + self.limits.fit_period_s
            self._round = self._propose_steps(t_s)
        try:
            next(self._round)
            return None
        except StopIteration as done:
            self._round = None
            prop = done.value
        if prop is None:
            return None
        prop = replace(prop, decided_s=t_s)
        self.last_proposal = prop
        if prop.accepted:
            self.delta = compose(prop.delta, self.delta, method=self._running_method(prop.method))
            self.delta = replace(self.delta, figures=dict(prop.figures))
            self.updates += 1
            self._last_update_s = t_s
        return prop

    def propose(self, t_s: float) -> Optional[MagProposal]:
        """The best proposal at t_s and its verdict (not applied); None when no data are stored.

        Every window is fitted and judged; the longest accepted one wins (more data, less noise). Without one,
        the refusal returned is the fitted window that came closest to the GNSS, else the first refusal."""
        steps = self._propose_steps(t_s)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def _propose_steps(self, t_s: float) -> Generator[None, None, Optional[MagProposal]]:
        """propose() as a generator: yields after each window's fit, returns the proposal."""
        accepted, judged, refusal = None, [], None
        every = self._array(t_s - max(self.limits.windows_s))
        if every is None:
            return None
        delta = self.delta
        fields = delta.apply(every[:, 1:4])
        for w in sorted(self.limits.windows_s):
            i = int(np.searchsorted(every[:, 0], t_s - w))
            a = every[i:]
            if len(a) < 6:
                continue
            fit, method, arc = self._fit(a, fields[i:])
            yield
            if fit is None:
                refusal = refusal or MagProposal(t_s, method, w, False, "too few readings to fit", {},
                                                 heading_arc_deg=arc)
                continue
            if not fit.accepted:
                if refusal is None or (not refusal.method and method):
                    refusal = MagProposal(t_s, method, w, False, fit.reason, fit.figures, heading_arc_deg=arc)
                continue
            verdict = self._judge(t_s, w, a, fit, method, arc, delta)
            if verdict.accepted:
                accepted = verdict
            else:
                judged.append(verdict)
        if accepted is not None:
            return accepted
        with_refs = [p for p in judged if p.consistency_after_deg is not None]
        if with_refs:
            return min(with_refs, key=lambda p: cast(float, p.consistency_after_deg))     # not None: filtered
        return judged[0] if judged else refusal

    def _judge(self, t_s: float, w: float, a: np.ndarray, fit: CalibrationFit, method: str,
               arc: float, running: MagCalibration) -> MagProposal:
        """A passing fit of window w against the GNSS-course headings of the same window."""
        lim = self.limits
        delta = fit.calibration
        refs = a[np.isfinite(a[:, 6])]
        n_refs = len(refs)
        if n_refs < lim.min_refs:
            return MagProposal(t_s, method, w, False, f"only {n_refs} GNSS course fixes at speed on straight "
                               f"running in the {w:g} s window, {lim.min_refs} needed to check the fit",
                               fit.figures, delta, n_refs, heading_arc_deg=arc)
        span = heading_arc_deg(refs[:, 6])
        blocks = self._blocks(refs)
        rms_b = self._block_rms_deg(self._errors(refs, running), blocks)
        rms_a = self._block_rms_deg(self._errors(refs, compose(delta, running)), blocks)
        reasons = []
        if span < lim.min_ref_span_deg:
            reasons.append(f"the GNSS course fixes span only {span:.0f} deg of heading, {lim.min_ref_span_deg:.0f} "
                           f"needed to tell a calibration error from a crab error")
        if rms_a > lim.max_consistency_deg:
            reasons.append(f"disagrees with the GNSS course: {rms_a:.1f} deg RMS after the update "
                           f"(limit {lim.max_consistency_deg:g})")
        if rms_b - rms_a < lim.min_improvement_deg:
            reasons.append(f"no better than the running calibration ({rms_b:.1f} -> {rms_a:.1f} deg RMS against "
                           f"the GNSS course, {lim.min_improvement_deg:g} deg improvement needed)")
        elif rms_b - rms_a < lim.max_consistency_deg and t_s < self._last_update_s + lim.min_update_interval_s:
            reasons.append(f"a refinement ({rms_b:.1f} -> {rms_a:.1f} deg RMS) within "
                           f"{lim.min_update_interval_s:g} s of the last update: later")
        return MagProposal(t_s, method, w, not reasons, "; ".join(reasons), fit.figures, delta, n_refs,
                           rms_b, rms_a, arc)

    # ------------------------------------------------------------------------------------------ internals
    def _array(self, since_s: float) -> Optional[np.ndarray]:
        rows = [r for r in self._rows if r[0] >= since_s]
        return np.array(rows) if rows else None

    def _blocks(self, refs: np.ndarray) -> np.ndarray:
        """Each (time-ordered) ref's block: whole block_s intervals since the first ref."""
        return np.floor((refs[:, 0] - refs[0, 0]) / self.limits.block_s).astype(int)

    @staticmethod
    def _block_rms_deg(errors: np.ndarray, block: np.ndarray) -> float:
        """RMS over blocks of the mean heading error [rad] in each block [deg], weighted by the fixes in each
        (`block`: each fix's block, from _blocks)."""
        counts = np.bincount(block)
        sums = np.bincount(block, weights=errors)
        means = sums[counts > 0] / counts[counts > 0]
        weights = counts[counts > 0]
        return float(np.degrees(np.sqrt(np.average(means * means, weights=weights))))

    def _errors(self, a: np.ndarray, cal: MagCalibration) -> np.ndarray:
        psi = headings_rad(cal.apply(a[:, 1:4]), a[:, 4], a[:, 5], self.declination_rad)
        return wrap_pi(psi - a[:, 6])

    def _fit(self, a: np.ndarray, fields: np.ndarray):
        """(CalibrationFit or None, method, heading arc [deg]) of the window's fields after the running
        correction (`fields`): 3-D, 2-D or hard iron, whichever the data cover."""
        lim = self.limits
        arc = heading_arc_deg(headings_rad(fields, a[:, 4], a[:, 5]))
        if arc < lim.min_arc_deg:
            return (CalibrationFit(IDENTITY, False, f"the headings span {arc:.0f} deg: no fit without "
                                   f"{lim.min_arc_deg:.0f} deg of turning (straight running says nothing about "
                                   f"the calibration)", dict(n_samples=len(a), coverage=arc / 360.0)),
                    "", arc)
        from estimation.heading.mag_calibration import coverage_of
        try:
            if len(a) >= 10 and coverage_of(fields, "3d") >= lim.fit.min_coverage_3d:
                fit = fit_calibration(fields, self.field_t, "3d", self.inclination_deg, lim.fit)
                if fit.accepted:
                    return fit, "3d", arc
            if coverage_of(fields, "2d") >= lim.fit.min_coverage_2d:
                fit = fit_calibration(fields, self.field_t, "2d", self.inclination_deg, lim.fit)
                if fit.accepted:
                    return fit, "2d", arc
            return fit_hard_iron(fields, self.field_t, self.inclination_deg, lim.fit, lim.min_arc_deg), \
                "hard-iron", arc
        except ValueError:
            return None, "", arc

    @staticmethod
    def _running_method(method: str) -> str:
        return "3d" if method == "3d" else "2d"
