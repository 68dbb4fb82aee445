"""Navigation EKF behaviour against a simple kinematic truth: wrap, SPD covariance, outages, glitches, timing."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import GpsFix, ImuSample, MagSample, SensorBatch, ThrustCommand
from estimation.navekf.ekf import NavigationEKF
from tests.support.kinematic_boat import FRAME, G, KinematicBoat, run

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


@pytest.fixture(scope="module")
def foka():
    return load_vessel("foka")


def test_not_valid_until_position_and_heading(foka):
    ekf = NavigationEKF(foka, FRAME)
    assert not ekf.step(0.02, SensorBatch(), None).valid
    boat = KinematicBoat(foka)
    only_mag = boat.advance(0.1)
    only_mag.gps = []
    assert not ekf.step(0.1, only_mag, None).valid, "a heading alone is not a navigation solution"
    invalid = GpsFix(0.12, 51.11, 17.06, valid=False)
    assert not ekf.step(0.12, SensorBatch(gps=[invalid]), None).valid, "an invalid fix carries no position"
    assert ekf.health(0.12).gps_invalid == 1
    nav = ekf.step(0.2, SensorBatch(gps=[boat.fix()]), None)
    assert nav.valid


def test_steady_error_well_below_raw_gnss_at_1_2_5_10_hz(foka):
    for rate in (1.0, 2.0, 5.0, 10.0):
        boat = KinematicBoat(foka, seed=3, speed_mps=0.8, gps_rate_hz=rate, heading_rad=0.3)
        ekf = NavigationEKF(foka, FRAME)
        res = run(boat, ekf, 120.0)
        settled = res[res[:, 0] > 40.0]
        err = np.hypot(settled[:, 1], settled[:, 2]).mean()
        raw = 1.7 * math.sqrt(math.pi / 2)       # mean of a Rayleigh error with sigma 1.7 per axis
        assert err < raw / 2.5, f"{rate} Hz: EKF error {err:.2f} m vs raw GNSS {raw:.2f} m"
        assert np.abs(settled[:, 3]).max() < math.radians(3), f"{rate} Hz heading error"


def test_heading_wraps_through_south(foka):
    # a slow weave across +-180 degrees: residuals must be wrapped or the filter would spin
    boat = KinematicBoat(foka, seed=4, heading_rad=math.radians(170), gps_rate_hz=2,
                         yaw_rate=lambda t: 0.12 * math.sin(2 * math.pi * t / 20.0))
    ekf = NavigationEKF(foka, FRAME)
    truth_sign = []
    res = run(boat, ekf, 80.0, on_cycle=lambda t, nav: truth_sign.append(math.copysign(1.0, boat.psi)))
    assert min(truth_sign) < 0 < max(truth_sign), "the boat must have crossed 180 degrees"
    assert np.abs(res[res[:, 0] > 5, 3]).max() < math.radians(4)
    h = ekf.health(boat.t)
    assert h.mag_rejected == 0 and h.mag_reacquisitions == 0, "an unwrapped residual would look like 360 deg"
    assert h.mag_accepted > 1500


def test_covariance_stays_symmetric_positive_definite_over_30_min(foka):
    boat = KinematicBoat(foka, seed=5, speed_mps=1.0, gps_rate_hz=5,
                         yaw_rate=lambda t: 0.15 if (t % 60.0) < 10.0 else 0.0)
    ekf = NavigationEKF(foka, FRAME)
    worst_asym, worst_min_eig = 0.0, math.inf

    def check(t, nav):
        nonlocal worst_asym, worst_min_eig
        if int(t * 50) % 250 == 0:
            P = ekf.covariance
            worst_asym = max(worst_asym, np.abs(P - P.T).max())
            worst_min_eig = min(worst_min_eig, np.linalg.eigvalsh(P).min())
    res = run(boat, ekf, 1800.0, on_cycle=check)
    assert worst_asym < 1e-12 * np.abs(ekf.covariance).max()
    assert worst_min_eig > 0.0
    assert np.hypot(res[-3000:, 1], res[-3000:, 2]).mean() < 1.0


def test_outage_dead_reckons_with_growing_covariance_and_returns_without_a_step(foka):
    boat = KinematicBoat(foka, seed=6, speed_mps=0.8, gps_rate_hz=1)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 60.0)
    std_before = ekf.health(boat.t).pos_std_m
    def drop(t, b):
        return SensorBatch(gps=[], imu=b.imu, mag=b.mag)
    out = run(boat, ekf, 30.0, batch_hook=drop)
    h = ekf.health(boat.t)
    assert h.pos_std_m > 2 * std_before, "covariance must grow while dead-reckoning"
    assert h.since_gps_s > 29.0 and not h.converged
    assert math.hypot(out[-1, 1], out[-1, 2]) < 3.0
    back = run(boat, ekf, 30.0)
    est = np.vstack([out[-1:, 4:6], back[:, 4:6]])
    steps = np.hypot(*np.diff(est, axis=0).T) - 0.8 / 50
    assert steps.max() < 0.1
    assert ekf.health(boat.t).converged


def test_single_20_m_jump_is_rejected_and_counted(foka):
    boat = KinematicBoat(foka, seed=7, speed_mps=0.8, gps_rate_hz=1)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 60.0)
    rejected = ekf.health(boat.t).gps_rejected

    def jump_once(t, batch):
        if batch.gps and 70.0 <= t < 71.0:
            fix = batch.gps[0]
            lat, lon = FRAME.to_wgs84(*(a + b for a, b in zip(FRAME.to_ned(fix.lat_deg, fix.lon_deg), (20.0, 0))))
            batch.gps = [GpsFix(fix.time_s, lat, lon, sog_mps=fix.sog_mps, cog_rad=fix.cog_rad)]
        return batch
    res = run(boat, ekf, 20.0, batch_hook=jump_once)
    assert ekf.health(boat.t).gps_rejected == rejected + 1
    steps = np.hypot(*np.diff(res[:, 4:6], axis=0).T)
    assert steps.max() < 0.1
    assert np.hypot(res[:, 1], res[:, 2]).max() < 1.5


def test_persistent_gnss_shift_is_reacquired_smoothly(foka):
    boat = KinematicBoat(foka, seed=8, speed_mps=0.8, gps_rate_hz=5)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 40.0)
    boat.gps_offset = (15.0, 0.0)        # e.g. the receiver switched to a different solution and stays there
    res = run(boat, ekf, 60.0)
    h = ekf.health(boat.t)
    assert h.gps_reacquisitions >= 1
    assert abs(res[-1, 1] - 15.0) < 1.0, "the filter follows GNSS again"
    steps = np.hypot(*np.diff(res[:, 4:6], axis=0).T)
    assert steps.max() < 0.5


def test_out_of_order_samples_give_the_same_estimate(foka):
    a = KinematicBoat(foka, seed=9, speed_mps=1.0, gps_rate_hz=5, yaw_rate=lambda t: 0.05)
    b = KinematicBoat(foka, seed=9, speed_mps=1.0, gps_rate_hz=5, yaw_rate=lambda t: 0.05)
    ekf_a, ekf_b = NavigationEKF(foka, FRAME), NavigationEKF(foka, FRAME)
    shuffler = random.Random(0)

    def shuffle(t, batch):
        for lst in (batch.gps, batch.imu, batch.mag):
            shuffler.shuffle(lst)
        return batch
    # a slow loop (5 Hz): each batch spans 200 ms of samples, delivered in scrambled order
    ra = run(a, ekf_a, 60.0, loop_hz=5.0)
    rb = run(b, ekf_b, 60.0, loop_hz=5.0, batch_hook=shuffle)
    assert np.allclose(ra[:, 4:6], rb[:, 4:6], atol=1e-6)
    # and a slow loop is as good as a fast one
    assert np.hypot(ra[100:, 1], ra[100:, 2]).mean() < 1.0


def test_late_samples_are_used_and_too_old_ones_dropped(foka):
    boat = KinematicBoat(foka, seed=10, speed_mps=1.0, gps_rate_hz=2)
    ekf = NavigationEKF(foka, FRAME)
    held = []

    def delay_gps(t, batch):
        # each fix arrives 0.3 s late (the batch after the next ones); one arrives 5 s late
        ready = [f for f in held if f.time_s <= t - 0.3]
        for f in ready:
            held.remove(f)
        held.extend(batch.gps)
        batch.gps = ready
        return batch
    res = run(boat, ekf, 60.0, batch_hook=delay_gps)
    assert np.hypot(res[-1000:, 1], res[-1000:, 2]).mean() < 0.8
    ekf.step(boat.t + 0.02, SensorBatch(gps=[GpsFix(boat.t - 5.0, 51.11, 17.06)]), None)
    assert ekf.health(boat.t).samples_too_old == 1


def test_thrust_length_must_match_the_vessel(foka):
    ekf = NavigationEKF(foka, FRAME)
    with pytest.raises(ValueError, match="2 thrusters"):
        ekf.step(0.02, SensorBatch(), ThrustCommand((1.0, 2.0, 3.0)))


def test_stale_samples_are_ignored_and_counted(foka):
    ekf = NavigationEKF(foka, FRAME)
    batch = SensorBatch(imu=[ImuSample(0.01, (0, 0, -G), (0, 0, 5.0), stale=True)],
                        mag=[MagSample(0.01, (2e-5, 0, 4e-5), stale=True)])
    ekf.step(0.02, batch, None)
    h = ekf.health(0.02)
    assert h.stale_samples == 2 and h.since_imu_s == math.inf and h.since_mag_s == math.inf


def test_magnetometer_calibration_is_applied(foka):
    from estimation.heading.mag_calibration import fit_calibration
    from hil.sim.mag_distortion import sim_distortion, simulate_readings

    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, _ = simulate_readings(foka, h, S, 3e-7, "3d", np.random.default_rng(1))
    cal = fit_calibration(readings, foka.sensors.mag.field_t, "3d").calibration

    def distort(t, batch):
        batch.mag = [MagSample(s.time_s, tuple(S @ np.array(s.field_t) + h)) for s in batch.mag]
        return batch
    errors = {}
    for name, calibration in (("raw", None), ("calibrated", cal)):
        boat = KinematicBoat(foka, seed=11, speed_mps=1.0, gps_rate_hz=1, yaw_rate=lambda t: 0.05)
        ekf = NavigationEKF(foka, FRAME, mag_calibration=calibration)
        res = run(boat, ekf, 130.0, batch_hook=distort)      # more than one full turn
        errors[name] = np.degrees(np.abs(res[res[:, 0] > 10, 3]).max())
    assert errors["raw"] > 15.0
    assert errors["calibrated"] < 3.0


def test_health_reports_consistent_innovations_and_update_ages(foka):
    boat = KinematicBoat(foka, seed=12, speed_mps=1.0, gps_rate_hz=2, yaw_rate=lambda t: 0.03)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 120.0)
    h = ekf.health(boat.t)
    assert h.valid and h.converged
    assert 0.3 < h.gps_nis_avg / 2 < 3.0, h.gps_nis_avg
    # velocity noise is 0.1 m/s here but the filter floors it at 0.15 m/s (wave motion): NIS ~ 2 * (0.1/0.15)^2
    assert 0.15 < h.gps_vel_nis_avg / 2 < 1.5, h.gps_vel_nis_avg
    assert h.mag_nis_avg < 3.0
    assert h.since_gps_s <= 0.5 and h.since_imu_s <= 0.03 and h.since_mag_s <= 0.05
    assert h.gyro_bias_rps == pytest.approx(boat.gyro_bias, abs=1e-3)
    assert h.gps_accepted >= 230 and h.gps_rejected <= 2
    d = h.as_dict()
    assert d["pos_std_m"] == h.pos_std_m
    assert NavigationEKF(foka, FRAME).health(0.0).as_dict()["since_gps_s"] is None     # never: inf -> None


def test_short_magnetic_disturbance_is_gated_out(foka):
    boat = KinematicBoat(foka, seed=13, speed_mps=1.0, gps_rate_hz=1)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 60.0)

    def disturb(t, batch):          # e.g. a steel hull passing alongside: +15 uT across the sensor for 3 s
        if 70.0 <= t < 73.0:
            batch.mag = [MagSample(s.time_s, (s.field_t[0], s.field_t[1] + 15e-6, s.field_t[2])) for s in batch.mag]
        return batch
    res = run(boat, ekf, 30.0, batch_hook=disturb)
    h = ekf.health(boat.t)
    assert h.mag_rejected >= 50
    assert h.mag_reacquisitions == 0
    assert np.degrees(np.abs(res[:, 3]).max()) < 2.0


def test_non_finite_input_never_reaches_the_estimate(foka):
    boat = KinematicBoat(foka, seed=14, speed_mps=1.0, gps_rate_hz=2)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 20.0)
    nan = float("nan")

    def poison(t, batch):
        if batch.imu:
            batch.imu.append(ImuSample(t - 0.001, (nan, 0.0, -G), (0.0, 0.0, nan)))
        if batch.mag:
            batch.mag.append(MagSample(t - 0.001, (nan, 1e-5, 4e-5)))
        if batch.gps:
            batch.gps.append(GpsFix(t - 0.001, nan, 17.06))
        return batch
    res = run(boat, ekf, 10.0, batch_hook=poison, thrust=ThrustCommand((nan, 5.0)))
    h = ekf.health(boat.t)
    assert h.bad_samples >= 500 + 250 + 20
    assert np.isfinite(res[:, 1:6]).all() and np.isfinite(ekf.covariance).all()
    assert np.hypot(res[-1, 1], res[-1, 2]) < 2.0 and h.filter_resets == 0


def test_a_diverged_filter_restarts_instead_of_publishing_nan(foka):
    boat = KinematicBoat(foka, seed=15, speed_mps=1.0, gps_rate_hz=2)
    ekf = NavigationEKF(foka, FRAME)
    run(boat, ekf, 10.0)
    ekf.kf.P[0, 0] = float("nan")
    nav = ekf.step(boat.t + 0.02, boat.advance(boat.t + 0.02), None)
    assert not nav.valid and math.isfinite(nav.north_m)
    assert ekf.health(boat.t).filter_resets == 1
    res = run(boat, ekf, 20.0)
    assert res[-1, 6] == 1.0 and np.hypot(res[-1, 1], res[-1, 2]) < 2.0
