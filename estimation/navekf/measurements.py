"""A cycle's raw samples turned into the navigation filter's measurements (estimation/navekf/ekf.py updates with these).

- GNSS fixes pass through one by one. A fix without a finite time, or a valid fix without finite coordinates,
  is counted as bad and dropped; an invalid fix (no position) is passed on.
- IMU samples feed the roll/pitch filter (AttitudeFilter: gravity less the hull's own acceleration) and are
  averaged per `window_s` into one gyro z mean each.
- Magnetometer samples are calibrated (if a calibration is given), dropped when their strength is off the
  expected field by more than `mag_field_tolerance` (a disturbance, counted as mag_rejected), tilt-compensated
  into true heading with the declination, and averaged per window (on the circle).
- The usual cycle, one gyro mean and one heading within a window of each other, becomes a single combined
  measurement at the heading's time, which the filter fuses in one update.
Stale samples and samples with non-finite values are counted (stale_samples, bad_samples) and dropped.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.types import SensorBatch
from estimation.heading.mag_calibration import MagCalibration
from estimation.heading.tilt_compensated import AttitudeFilter, tilt_compensated_heading_rad
from estimation.navekf.tuning import EkfTuning

# measurement kinds; payloads: GPS the GpsFix, GYRO the mean z rate [rad/s], HEADING the mean true heading
# [rad], HEADING_GYRO (heading [rad], gyro samples, mean z rate [rad/s], gyro time less heading time [s])
GPS, GYRO, HEADING, HEADING_GYRO = "gps", "gyro", "heading", "heading_gyro"

Measurement = Tuple[float, str, int, object]     # (time [s], kind, samples averaged into it, payload)


class MeasurementBuilder:
    """Builds each cycle's measurements (see the module docstring); owns the attitude filter the tilt
    compensation needs. `counters` is the filter's counter dict (stale_samples, bad_samples, mag_rejected are
    added to). `mag_calibration` None: the driver already applies one (or the sensor is undistorted)."""

    def __init__(self, tuning: EkfTuning, field_t: float, declination_rad: float,
                 mag_calibration: Optional[MagCalibration], counters: Dict[str, int]):
        if tuning.tilt_reference not in ("auto", "absolute", "dynamic"):
            raise ValueError(f"tilt_reference must be auto, absolute or dynamic, got {tuning.tilt_reference!r}")
        self.tuning = tuning
        self.field_t = field_t
        self.declination_rad = declination_rad
        self.mag_calibration = mag_calibration
        self.counters = counters
        self.attitude = AttitudeFilter(tuning.attitude_time_constant_s, tuning.trim_time_constant_s)
        self.tilt_absolute = (tuning.tilt_reference == "absolute" or
                              (tuning.tilt_reference == "auto" and mag_calibration is not None
                               and mag_calibration.method == "3d"))

    def measurements(self, batch: SensorBatch, hull_accel_xy_mps2: Tuple[float, float]) -> List[Measurement]:
        """The batch's measurements sorted by time. hull_accel_xy_mps2: the hull's own acceleration in body
        axes (FRD) [m/s^2], which the accelerometer feels beside gravity (for the attitude filter)."""
        events: List[Measurement] = []
        for fix in batch.gps:
            if not (_finite(fix.time_s) and _finite(fix.lat_deg) and _finite(fix.lon_deg)):
                if fix.valid or not _finite(fix.time_s):
                    self.counters["bad_samples"] += 1
                    continue
            events.append((fix.time_s, GPS, 1, fix))
        gyro = self._gyro_means(batch.imu, hull_accel_xy_mps2) if batch.imu else []
        heading = self._heading_means(batch.mag) if batch.mag else []
        if len(gyro) == 1 and len(heading) == 1 and abs(gyro[0][0] - heading[0][0]) <= self.tuning.window_s:
            tg, _, ng, rate = gyro[0]
            th, _, nh, psi = heading[0]
            events.append((th, HEADING_GYRO, nh, (psi, ng, rate, tg - th)))
        else:
            events.extend(gyro)
            events.extend(heading)
        if len(events) > 1:
            events.sort(key=_first)
        return events

    def _gyro_means(self, samples, hull_accel_xy_mps2) -> List[Measurement]:
        imu = sorted(samples, key=_time_key) if len(samples) > 1 else samples
        acc_x, acc_y = hull_accel_xy_mps2
        window_s = self.tuning.window_s
        out: List[Measurement] = []
        t0 = None
        t_sum = g_sum = 0.0
        n = 0
        for s in imu:
            if s.stale:
                self.counters["stale_samples"] += 1
                continue
            if not (_finite(s.time_s) and _finite3(s.accel_mps2) and _finite3(s.gyro_rps)):
                self.counters["bad_samples"] += 1
                continue
            self.attitude.update(s.time_s, s.accel_mps2, s.gyro_rps, acc_x, acc_y)
            if t0 is None or s.time_s - t0 > window_s:
                if t0 is not None:
                    out.append((t_sum / n, GYRO, n, g_sum / n))
                t0, t_sum, g_sum, n = s.time_s, 0.0, 0.0, 0
            t_sum += s.time_s
            g_sum += s.gyro_rps[2]
            n += 1
        if t0 is not None:
            out.append((t_sum / n, GYRO, n, g_sum / n))
        return out

    def _heading_means(self, samples) -> List[Measurement]:
        mag = sorted(samples, key=_time_key) if len(samples) > 1 else samples
        att = self.attitude
        if self.tilt_absolute:
            roll, pitch = att.roll_rad, att.pitch_rad
        else:
            roll, pitch = att.dynamic_roll_rad, att.dynamic_pitch_rad
        cal, tn = self.mag_calibration, self.tuning
        out: List[Measurement] = []
        t0 = None
        t_sum = psi0 = d_sum = 0.0
        n = 0
        for s in mag:
            if s.stale:
                self.counters["stale_samples"] += 1
                continue
            if not (_finite(s.time_s) and _finite3(s.field_t)) or s.field_t == (0.0, 0.0, 0.0):
                self.counters["bad_samples"] += 1
                continue
            mx, my, mz = s.field_t
            if cal is not None:
                mx, my, mz = cal.apply_xyz(mx, my, mz)
                norm = math.sqrt(mx * mx + my * my + mz * mz)
                if abs(norm - self.field_t) > tn.mag_field_tolerance * self.field_t:
                    self.counters["mag_rejected"] += 1
                    continue
            psi = tilt_compensated_heading_rad(mx, my, mz, roll, pitch, self.declination_rad)
            if t0 is None or s.time_s - t0 > tn.window_s:
                if t0 is not None:
                    out.append((t_sum / n, HEADING, n, wrap_pi(psi0 + d_sum / n)))
                t0, t_sum, psi0, d_sum, n = s.time_s, 0.0, psi, 0.0, 0
            t_sum += s.time_s
            d_sum += wrap_pi(psi - psi0)
            n += 1
        if t0 is not None:
            out.append((t_sum / n, HEADING, n, wrap_pi(psi0 + d_sum / n)))
        return out


def _finite(v) -> bool:
    try:
        return math.isfinite(v)
    except TypeError:
        return False


def _finite3(v) -> bool:
    return len(v) == 3 and _finite(v[0]) and _finite(v[1]) and _finite(v[2])


def _time_key(sample):
    return sample.time_s


def _first(event):
    return event[0]
