"""The kinematic smoother that gives identification its body velocities without the hull model: a boat's true
motion, an accelerometer with noise and bias, and 1 Hz GNSS fixes with noise; the smoother must recover u and
v far better than the fixes alone, find the accelerometer bias, keep the sway speed in turns free of a logged
heading that lags the turn and of fixes that describe the boat later than stamped, and refuse runs it cannot
smooth."""
from __future__ import annotations

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from estimation.identification.track_smoother import smooth_track
from hil.sim.excitation import excitation, plant_run


@pytest.fixture(scope="module")
def boat():
    """The FOKA hull under its identification excitation: true u, v, r, heading, track and accelerometer."""
    vessel = load_vessel("foka")
    t, x, n = excitation(vessel, seed=3)
    d = plant_run(vessel, t, x, n)
    psi = 0.3 + _integral(t, d.r)
    vn = d.u * np.cos(psi) - d.v * np.sin(psi)
    ve = d.u * np.sin(psi) + d.v * np.cos(psi)
    north, east = _integral(t, vn), _integral(t, ve)
    ax = d.u_dot - d.r * d.v                     # specific force of a level hull: the inertial acceleration
    ay = d.v_dot + d.r * d.u
    return t, d, psi, north, east, ax, ay


def _integral(t, y):
    """Trapezoidal running integral from 0 at t[0] (the plant's rates are smooth: exact to well under 1 mm)."""
    return np.concatenate([[0.0], np.cumsum(0.5 * (y[1:] + y[:-1]) * np.diff(t))])


def _sensors(boat, seed, bias=(0.03, -0.02), accel_noise=0.05, pos_noise=1.0, heading_noise=0.01):
    t, d, psi, north, east, ax, ay = boat
    rng = np.random.default_rng(seed)
    fix = (np.arange(len(t)) % 50) == 0          # 1 Hz fixes in a 50 Hz log
    fn = np.where(fix, north + rng.normal(0, pos_noise, len(t)), np.nan)
    fe = np.where(fix, east + rng.normal(0, pos_noise, len(t)), np.nan)
    return (t, psi + rng.normal(0, heading_noise, len(t)), ax + bias[0] + rng.normal(0, accel_noise, len(t)),
            ay + bias[1] + rng.normal(0, accel_noise, len(t)), fn, fe)


def test_velocities_come_back_from_accelerometer_and_1_hz_fixes(boat):
    d = boat[1]
    s = smooth_track(*_sensors(boat, seed=1), pos_std_m=1.0)
    err_u = np.sqrt(np.mean((s.u_mps - d.u)[200:-200] ** 2))
    err_v = np.sqrt(np.mean((s.v_mps - d.v)[200:-200] ** 2))
    assert err_u < 0.05 and err_v < 0.05, (err_u, err_v)
    # what the fixes alone give: their differences, 1 s apart
    fix = np.isfinite(_sensors(boat, seed=1)[4])
    speed_from_fixes = np.hypot(np.diff(_sensors(boat, seed=1)[4][fix]), np.diff(_sensors(boat, seed=1)[5][fix]))
    naive_err = np.sqrt(np.mean((speed_from_fixes - np.hypot(d.u, d.v)[fix][1:]) ** 2))
    assert naive_err > 10 * max(err_u, err_v)


def test_the_accelerometer_bias_is_found(boat):
    s = smooth_track(*_sensors(boat, seed=2, bias=(0.05, -0.04)), pos_std_m=1.0)
    assert s.bias_mps2[-1] == pytest.approx([0.05, -0.04], abs=0.015)


@pytest.mark.slow
def test_receiver_speed_and_course_are_used_when_given(boat):
    t, d, psi = boat[0], boat[1], boat[2]
    sens = _sensors(boat, seed=4, pos_noise=3.0)
    fix = np.isfinite(sens[4])
    vn = d.u * np.cos(psi) - d.v * np.sin(psi)
    ve = d.u * np.sin(psi) + d.v * np.cos(psi)
    rng = np.random.default_rng(5)
    sog = np.where(fix, np.hypot(vn, ve) + rng.normal(0, 0.03, len(t)), np.nan)
    cog = np.where(fix, np.arctan2(ve, vn), np.nan)
    without = smooth_track(*sens, pos_std_m=3.0)
    with_vel = smooth_track(*sens, fix_speed_mps=sog, fix_course_rad=cog, pos_std_m=3.0, vel_std_mps=0.05)
    def err(s):
        return np.sqrt(np.mean((s.u_mps - d.u)[200:-200] ** 2))
    assert err(with_vel) < 0.7 * err(without)


def test_sway_in_turns_survives_a_lagging_heading_and_late_fixes(boat):
    """What biased the hull fit's sway and yaw terms: an autopilot heading that trails the turn by 0.05 s (about
    1 deg at 20 deg/s, the sign of the turn) rotated u into v, and fixes describing the boat 0.08 s before their
    stamp (as an L76K's do at 9600 baud) turned the velocity in the turn. With the gyro, the heading is the
    gyro's and the latency is found from the run: sway in turns to starboard and to port comes out unbiased."""
    t, d, psi, north, east, ax, ay = boat
    rng = np.random.default_rng(7)
    n, late = len(t), 0.08
    logged_heading = np.interp(t - 0.05, t, psi) + rng.normal(0, 0.003, n)
    gyro = d.r + 0.004 + rng.normal(0, 0.002, n)
    fix = (np.arange(n) % 50) == 0
    def at_epoch(y):
        return np.where(fix, np.interp(t - late, t, y), np.nan)
    vn = d.u * np.cos(psi) - d.v * np.sin(psi)
    ve = d.u * np.sin(psi) + d.v * np.cos(psi)
    fvn = at_epoch(vn) + rng.normal(0, 0.05, n)
    fve = at_epoch(ve) + rng.normal(0, 0.05, n)
    s = smooth_track(t, logged_heading, ax + 0.03 + rng.normal(0, 0.05, n), ay - 0.02 + rng.normal(0, 0.05, n),
                     at_epoch(north) + rng.normal(0, 1.0, n), at_epoch(east) + rng.normal(0, 1.0, n),
                     np.hypot(fvn, fve), np.arctan2(fve, fvn), pos_std_m=1.0, vel_std_mps=0.05,
                     pos_bias_std_m=0.0, gyro_z_rps=gyro)
    assert s.fix_latency_s == pytest.approx(late, abs=0.02)
    err_v = (s.v_mps - d.v)[200:-200]
    r = d.r[200:-200]
    to_starboard, to_port = err_v[r > 0.1].mean(), err_v[r < -0.1].mean()
    assert abs(to_starboard - to_port) < 0.005, (to_starboard, to_port)
    assert np.sqrt(np.mean(err_v[np.abs(r) > 0.1] ** 2)) < 0.02


def test_runs_it_cannot_smooth_are_refused():
    t = np.arange(100) * 0.02
    z = np.zeros(100)
    with pytest.raises(ValueError, match="fewer than 2 GNSS fixes"):
        smooth_track(t, z, z, z, np.full(100, np.nan), np.full(100, np.nan))
    with pytest.raises(ValueError, match="strictly increasing"):
        smooth_track(t[::-1], z, z, z, z, z)
