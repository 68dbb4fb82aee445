"""CALIBRATE_ON_WATER: fly slow circles inside a box, then fit the magnetometer (first day on the water).

The heading cannot be trusted yet, so nothing here steers by it: the surge force is open loop (the vessel
file's drag at `speed_mps`), the yaw moment holds `turn_rate_dps` on the gyro (the estimate's yaw rate, which
the magnetometer does not set) by feed-forward of the file's yaw damping plus a PI loop on the rate error, and
the angle turned is the integral of that yaw rate. The raw magnetometer samples (as the sensor path delivers
them, through `record`) are kept; once `turns` full circles are done the existing one-off fit
(estimation.heading.mag_calibration.fit_calibration, method "2d": level turns) is run and judged by its own limits;
an accepted fit gets its z offset from the known field strength (with_vertical_offset), which level turns'
ellipse cannot see and a rolling hull's tilt compensation needs.

An accepted fit is handed to the vehicle at once (`install_pending` set, `fit` holding it: the vehicle installs
it in the sensor path and the estimator takes its heading afresh); the mode then runs straight on the gyro for
SETTLE_S, so the estimator re-learns its gyro bias and drift on the corrected heading before anything steers by
it. The mode is `finished` with `outcome` set to one of:
- ("fit", CalibrationFit): the circles were flown; the fit may have been refused (fit.accepted False: at once,
  nothing installed) or accepted (after the straight run);
- ("abort", reason): the boat left the box (`box_m` square centred where the mode started), the circles took
  longer than `timeout_s`, or no magnetometer samples arrived for MAG_SILENCE_S.
What follows (install the calibration and go on to AUTO, or HOLD) is the vehicle's business (Autopilot).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from autopilot.modes.base import Mode, ModeOutput
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import Wrench
from estimation.heading.mag_calibration import CalibrationFit, MagCalibration, fit_calibration, with_vertical_offset

RATE_BANDWIDTH_RPS = 1.5     # closed-loop bandwidth of the yaw-rate loop [rad/s]
RATE_INTEGRAL_S = 4.0        # its integral time [s]
MAG_SILENCE_S = 3.0          # no usable magnetometer sample for this long: abort
SPIN_UP_S = 3.0              # the first seconds (gathering speed, entering the turn) count no angle
SETTLE_S = 10.0              # straight run after an accepted fit, before the mode hands over


class CalibrateOnWaterMode(Mode):
    """See the module docstring. `cfg`: autopilot.vocab.config.MagOnWaterConfig; `vessel`: the vessel file (hull drag
    and yaw inertia/damping, magnetometer field and dip); `max_surge_n`, `max_yaw_nm`: the allocator's limits."""

    name = ModeName.CALIBRATE_ON_WATER

    def __init__(self, cfg, vessel, max_surge_n: float, max_yaw_nm: float):
        self.cfg = cfg
        self.vessel = vessel
        self.max_surge_n, self.max_yaw_nm = max_surge_n, max_yaw_nm
        h = vessel.hull
        u = cfg.speed_mps
        self.surge_n = min(max_surge_n, -(h.x_u * u + h.x_uu * u * abs(u)))
        self.rate_ref_rps = math.radians(cfg.turn_rate_dps)
        self._inertia = h.iz_kgm2 - h.n_rdot                       # yaw inertia with added mass [kg m^2]
        self._n_r, self._n_rr = h.n_r, h.n_rr
        self.outcome: Optional[tuple] = None
        self._reset(0.0, None)

    def _reset(self, t_s: float, nav) -> None:
        self.outcome = None
        self.fit: Optional[CalibrationFit] = None   # the accepted fit, once the circles are done
        self.install_pending = False   # the vehicle should install `fit` now (it clears this)
        self._t_fit: Optional[float] = None
        self.samples: list = []
        self.turned_rad = 0.0
        self._t0 = t_s
        self._t_last: Optional[float] = None
        self._t_mag = t_s
        self._integral_nm = 0.0
        self.center_ne: Optional[tuple[float, float]] = None if nav is None else (nav.north_m, nav.east_m)

    def enter(self, t_s, nav) -> None:
        self._reset(t_s, nav if nav is not None and nav.valid else None)

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    @property
    def elapsed_s(self) -> float:
        return (self._t_last if self._t_last is not None else self._t0) - self._t0

    def record(self, t_s: float, mag_samples) -> None:
        """Keep the batch's usable magnetometer samples (field [T], body FRD, as delivered by the sensor path)
        while the circles are flown."""
        from autopilot.calibration.mag_watch import usable_mag_sample
        for s in mag_samples:
            if usable_mag_sample(s):
                if self.fit is None:
                    self.samples.append(tuple(s.field_t))
                self._t_mag = t_s

    def update(self, t_s, nav) -> ModeOutput:
        if self.outcome is not None:
            return ModeOutput(wrench=Wrench(0.0, 0.0))
        if self.center_ne is None:
            self.center_ne = (nav.north_m, nav.east_m)
        dt = 0.0 if self._t_last is None else max(0.0, t_s - self._t_last)
        self._t_last = t_s
        r = nav.yaw_rate_rps if math.isfinite(nav.yaw_rate_rps) else 0.0
        if t_s - self._t0 > SPIN_UP_S and self.fit is None:
            self.turned_rad += r * dt
        why = self._abort_reason(t_s, nav)
        if why:
            self.outcome = ("abort", why)
            return ModeOutput(wrench=Wrench(0.0, 0.0))
        if self.fit is not None:
            if t_s - self._t_fit >= SETTLE_S:
                self.outcome = ("fit", self.fit)
                return ModeOutput(wrench=Wrench(0.0, 0.0))
            return ModeOutput(wrench=Wrench(self.surge_n, self._yaw_moment_nm(0.0, r, dt)))
        if abs(self.turned_rad) >= 2.0 * math.pi * self.cfg.turns:
            fit = self._fit()
            if not fit.accepted:
                self.outcome = ("fit", fit)
                return ModeOutput(wrench=Wrench(0.0, 0.0))
            self.fit, self.install_pending, self._t_fit = fit, True, t_s
            self._integral_nm = 0.0
        ref = 0.0 if self.fit is not None else self.rate_ref_rps
        return ModeOutput(wrench=Wrench(self.surge_n, self._yaw_moment_nm(ref, r, dt)))

    def _yaw_moment_nm(self, ref: float, r: float, dt: float) -> float:
        """Feed-forward of the file's yaw damping at the reference rate `ref` [rad/s], plus PI on the gyro's
        rate error; within the allocator's yaw limit [N m]."""
        ff = -(self._n_r * ref + self._n_rr * ref * abs(ref))
        kp = self._inertia * RATE_BANDWIDTH_RPS
        err = ref - r
        lim = self.max_yaw_nm
        self._integral_nm = max(-lim, min(lim, self._integral_nm + kp / RATE_INTEGRAL_S * err * dt))
        return max(-lim, min(lim, ff + kp * err + self._integral_nm))

    def _abort_reason(self, t_s: float, nav) -> str:
        assert self.center_ne is not None    # set by update() before it asks
        cn, ce = self.center_ne
        half = 0.5 * self.cfg.box_m
        dn, de = nav.north_m - cn, nav.east_m - ce
        if abs(dn) > half or abs(de) > half:
            return (f"left the {self.cfg.box_m:g} m calibration box ({dn:.1f} m N, {de:.1f} m E of its centre) "
                    f"after {math.degrees(abs(self.turned_rad)):.0f} deg of turning")
        if t_s - self._t0 > self.cfg.timeout_s:
            return (f"timed out after {self.cfg.timeout_s:g} s with {math.degrees(abs(self.turned_rad)):.0f} of "
                    f"{360.0 * self.cfg.turns:.0f} deg turned")
        if t_s - self._t_mag > MAG_SILENCE_S:
            return f"no magnetometer samples for {t_s - self._t_mag:.1f} s"
        return ""

    def _fit(self):
        mag = self.vessel.sensors.mag
        readings = np.array(self.samples, dtype=float).reshape(-1, 3)
        if len(readings) < 6:              # fewer than the ellipse algebra needs: a refused fit, not an error
            return CalibrationFit(MagCalibration(method="2d"), False,
                                  f"only {len(readings)} magnetometer readings during the circles",
                                  dict(n_samples=int(len(readings))))
        fit = fit_calibration(readings, mag.field_t, "2d", mag.inclination_deg)
        if not fit.accepted:
            return fit
        cal = with_vertical_offset(fit.calibration, readings, mag.field_t, mag.inclination_deg)
        return CalibrationFit(cal, True, "", dict(fit.figures, vertical_offset_t=cal.offset_t[2]))
