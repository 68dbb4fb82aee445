"""The compass watch compares the magnetic heading with the GNSS course, and the course is the antenna's.

An antenna on the stern deck swings sideways in a turn: 1.2 m aft at 0.045 rad/s (just inside the gentlest
turns the watch takes a reference in) it moves 0.054 m/s to port, 3.1 degrees of course at 1 m/s. Unless the
lever arm is taken out, a perfectly calibrated compass reads as 3 degrees off on a boat that circles slowly
(a search pattern, a long arc around a buoy), and the online calibration learns that error into the field.
"""
from __future__ import annotations

import math

import pytest

from autopilot.calibration.mag_watch import MagCalibrationWatch
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import GpsFix, MagSample, NavState, SensorBatch
from tests.support.mag_field import _field_t
from tests.support.sim_sensors import with_sensors

SPEED_MPS = 1.0
YAW_RATE_RPS = 0.045


def _circle_slowly(antenna_x_m: float, seconds: float = 150.0) -> float:
    """A boat circling at YAW_RATE_RPS and SPEED_MPS with a right compass; the watch's consistency [deg]."""
    vessel = with_sensors(load_vessel("foka"), gnss={"antenna_x_m": antenna_x_m})
    watch = MagCalibrationWatch(vessel, None, None, emit=lambda *a, **k: None)
    for i in range(int(seconds * 10)):
        t = 0.1 * i
        psi = math.remainder(0.3 + YAW_RATE_RPS * t, 2.0 * math.pi)
        nav = NavState(time_s=t, north_m=0.0, east_m=0.0, heading_rad=psi, surge_mps=SPEED_MPS, sway_mps=0.0,
                       yaw_rate_rps=YAW_RATE_RPS)
        fixes = []
        if i % 10 == 0:
            # the antenna's velocity: the reference point's plus r x lever arm (body: 0, r x_ant)
            vx, vy = SPEED_MPS, YAW_RATE_RPS * antenna_x_m
            vn = vx * math.cos(psi) - vy * math.sin(psi)
            ve = vx * math.sin(psi) + vy * math.cos(psi)
            fixes.append(GpsFix(time_s=t, lat_deg=0.0, lon_deg=0.0, sog_mps=math.hypot(vn, ve),
                                cog_rad=math.atan2(ve, vn)))
        batch = SensorBatch(gps=fixes, mag=[MagSample(time_s=t, field_t=_field_t(vessel, psi))])
        watch.before_estimator(batch, None)
        watch.after_estimator(t, batch, nav)
    return watch.consistency_deg


def test_a_right_compass_agrees_with_a_stern_antennas_course_in_a_slow_circle():
    assert _circle_slowly(0.0) < 0.3                   # the lever arm is the only error in this flight
    assert _circle_slowly(-1.2) == pytest.approx(_circle_slowly(0.0), abs=0.3)


def test_a_non_finite_heading_or_yaw_rate_gives_no_nan_reference():
    """An estimator handing over NaN must not poison the fallback's mean of courses."""
    vessel = with_sensors(load_vessel("foka"), gnss={"antenna_x_m": -1.2})
    watch = MagCalibrationWatch(vessel, None, None, emit=lambda *a, **k: None)
    for heading, rate in ((math.nan, 0.01), (0.3, math.nan), (math.inf, math.inf)):
        nav = NavState(time_s=0.0, north_m=0.0, east_m=0.0, heading_rad=heading, surge_mps=1.0, sway_mps=0.0,
                       yaw_rate_rps=rate)
        crab = watch._crab_rad(0.3, 1.0, nav)
        assert crab is not None and math.isfinite(crab)
