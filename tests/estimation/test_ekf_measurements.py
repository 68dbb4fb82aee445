"""The samples of a cycle become the filter's measurements: windowed means, the usual gyro + heading pair fused
as one, and what is wrong with a sample counted rather than passed on."""
from __future__ import annotations

import math

import pytest

from autopilot.vocab.types import GpsFix, ImuSample, MagSample, SensorBatch
from estimation.navekf.measurements import GPS, GYRO, HEADING, HEADING_GYRO, MeasurementBuilder
from estimation.navekf.tuning import EkfTuning

FIELD_T = 50e-6
LEVEL = (0.0, 0.0, -9.81)


def _builder(**tuning):
    counters = dict(stale_samples=0, bad_samples=0, mag_rejected=0)
    return MeasurementBuilder(EkfTuning(**tuning), FIELD_T, 0.0, None, counters), counters


def _toward_east():
    """A level boat heading east (090): the horizontal field points to port, -y in FRD."""
    return (0.0, -FIELD_T * 0.6, FIELD_T * 0.8)


def test_one_gyro_window_and_one_heading_make_a_single_measurement_at_the_headings_time():
    b, _ = _builder()
    imu = [ImuSample(10.0 + 0.01 * k, LEVEL, (0.0, 0.0, 0.1 + 0.01 * k)) for k in range(3)]
    mag = [MagSample(10.02, _toward_east())]
    (m,) = b.measurements(SensorBatch(imu=imu, mag=mag), (0.0, 0.0))
    t, kind, n, (psi, n_gyro, rate, dt_gyro) = m
    assert kind == HEADING_GYRO and t == pytest.approx(10.02) and n == 1 and n_gyro == 3
    assert psi == pytest.approx(math.pi / 2, abs=1e-9) and rate == pytest.approx(0.11)
    assert dt_gyro == pytest.approx(10.01 - 10.02)


def test_samples_beyond_one_window_are_averaged_per_window_and_sorted_with_the_fixes():
    b, _ = _builder(window_s=0.05)
    imu = [ImuSample(10.0 + 0.02 * k, LEVEL, (0.0, 0.0, 0.2)) for k in range(6)]   # 10.00 .. 10.10
    fix = GpsFix(time_s=10.03, lat_deg=51.0, lon_deg=17.0)
    out = b.measurements(SensorBatch(gps=[fix], imu=imu), (0.0, 0.0))
    assert [k for _, k, _, _ in out] == [GYRO, GPS, GYRO]
    assert [n for _, k, n, _ in out if k == GYRO] == [3, 3] and out[1][3] is fix
    assert [t for t, _, _, _ in out] == sorted(t for t, _, _, _ in out)


def test_stale_non_finite_and_disturbed_samples_are_counted_and_dropped():
    from estimation.heading.mag_calibration import MagCalibration
    counters = dict(stale_samples=0, bad_samples=0, mag_rejected=0)
    identity = MagCalibration(offset_t=(0.0, 0.0, 0.0))
    b = MeasurementBuilder(EkfTuning(), FIELD_T, 0.0, identity, counters)
    mag = [MagSample(1.0, _toward_east(), stale=True), MagSample(1.01, (math.nan, 0.0, 0.0)),
           MagSample(1.02, (0.0, -3 * FIELD_T, 0.0))]                # three times the field: a disturbance
    gps = [GpsFix(time_s=math.nan, lat_deg=51.0, lon_deg=17.0), GpsFix(time_s=1.0, lat_deg=math.nan, lon_deg=17.0)]
    out = b.measurements(SensorBatch(gps=gps, mag=mag), (0.0, 0.0))
    assert out == [] and counters == dict(stale_samples=1, bad_samples=3, mag_rejected=1)


def test_a_heading_alone_is_its_own_measurement():
    b, _ = _builder()
    (m,) = b.measurements(SensorBatch(mag=[MagSample(3.0, _toward_east())]), (0.0, 0.0))
    assert m[1] == HEADING and m[3] == pytest.approx(math.pi / 2, abs=1e-9)
