"""The magnetometer calibration the vehicle flies with (autopilot/vehicle.py owns one `CompassCalibration`).

Three calibrations meet here:
- the backend's: what the sensor path applies before the samples reach the autopilot (the one the backend gave,
  else the vessel's sensors.mag.calibration_file, which the boat's driver reads);
- the installed one: fitted on the water by CALIBRATE_ON_WATER and applied here, to the samples, before the
  estimator (`corrected`);
- the continuous watch's (autopilot/calibration/mag_watch.py): it checks the heading against the GNSS course
  and rewrites the calibration file with an update it accepts.

`problem` is why arming in a navigating mode must wait for a calibration (None: it need not); the pre-arm checks
read it. Events (the accepted fit, a file that could not be written, the watch left off) go through `emit`, the
vehicle's (t_s, kind, message, **fields).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from autopilot.modes.calibrate_on_water import SETTLE_S, CalibrateOnWaterMode
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.schema import ConfigError
from autopilot.vocab.types import SensorBatch

CALIBRATE = CalibrateOnWaterMode.name


class CompassCalibration:
    """`given`: the calibration the backend applies (an object with `apply_xyz`; the simulator knows its
    magnetometer's distortion exactly), a non-calibration object when the backend vouches for its sensor
    otherwise, or None to read the vessel's sensors.mag.calibration_file. `save_path`: where an accepted
    calibration is written; None: that file, if any; False: nowhere (a simulation). `estimator`: the vehicle's
    (its `mag_calibration`, when it calibrates raw fields itself, turns the watch off; `reinit_heading` takes
    the heading afresh after an installed fit)."""

    def __init__(self, vessel: VesselConfig, estimator, given=None, save_path=None,
                 emit: Optional[Callable[..., None]] = None):
        self.vessel = vessel
        self._estimator = estimator
        self._given = given
        self._save_path = save_path
        self._emit = emit or (lambda *a, **k: None)
        self.problem: Optional[str] = self._problem(given)
        self.installed = None               # fitted on the water, applied to the samples before the estimator
        self.watch = self._make_watch(given, save_path)

    def backend_vouches(self, calibration) -> None:
        """The backend now applies `calibration` (or its sensor needs none): arming no longer waits for one, and
        a calibration object becomes the watch's base."""
        self.problem = self._problem(calibration)
        if self.watch is not None and hasattr(calibration, "apply_xyz"):
            self.watch.base = calibration

    def corrected(self, batch: SensorBatch) -> SensorBatch:
        """The batch with its usable magnetometer samples through the installed calibration; the batch itself
        when none is installed or it carries no magnetometer sample."""
        if self.installed is None or not batch.mag:
            return batch
        from autopilot.calibration.mag_watch import usable_mag_sample
        cal = self.installed
        mag = [dataclasses.replace(s, field_t=cal.apply_xyz(*s.field_t)) if usable_mag_sample(s) else s
               for s in batch.mag]
        return dataclasses.replace(batch, mag=mag)

    def install_on_water_fit(self, t_s: float, mode, last_fix=None) -> None:
        """An accepted fit of CALIBRATE_ON_WATER (`mode`): applied to the samples from the next cycle on (the
        estimator's heading taken afresh), written over the calibration file (the old one kept), a fresh watch on
        it, and a "calibration" event with its figures. `last_fix` stamps the file with GNSS time."""
        from estimation.heading.mag_online import compose
        fit = mode.fit
        figures = dict({"time_s": round(mode.elapsed_s, 1),
                        "turned_deg": round(math.degrees(abs(mode.turned_rad)), 1)}, **fit_figures(fit))
        sensor_cal = fit.calibration if self.installed is None else \
            compose(fit.calibration, self.installed, method="2d")
        # of the raw sensor: the backend's own calibration (if any), then what is applied here
        base = self._backend_calibration()
        raw_cal = sensor_cal if base is None else compose(sensor_cal, base, method="2d")
        saved = self._save(t_s, fit, raw_cal, last_fix)
        figures["saved_to"] = str(saved) if saved else None
        self.installed = sensor_cal
        self.problem = None
        reinit = getattr(self._estimator, "reinit_heading", None)
        if reinit is not None:
            reinit()
        self.watch = self._make_watch(raw_cal, False if saved is None else saved)
        where = (f"written to {saved} (any previous file kept as {saved}.prev)" if saved else
                 "not saved (no sensors.mag.calibration_file to write): applied for this run only")
        self._emit(t_s, "calibration",
                   f"{CALIBRATE}: magnetometer fit accepted after {figures['turned_deg']:.0f} deg in "
                   f"{figures['time_s']:.0f} s: {figures['n_samples']} readings, coverage "
                   f"{figures['coverage']:.0%}, residual {figures['residual_rms_pct']:.2f} % of the field, field ratio "
                   f"{figures['field_ratio']:.2f}, anisotropy {figures['anisotropy']:.2f}, hard iron "
                   f"({', '.join(f'{x:.1f}' for x in figures['offset_ut'])}) uT; {where}; installed, straight on the "
                   f"gyro for {SETTLE_S:g} s, then AUTO", figures=figures)

    # ------------------------------------------------------------------ helpers
    def _problem(self, given) -> Optional[str]:
        if given is not None or not self.vessel.failsafe.arming.require_mag_calibration:
            return None
        from estimation.heading.mag_calibration import calibration_for_vessel
        path = self._file_path()
        if path is not None and not path.exists():
            return (f"magnetometer calibration: {path} does not exist yet (sensors.mag.calibration_file of "
                    f"{self.vessel.source_file or 'the vessel config'}): running on raw readings; arm in "
                    f"{CALIBRATE} to fly two circles and write it, or run `autopilot calibrate mag`")
        try:
            cal = calibration_for_vessel(self.vessel)
        except ConfigError as e:
            return f"magnetometer calibration: {e}; arm in CALIBRATE_ON_WATER to fit one on the water"
        if cal is None:
            return ("magnetometer calibration: none (sensors.mag.calibration_file is not set in "
                    f"{self.vessel.source_file or 'the vessel config'}); arm in CALIBRATE_ON_WATER to fly two "
                    "circles and fit it on the water (`autopilot sim ... --calibrate-on-water` in the simulator), "
                    "or run `autopilot calibrate mag`")
        return None

    def _backend_calibration(self):
        """The calibration the backend applies: the one it gave, else the vessel's calibration file; None: none
        (or unreadable: raw readings)."""
        given = self._given
        if hasattr(given, "apply_xyz"):
            return given
        if given is not None:
            return None
        from estimation.heading.mag_calibration import calibration_for_vessel
        try:
            return calibration_for_vessel(self.vessel)
        except ConfigError:
            return None

    def _file_path(self) -> Optional[Path]:
        """sensors.mag.calibration_file as a Path (relative to the vessel file), or None when it is not set."""
        from estimation.heading.mag_calibration import calibration_path
        return calibration_path(self.vessel)

    def _save(self, t_s: float, fit, raw_cal, last_fix) -> Optional[Path]:
        """Write `raw_cal` (the calibration of the raw sensor) over the calibration file, the old one kept; None
        when there is no file to write or it could not be written (a warning event says why)."""
        from autopilot.calibration.store import replace_keeping_old
        from estimation.heading.mag_calibration import CalibrationFit
        path = self._save_path
        if path is False:
            return None
        if path is None:
            path = self._file_path()
            if path is None:
                return None
        stamp = getattr(last_fix, "utc", None) or f"run time {t_s:.1f} s (no GNSS time yet)"
        try:
            return replace_keeping_old(path, CalibrationFit(raw_cal, True, "", fit.figures), stamp, self.vessel.name,
                                       written_by=f"autopilot {CALIBRATE} (two circles on the water)")
        except OSError as e:
            self._emit(t_s, "warning", f"{CALIBRATE}: the calibration could not be saved to {path}: {e} (it is "
                                       f"applied for this run all the same)")
            return None

    def _make_watch(self, given, path):
        """The continuous magnetometer calibration (None when sensors.mag.online.enabled is off). Its base is the
        calibration the backend applies: the one given, else the vessel's calibration file (unreadable: none,
        and the pre-arm check says why)."""
        if not self.vessel.sensors.mag.online.enabled:
            return None
        if getattr(self._estimator, "mag_calibration", None) is not None:
            # the fits work on the field the sensor path delivers calibrated; an estimator that calibrates raw
            # fields itself (the typed simulation of a distorted magnetometer) would be corrected twice
            self._emit(0.0, "warning", "continuous magnetometer calibration off: the estimator applies its own "
                                       "calibration (apply it in the sensor driver instead)")
            return None
        from autopilot.calibration.mag_watch import MagCalibrationWatch
        base = given if hasattr(given, "apply_xyz") else None
        if base is None and given is None:
            base = self._backend_calibration()
        if path is False:
            path = None
        elif path is None:
            path = self._file_path()
        try:
            return MagCalibrationWatch(self.vessel, base, path,
                                       lambda t, kind, msg, figures, **kw: self._emit(t, kind, msg, figures=figures,
                                                                                       **kw))
        except ValueError as e:            # e.g. an inclination of 90 degrees: no horizontal field to fit
            self._emit(0.0, "warning", f"continuous magnetometer calibration off: {e}")
            return None


def fit_figures(fit) -> dict:
    """A one-off fit's quality figures, rounded for an event, plus the fitted hard iron [uT]."""
    f = fit.figures
    out: Dict[str, Any] = {k: (round(float(f[k]), 4) if k in f else None)
           for k in ("coverage", "residual_rms_pct", "field_ratio", "anisotropy")}
    out["n_samples"] = int(f.get("n_samples", 0))
    out["offset_ut"] = [round(1e6 * x, 2) for x in fit.calibration.offset_t]
    out["accepted"] = bool(fit.accepted)
    out["reason"] = fit.reason
    return out
