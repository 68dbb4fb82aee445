"""Tilt-compensated magnetic heading and the roll/pitch filter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from estimation.heading.tilt_compensated import (
    GRAVITY_MPS2,
    AttitudeFilter,
    roll_pitch_from_accel,
    tilt_compensated_heading_rad,
)


def _rot_body_from_ned(heading, roll, pitch):
    """R such that v_body = R @ v_ned, zyx Euler angles (Fossen)."""
    cy, sy = math.cos(heading), math.sin(heading)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cr, sr = math.cos(roll), math.sin(roll)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return (rz @ ry @ rx).T


FIELD_NED = 50e-6 * np.array([math.cos(math.radians(67)), 0.0, math.sin(math.radians(67))])


@pytest.mark.parametrize("heading_deg", [0, 45, 90, 135, 179, -179, -90, -30])
@pytest.mark.parametrize("roll_deg,pitch_deg", [(0, 0), (15, 0), (0, -10), (-20, 8)])
def test_heading_is_exact_for_any_tilt(heading_deg, roll_deg, pitch_deg):
    psi, phi, theta = map(math.radians, (heading_deg, roll_deg, pitch_deg))
    R = _rot_body_from_ned(psi, phi, theta)
    m = R @ FIELD_NED
    f = R @ np.array([0, 0, -GRAVITY_MPS2])
    roll, pitch = roll_pitch_from_accel(*f)
    assert roll == pytest.approx(phi, abs=1e-9) and pitch == pytest.approx(theta, abs=1e-9)
    got = tilt_compensated_heading_rad(*m, roll, pitch)
    assert abs(math.remainder(got - psi, 2 * math.pi)) < 1e-9
    assert -math.pi <= got < math.pi


def test_uncompensated_tilt_would_be_wrong_by_degrees():
    # 10 degrees of roll heading north with a 67 degree dip: ignoring it errs by ~20 degrees
    psi, phi = 0.0, math.radians(10)
    m = _rot_body_from_ned(psi, phi, 0.0) @ FIELD_NED
    level = tilt_compensated_heading_rad(*m, 0.0, 0.0)
    assert abs(math.degrees(level - psi)) > 15
    assert tilt_compensated_heading_rad(*m, phi, 0.0) == pytest.approx(psi, abs=1e-9)


def test_declination_is_added_east_positive():
    m = _rot_body_from_ned(0.0, 0.0, 0.0) @ FIELD_NED     # bow toward magnetic north
    assert tilt_compensated_heading_rad(*m, 0.0, 0.0, math.radians(6.5)) == pytest.approx(math.radians(6.5))
    assert tilt_compensated_heading_rad(*m, 0.0, 0.0, math.radians(-185)) == pytest.approx(math.radians(175))


def test_attitude_filter_rejects_turn_acceleration_and_learns_gyro_bias():
    filt = AttitudeFilter(time_constant_s=2.0)
    u, r = 1.5, 0.2                                         # steady turn: 0.3 m/s^2 centripetal
    bias_x = 0.01
    for k in range(3000):                                    # 60 s at 50 Hz, level hull
        f = (0.0, u * r, -GRAVITY_MPS2)
        filt.update(k * 0.02, f, (bias_x, 0.0, r), accel_body_x_mps2=0.0, accel_body_y_mps2=u * r)
    assert abs(filt.roll_rad) < math.radians(0.1)
    assert filt.gyro_bias_x_rps == pytest.approx(bias_x, abs=1e-3)


def test_attitude_filter_follows_roll_through_the_gyro():
    filt = AttitudeFilter(time_constant_s=2.0)
    worst = 0.0
    for k in range(1, 1000):
        t = k * 0.01
        phi = math.radians(10) * math.sin(2 * math.pi * t / 3.0)
        p = math.radians(10) * 2 * math.pi / 3.0 * math.cos(2 * math.pi * t / 3.0)
        f = (0.0, -GRAVITY_MPS2 * math.sin(phi), -GRAVITY_MPS2 * math.cos(phi))
        filt.update(t, f, (p, 0.0, 0.0))
        worst = max(worst, abs(filt.roll_rad - phi))
    assert worst < math.radians(0.5)


def test_attitude_filter_time_constant_must_be_positive():
    with pytest.raises(ValueError, match="time_constant_s"):
        AttitudeFilter(0.0)


def test_dynamic_attitude_is_relative_to_the_slow_mean():
    # a hull trimmed 3 degrees bow-up (or an accelerometer bias that reads so), rolling 5 degrees in waves
    filt = AttitudeFilter(time_constant_s=2.0, mean_time_constant_s=30.0)
    trim = math.radians(3.0)
    worst = 0.0
    for k in range(1, 12000):                                # 120 s at 100 Hz
        t = k * 0.01
        phi = math.radians(5) * math.sin(2 * math.pi * t / 4.0)
        p = math.radians(5) * 2 * math.pi / 4.0 * math.cos(2 * math.pi * t / 4.0)
        f = (GRAVITY_MPS2 * math.sin(trim), -GRAVITY_MPS2 * math.sin(phi) * math.cos(trim),
             -GRAVITY_MPS2 * math.cos(phi) * math.cos(trim))
        filt.update(t, f, (p, 0.0, 0.0))
        if t > 60:
            worst = max(worst, abs(filt.dynamic_roll_rad - phi), abs(filt.dynamic_pitch_rad))
    assert filt.mean_pitch_rad == pytest.approx(trim, abs=math.radians(0.1))
    assert worst < math.radians(0.7)
