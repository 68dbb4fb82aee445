"""The continuous magnetometer calibration in the autopilot's cycle (estimation/heading/mag_online.py does the math).

Each cycle, before the estimator, the delivered magnetometer samples (the backend's calibration, "base", applied)
are stored for the fits and, once an update is accepted, replaced by their running correction; after it, each
GNSS fix with a course gives a reference heading and the round of fits advances by one window.

Reference heading psi_ref = atan2(v_g - d), v_g the velocity over ground, d the drift (NED: current, wind push,
leeway); the crab is COG - psi_ref. d is the EKF's, low-passed over DRIFT_TAU_S with inverse-variance weights,
for all courses and per DRIFT_SECTORS sector of course over ground (_learn_drift); it is held while the mean
of the last DRIFT_TRUST_FIXES reference errors exceeds warn_consistency_deg, until the EKF's drift on the present
course is back within DRIFT_RESUME_MPS of it or DRIFT_MAX_HOLD_S has passed. A course is a reference only while
the hull's slide the vessel file predicts (v relaxing toward (m - X_udot) u r / Y_v with the time constant
(m - Y_vdot) / -Y_v, from the estimate's surge and yaw rate) is within MAX_SLIDE_RAD of the bow.

An accepted update is an Event (kind "calibration") with before/after figures and, with a calibration file
(sensors.mag.calibration_file, or the path given), is written over it: base and running correction composed,
the old file kept as `<file>.prev` and the one before the first update as `<file>.orig` (never overwritten).

`mag_consistency_deg` (RMS of magnetic minus GNSS-course heading at speed, last minute [deg]; None without enough
fixes), refreshed once a second, warns once per episode above sensors.mag.online.warn_consistency_deg (ends below half).

Fallback (sensors.mag.online.fallback_speed_mps > 0): while mag_consistency exceeds the warning threshold at a
GNSS speed of at least fallback_speed_mps, the EKF gets no magnetometer samples but, at each GNSS fix with a
usable course, a synthetic field whose tilt-compensated heading is the mean of the last FALLBACK_MEAN_FIXES
reference headings, each carried to now by the integrated yaw rate (in turns the course lags the bow by the
receiver's latency, about 0.5 s times the turn rate). It starts with a "failsafe" event (failsafe "compass",
action "gnss-heading") and ends ("recovered") when mag_consistency falls below half the threshold or the speed
has stayed 0.1 m/s below fallback_speed_mps for FALLBACK_SLOW_EXIT_S (until then: gyro only, no heading aiding).
Why: docs/design-notes/core.md, "Calibration".
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from pathlib import Path
from typing import Callable, Optional

from autopilot.calibration.store import replace_keeping_old
from autopilot.guidance.turning import sway_time_constant_s
from estimation.heading.mag_calibration import CalibrationFit, MagCalibration
from estimation.heading.mag_online import MagProposal, OnlineCalLimits, OnlineMagCalibration, compose
from estimation.navekf.model import IX_CE, IX_CN, IX_U, IX_V

FIGURE_PERIOD_S = 1.0       # how often mag_consistency_deg is recomputed
DRIFT_TAU_S = 30.0          # low-pass of the EKF's drift taken as the drift of the reference heading
DRIFT_TRUST_FIXES = 10      # the drift follows the EKF only while the mean of these last reference errors is small
FALLBACK_SLOW_EXIT_S = 20.0  # fallback: ends after the speed has stayed below its threshold this long [s]
FALLBACK_MEAN_FIXES = 10    # fallback: the heading given to the EKF is its own plus the mean offset of this many
DRIFT_SETTLE_S = 30.0       # no reference heading before the drift has been learnt this long (converged filter)
DRIFT_SECTORS = 8           # the drift is also learnt per sector of course over ground (leeway varies with it)
DRIFT_RESUME_MPS = 0.05     # a held drift follows the EKF again once the EKF's drift is back this close to it
DRIFT_MAX_HOLD_S = 600.0    # ... or after this long (real currents change too)
DRIFT_MIN_STD_MPS = 0.005   # the drift's weights: the filter's drift is never taken as better than this
SECTOR_PRIOR = 0.25         # a sector's first visit starts from the drift for all courses at this part of its weight
MAX_SLIDE_RAD = math.radians(3.0)  # a course is a reference only while the hull's predicted slide is within this
DISTURBANCE_WARNING = "magnetic heading disagrees with the GNSS course"   # how the warning event begins
_MAX_SLIDE_TAN = math.tan(MAX_SLIDE_RAD)


class MagCalibrationWatch:
    """See the module docstring. `emit(t_s, kind, message, figures)` reports events; `base`: the calibration
    the backend applies (None: none, the identity); `save_path`: where accepted updates are written (None:
    nowhere)."""

    def __init__(self, vessel, base: Optional[MagCalibration], save_path: Optional[Path],
                 emit: Callable[..., None]):
        mag = vessel.sensors.mag
        cfg = mag.online
        self.cfg = cfg
        self.vessel_name = vessel.name
        limits = OnlineCalLimits(min_arc_deg=cfg.min_arc_deg, max_consistency_deg=cfg.max_consistency_deg,
                                 min_speed_mps=cfg.min_speed_mps)
        self.online = OnlineMagCalibration(mag.field_t, mag.inclination_deg, mag.declination_deg, limits)
        self.base = base if base is not None else MagCalibration()
        self.save_path = Path(save_path) if (save_path is not None and cfg.save) else None
        self._emit = emit
        self.consistency_deg: Optional[float] = None
        self.accepted: list = []            # accepted MagProposals, in order
        self.save_errors = 0
        self._warned = False
        self._next_figure_s = -math.inf
        self._utc: Optional[str] = None
        self.drift_ne: Optional[tuple] = None    # the drift of the reference heading, NED [m/s]
        self.drift_held = False                  # True while the magnetometer disagrees: drift not learnt
        self._drift_t: Optional[float] = None
        self._held_since = -math.inf
        self._sector_drift: dict = {}            # course sector -> drift learnt there, NED [m/s]
        self._sector_weight: dict = {}           # course sector -> its mean's weights (as _drift_weight)
        self._drift_t0 = math.inf
        self._drift_weight = (0.0, 0.0)          # the drift's mean: sum of forgotten weights x time, north/east
        self.fallback = False                    # the EKF's compass is the GNSS course (see the module docstring)
        self._pending: list = []                 # (time_s, reference heading [rad]) for the next cycle's EKF
        self._offsets: deque = deque(maxlen=FALLBACK_MEAN_FIXES)   # reference minus gyro heading [rad]
        self._gyro_heading = 0.0                 # integral of the estimate's yaw rate [rad] (any origin)
        self._gyro_t: Optional[float] = None
        self._last_sog: Optional[float] = None
        self._slow_since: Optional[float] = None  # fallback: when the speed last fell below its threshold [s]
        h = vessel.hull
        # the file's linear sway: v relaxes toward m11 u r / Y_v with the sway time constant (none without Y_v)
        self._slide_per_rps = (h.mass_kg - h.x_udot) / h.y_v if h.y_v < 0.0 else 0.0
        self._sway_tc_s = sway_time_constant_s(h)
        self._slide_mps = 0.0
        self._slide_t: Optional[float] = None
        mag_cfg = vessel.sensors.mag
        self._decl_rad = math.radians(mag_cfg.declination_deg)
        self._antenna_x_m = vessel.sensors.gnss.antenna_x_m
        self._antenna_y_m = vessel.sensors.gnss.antenna_y_m
        self._h_t = mag_cfg.field_t * math.cos(math.radians(mag_cfg.inclination_deg))
        self._z_t = mag_cfg.field_t * math.sin(math.radians(mag_cfg.inclination_deg))

    # ------------------------------------------------------------------------------------------ cycle
    def before_estimator(self, batch, estimator):
        """Store the batch's magnetometer samples; return the batch the estimator should get (the same object
        until an update has been accepted, then a copy with corrected fields)."""
        if not batch.mag and not self.fallback:
            return batch
        att = getattr(estimator, "attitude", None)
        roll = getattr(att, "dynamic_roll_rad", 0.0) if att is not None else 0.0
        pitch = getattr(att, "dynamic_pitch_rad", 0.0) if att is not None else 0.0
        online = self.online
        for s in batch.mag:
            if not s.stale:
                online.add_sample(s.time_s, s.field_t, roll, pitch)
        if self.fallback:
            synthetic = [self._synthetic(t, psi, roll, pitch, estimator) for t, psi in self._pending]
            self._pending = []
            return dataclasses.replace(batch, mag=synthetic)
        if online.updates == 0:
            return batch
        mag = [dataclasses.replace(s, field_t=online.correct(s.field_t)) if usable_mag_sample(s) else s
               for s in batch.mag]
        return dataclasses.replace(batch, mag=mag)

    def after_estimator(self, t_s: float, batch, nav, estimator=None, converged: bool = True) -> None:
        """Turn the batch's GNSS courses into reference headings; advance the fits; refresh the figure.
        `converged`: the estimator's health says it has converged (until then its drift is not learnt)."""
        if nav is not None and nav.valid:
            # a heading integrated from the estimate's yaw rate alone: the fallback's frame for averaging courses
            if self._gyro_t is not None and math.isfinite(nav.yaw_rate_rps):
                self._gyro_heading += nav.yaw_rate_rps * max(0.0, t_s - self._gyro_t)
            self._gyro_t = t_s
        settled = self._follow_slide(t_s, nav)
        if nav is not None and nav.valid and converged:
            for fix in batch.gps:
                if fix.valid and fix.cog_rad is not None and fix.sog_mps is not None:
                    self._learn_drift(fix.time_s, nav, estimator, fix.cog_rad, settled)
                    crab = self._crab_rad(fix.cog_rad, fix.sog_mps, nav)
                    self._last_sog = fix.sog_mps
                    if self.fallback and crab is not None and fix.time_s - self._drift_t0 >= DRIFT_SETTLE_S:
                        # one course is good to several degrees: the mean of the last FALLBACK_MEAN_FIXES, each
                        # carried to now by the yaw-rate-integrated heading (not the EKF's, which they move)
                        off = self._offsets
                        off.append(math.remainder(fix.cog_rad - crab - self._gyro_heading, 2.0 * math.pi))
                        mean = math.atan2(sum(map(math.sin, off)), sum(map(math.cos, off)))
                        self._pending.append((fix.time_s, self._gyro_heading + mean))
                    if crab is not None and settled and fix.time_s - self._drift_t0 >= DRIFT_SETTLE_S:
                        self.online.add_reference(fix.time_s, fix.cog_rad, fix.sog_mps, crab, nav.yaw_rate_rps)
                if fix.utc:
                    self._utc = fix.utc
        prop = self.online.update(t_s)
        if prop is not None and prop.accepted:
            self._accept(t_s, prop)
        if t_s >= self._next_figure_s:
            self._next_figure_s = t_s + FIGURE_PERIOD_S
            self._refresh(t_s)

    def diagnostic(self) -> tuple:
        """(level "OK"|"WARN", one-line message, values) for a diagnostics display (ROS /diagnostics)."""
        c, warn = self.consistency_deg, self.cfg.warn_consistency_deg
        p = self.online.last_proposal
        values = {"mag_consistency_deg": "none" if c is None else round(c, 2),
                  "warn_consistency_deg": warn, "updates_accepted": self.online.updates,
                  "drift_held": self.drift_held, "save_errors": self.save_errors,
                  "last_fit": "none" if p is None else (f"{p.method or 'no fit'} over {p.window_s:g} s: "
                                                        + ("accepted" if p.accepted else p.reason))}
        if c is not None and c > warn:
            return "WARN", f"heading disagrees with the GNSS course by {c:.1f} deg RMS", values
        if self.save_errors:
            return "WARN", f"{self.save_errors} calibration update(s) could not be saved", values
        if c is None:
            return "OK", "no GNSS course at speed in the last minute", values
        return "OK", f"heading agrees with the GNSS course ({c:.1f} deg RMS)", values

    # ------------------------------------------------------------------------------------------ helpers
    def _learn_drift(self, t_s: float, nav, estimator, cog_rad: float, settled: bool = True) -> None:
        """Follow the EKF's drift (low-passed) while the magnetic heading agrees with the references: the
        velocity over ground minus its surge through the water along the bow, in NED,
        d = R(psi) (surge_over_ground - u_water, sway_over_ground): current, wind push and leeway together.
        Besides one drift for all, one per DRIFT_SECTORS sector of course over ground on straight running
        with the hull's predicted slide within MAX_SLIDE_RAD (`settled`): leeway depends on the heading
        relative to the wind, and a survey comes back to the same headings."""
        state = getattr(estimator, "state", None)
        u_water = float(state[IX_U]) if state is not None else nav.surge_mps
        c, s = math.cos(nav.heading_rad), math.sin(nav.heading_rad)
        bx, by = nav.surge_mps - u_water, nav.sway_mps
        d = (c * bx - s * by, s * bx + c * by)
        if not (math.isfinite(d[0]) and math.isfinite(d[1])):
            return
        if self.drift_ne is None:
            self.drift_ne, self._drift_t, self._drift_t0 = d, t_s, t_s
            self._drift_weight = tuple(wi * 1e-3 for wi in _drift_weights(estimator, nav.heading_rad))
            return
        recent = self.online.recent_error_deg(DRIFT_TRUST_FIXES)
        disagree = recent is not None and recent > self.cfg.warn_consistency_deg
        k = _sector(cog_rad)
        if disagree and not self.drift_held:
            self.drift_held, self._held_since = True, t_s
        elif self.drift_held and not disagree:
            # the filter learnt the disturbance into its drift: wait until it has unlearnt it (on this course)
            held = self._sector_drift.get(k, self.drift_ne)
            back = math.hypot(d[0] - held[0], d[1] - held[1]) < DRIFT_RESUME_MPS
            self.drift_held = not (back or t_s - self._held_since > DRIFT_MAX_HOLD_S)
        assert self._drift_t is not None        # set with drift_ne on the first call
        dt = max(0.0, t_s - self._drift_t)
        self._drift_t = t_s
        if self.drift_held:
            return
        # a mean weighted by the filter's confidence, forgetting over DRIFT_TAU_S (a running mean at first)
        w = _drift_weights(estimator, nav.heading_rad)
        self.drift_ne, self._drift_weight = _weighted_step(self.drift_ne, self._drift_weight, d, w, dt)
        if settled and abs(nav.yaw_rate_rps) <= self.online.limits.max_ref_yaw_rate_rps:
            # the sector's own weighted mean, forgetting only while on it: a first visit starts from the drift
            # for all courses at SECTOR_PRIOR of its weight; what a still-converging filter left there weighs
            # little against the settled filter's drift on the next visit
            old = self._sector_drift.get(k, self.drift_ne)
            acc = self._sector_weight.get(k) or tuple(SECTOR_PRIOR * x for x in self._drift_weight)
            self._sector_drift[k], self._sector_weight[k] = _weighted_step(old, acc, d, w, dt)

    def _follow_slide(self, t_s: float, nav) -> bool:
        """Advance the slide the vessel file predicts from the estimate's surge and yaw rate; True while it is
        within MAX_SLIDE_RAD of the bow (or there is no estimate to predict it from)."""
        if nav is None or not nav.valid or not (math.isfinite(nav.surge_mps) and math.isfinite(nav.yaw_rate_rps)):
            return True
        dt = 0.0 if self._slide_t is None else min(max(t_s - self._slide_t, 0.0), 1.0)
        self._slide_t = t_s
        steady = self._slide_per_rps * nav.surge_mps * nav.yaw_rate_rps
        self._slide_mps += (steady - self._slide_mps) * min(1.0, dt / self._sway_tc_s)
        return abs(self._slide_mps) <= _MAX_SLIDE_TAN * max(abs(nav.surge_mps), self.cfg.min_speed_mps)

    def _crab_rad(self, cog_rad: float, sog_mps: float, nav) -> Optional[float]:
        """COG minus the heading of (velocity over ground - drift): the crab the drift explains [rad].

        The course is the antenna's: away from the reference point it moves r x (x_ant, y_ant) faster, which
        is taken out first (1.2 m aft at 0.05 rad/s, the fastest turn a reference is taken in, would read
        as 3.4 degrees of crab at 1 m/s)."""
        dn, de = self._sector_drift.get(_sector(cog_rad), self.drift_ne or (0.0, 0.0))
        r, psi = nav.yaw_rate_rps, nav.heading_rad
        if not (math.isfinite(r) and math.isfinite(psi)):
            r = psi = 0.0                        # no lever-arm term rather than a NaN reference heading
        lx, ly = -r * self._antenna_y_m, r * self._antenna_x_m        # the lever arm's velocity, body
        c, s = math.cos(psi), math.sin(psi)
        dn += c * lx - s * ly
        de += s * lx + c * ly
        vn, ve = sog_mps * math.cos(cog_rad) - dn, sog_mps * math.sin(cog_rad) - de
        if math.hypot(vn, ve) < self.cfg.min_speed_mps:
            return None                          # too slow through the water for the course to mean a heading
        return math.remainder(cog_rad - math.atan2(ve, vn), 2.0 * math.pi)

    @property
    def running_calibration(self) -> MagCalibration:
        """Base and running correction composed: the calibration of the raw sensor the boat now flies with."""
        return compose(self.online.delta, self.base, method=self.online.delta.method
                       if self.online.updates else self.base.method)

    def _refresh(self, t_s: float) -> None:
        c = self.online.mag_consistency_deg(t_s)
        self.consistency_deg = c
        warn = self.cfg.warn_consistency_deg
        self._fallback_update(t_s, c)
        if c is None:
            return
        if not self._warned and c > warn:
            self._warned = True
            self._emit(t_s, "warning", f"{DISTURBANCE_WARNING} by {c:.1f} deg RMS over the "
                                       f"last minute (warning above {warn:g}): a new magnetic disturbance near the "
                                       f"compass? The calibration is refitted from the next turns",
                       {"mag_consistency_deg": round(c, 2)})
        elif self._warned and c < 0.5 * warn:
            self._warned = False
            self._emit(t_s, "calibration", f"magnetic heading agrees with the GNSS course again ({c:.1f} deg RMS)",
                       {"mag_consistency_deg": round(c, 2)})

    def _fallback_update(self, t_s: float, c: Optional[float]) -> None:
        """Start or end the GNSS-course heading fallback (see the module docstring)."""
        speed = self.cfg.fallback_speed_mps
        if speed <= 0.0:
            return
        warn, sog = self.cfg.warn_consistency_deg, self._last_sog
        if not self.fallback:
            if c is not None and c > warn and sog is not None and sog >= speed:
                self.fallback = True
                self._slow_since = None
                self._emit(t_s, "failsafe", f"compass disagrees with the GNSS course by {c:.1f} deg RMS at "
                                            f"{sog:.1f} m/s: heading from the GNSS course (minus crab) until it "
                                            f"agrees again", {"mag_consistency_deg": round(c, 2)},
                           failsafe="compass", action="gnss-heading")
            return
        slow = sog is None or sog < speed - 0.1
        if not slow:
            self._slow_since = None
        elif self._slow_since is None:
            self._slow_since = t_s
        why = None
        if c is not None and c < 0.5 * warn:
            why = f"the magnetometer agrees with the GNSS course again ({c:.1f} deg RMS)"
        elif slow and self._slow_since is not None and t_s - self._slow_since >= FALLBACK_SLOW_EXIT_S:  # set if slow
            why = (f"below {speed:g} m/s for {FALLBACK_SLOW_EXIT_S:g} s the GNSS course is no heading: back to the "
                   f"magnetometer")
        if why:
            self.fallback = False
            self._pending = []
            self._offsets.clear()
            self._emit(t_s, "failsafe", f"compass: {why}",
                       {"mag_consistency_deg": None if c is None else round(c, 2)},
                       failsafe="compass", action="recovered")

    def _synthetic(self, t_s: float, heading_rad: float, roll: float, pitch: float, estimator):
        """A MagSample at t_s whose tilt-compensated heading (roll, pitch as the EKF's) is heading_rad [rad]:
        the local field turned to that heading, in body FRD; through the estimator's own calibration, if any,
        backwards, so that applying it gives this field."""
        from autopilot.vocab.angles import rotation_rpy
        from autopilot.vocab.types import MagSample
        psi_m = heading_rad - self._decl_rad
        level = (self._h_t * math.cos(psi_m), -self._h_t * math.sin(psi_m), self._z_t)
        m = rotation_rpy(roll, pitch, 0.0).T @ level
        cal = getattr(estimator, "mag_calibration", None)
        if cal is not None:
            import numpy as np
            m = np.linalg.solve(np.asarray(cal.matrix), m) + np.asarray(cal.offset_t)
        return MagSample(t_s, (float(m[0]), float(m[1]), float(m[2])))

    def _accept(self, t_s: float, prop: MagProposal) -> None:
        # an accepted proposal carries its correction and both consistency figures (OnlineMagCalibration._judge)
        assert prop.delta is not None
        assert prop.consistency_before_deg is not None and prop.consistency_after_deg is not None
        self.accepted.append(prop)
        cal = self.running_calibration
        moved_ut = [1e6 * x for x in prop.delta.offset_t]
        f = prop.figures
        figures = {
            "method": prop.method, "window_s": prop.window_s, "heading_arc_deg": round(prop.heading_arc_deg, 1),
            "gnss_fixes": prop.n_refs,
            "consistency_before_deg": round(prop.consistency_before_deg, 2),
            "consistency_after_deg": round(prop.consistency_after_deg, 2),
            "offset_change_ut": [round(x, 2) for x in moved_ut],
            "offset_ut": [round(1e6 * x, 2) for x in cal.offset_t],
            "residual_rms_pct": round(float(f.get("residual_rms_pct", math.nan)), 2),
            "coverage": round(float(f.get("coverage", math.nan)), 3),
            "field_ratio": round(float(f.get("field_ratio", math.nan)), 3),
            "anisotropy": round(float(f.get("anisotropy", math.nan)), 3),
        }
        saved = self._save(t_s, cal, prop) if self.save_path is not None else None
        where = f"; saved to {saved} (previous kept as {saved}.prev)" if saved else ""
        self._emit(t_s, "calibration",
                   f"magnetometer calibration updated ({prop.method} fit over the last {prop.window_s:g} s, "
                   f"{prop.heading_arc_deg:.0f} deg of turning): heading vs GNSS course "
                   f"{prop.consistency_before_deg:.1f} -> {prop.consistency_after_deg:.1f} deg RMS over "
                   f"{prop.n_refs} fixes; hard iron moved by ({moved_ut[0]:.1f}, {moved_ut[1]:.1f}, "
                   f"{moved_ut[2]:.1f}) uT; fit residual {figures['residual_rms_pct']:.1f} % of the field" + where,
                   figures)

    def _save(self, t_s: float, cal: MagCalibration, prop: MagProposal) -> Optional[Path]:
        """Write the running calibration over save_path, the old file kept as .prev (and the first as .orig)."""
        path = self.save_path
        figures = dict(prop.figures, consistency_before_deg=prop.consistency_before_deg,
                       consistency_after_deg=prop.consistency_after_deg, window_s=prop.window_s,
                       online_method=prop.method, gnss_fixes=prop.n_refs)
        stamp = self._utc or f"run time {t_s:.1f} s (no GNSS time yet)"
        try:
            replace_keeping_old(path, CalibrationFit(cal, True, "", figures), stamp, self.vessel_name,
                                written_by="autopilot (continuous calibration, checked against GNSS course)")
        except OSError as e:
            self.save_errors += 1
            self._emit(t_s, "warning", f"magnetometer calibration update could not be saved to {path}: {e} "
                                       f"(the running calibration is applied all the same)", {})
            return None
        return path


def _drift_weights(estimator, heading_rad: float) -> tuple:
    """Weights (north, east) of one EKF drift sample in the watch's mean: 1 / its variance [1/(m/s)^2], the
    filter's current plus its sway turned to NED (covariances between them ignored), each floored at
    DRIFT_MIN_STD_MPS: a filter still converging weighs a fraction of a settled one. (1, 1) without a
    covariance to read."""
    try:
        p = estimator.covariance
        var_v = float(p[IX_V, IX_V])
        var = (float(p[IX_CN, IX_CN]) + var_v * math.sin(heading_rad) ** 2,
               float(p[IX_CE, IX_CE]) + var_v * math.cos(heading_rad) ** 2)
    except (AttributeError, IndexError, TypeError, ValueError):
        return (1.0, 1.0)
    floor = DRIFT_MIN_STD_MPS ** 2
    return tuple(1.0 / max(v, floor) if math.isfinite(v) else 1.0 / floor for v in var)


def _weighted_step(mean: tuple, acc: tuple, sample: tuple, w: tuple, dt_s: float) -> tuple:
    """One step of a mean (north, east) weighted by w and forgetting over DRIFT_TAU_S: the accumulated weights
    `acc` decay by exp(-dt_s / DRIFT_TAU_S) and gain w * dt_s. Returns (new mean, new acc)."""
    keep = math.exp(-dt_s / DRIFT_TAU_S)
    acc = tuple(keep * x + wi * dt_s for x, wi in zip(acc, w))
    a = [min(1.0, wi * dt_s / x) if x > 0.0 else 1.0 for wi, x in zip(w, acc)]
    return (mean[0] + a[0] * (sample[0] - mean[0]), mean[1] + a[1] * (sample[1] - mean[1])), acc


def _sector(cog_rad: float) -> int:
    """The DRIFT_SECTORS sector of a course over ground (0 centred on north, clockwise)."""
    return int(math.floor(cog_rad / (2.0 * math.pi) * DRIFT_SECTORS + 0.5)) % DRIFT_SECTORS


def usable_mag_sample(sample) -> bool:
    """A sample the estimator would use: not stale, finite, not all zero (those pass through unchanged)."""
    f = sample.field_t
    return (not sample.stale and len(f) == 3 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in f)
            and tuple(f) != (0.0, 0.0, 0.0))
