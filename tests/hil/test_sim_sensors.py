"""Typed sensor models of the built-in simulator (hil/sim/sensor_models.py)."""
import math

import numpy as np
import pytest

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import load_vessel
from autopilot.vocab.geodesy import LocalFrame
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant, Truth
from hil.sim.sensor_models import TypedSensorSuite
from tests.support.sim_sensors import with_sensors

FRAME = LocalFrame(51.1, 17.05)
G = 9.80665


def still(t, north=0.0, east=0.0, heading=0.0, u=0.0, v=0.0, r=0.0, du=0.0, dv=0.0):
    return Truth(t, north, east, heading, u, v, r, du, dv, (0.0, 0.0))


def fixes(suite, seconds, rate_hz, **truth):
    out, errors = [], []
    for k in range(1, int(seconds * rate_hz) + 1):
        batch = suite.sample(still(k / rate_hz, **truth))
        out += batch.gps
        errors += suite.gps_truth_errors_m
    return out, errors


@pytest.mark.slow
def test_white_gnss_noise_has_the_receivers_cep():
    vessel = load_vessel("foka")
    suite = TypedSensorSuite(vessel, FRAME, 1, gps_noise="white", gps_rate_hz=10.0)
    got, errors = fixes(suite, 2000.0, 10.0, north=30.0, east=-20.0)
    assert len(got) == 20000
    radial = []
    for fix in got:
        n, e = FRAME.to_ned(fix.lat_deg, fix.lon_deg)
        radial.append(math.hypot(n - 30.0, e + 20.0))
    assert np.median(radial) == pytest.approx(2.0, rel=0.03)              # CEP 2.0 m
    assert np.allclose(radial, errors, atol=1e-6)                        # the reported truth errors
    assert got[0].pos_std_m == pytest.approx(2.0 / 1.1774)
    n_err = [FRAME.to_ned(f.lat_deg, f.lon_deg)[0] - 30.0 for f in got]
    assert abs(np.corrcoef(n_err[:-1], n_err[1:])[0, 1]) < 0.03           # white: no memory


@pytest.mark.slow
def test_realistic_gnss_adds_a_gauss_markov_bias_with_the_configured_memory():
    vessel = with_sensors(load_vessel("foka"), gnss={"bias_sigma_m": 1.5, "bias_tau_s": 20.0})
    suite = TypedSensorSuite(vessel, FRAME, 2, gps_noise="realistic", gps_rate_hz=1.0)
    bias, errors_ned = [], []
    for k in range(1, 40001):
        batch = suite.sample(still(float(k)))
        assert len(batch.gps) == 1
        bias.append(tuple(suite.gnss.bias_m))
        errors_ned.append(suite.last_gps_truth_error_ned_m)
    bias, err = np.array(bias), np.array(errors_ned)
    assert bias.std(axis=0) == pytest.approx([1.5, 1.5], rel=0.1)
    for lag in (1, 20):
        corr = np.corrcoef(bias[:-lag, 0], bias[lag:, 0])[0, 1]
        assert corr == pytest.approx(math.exp(-lag / 20.0), abs=0.05)
    sigma = 2.0 / 1.1774
    assert err.std(axis=0) == pytest.approx([math.hypot(sigma, 1.5)] * 2, rel=0.1)
    # what a user sees: consecutive fixes share most of their error
    assert np.corrcoef(err[:-1, 1], err[1:, 1])[0, 1] == pytest.approx(
        1.5 ** 2 * math.exp(-1 / 20.0) / (sigma ** 2 + 1.5 ** 2), abs=0.05)


def test_gnss_velocity_noise_and_course_over_ground():
    vessel = load_vessel("wamv")                         # speed_noise_mps 0.1
    suite = TypedSensorSuite(vessel, FRAME, 3, gps_noise="white", gps_rate_hz=5.0)
    heading = math.radians(135.0)
    got, _ = fixes(suite, 400.0, 5.0, heading=heading, u=1.5)
    sog = np.array([f.sog_mps for f in got])
    cog = np.array([f.cog_rad for f in got])
    assert sog.mean() == pytest.approx(1.5, abs=0.01)
    assert sog.std() == pytest.approx(0.1, rel=0.1)
    assert np.all(np.abs(wrap_pi(cog - heading)) < math.radians(20.0))
    assert np.degrees(np.abs(wrap_pi(cog - heading)).mean()) < 5.0
    assert all(0.9 <= f.hdop <= 1.2 and 10 <= f.sats <= 14 and f.valid for f in got)


@pytest.mark.parametrize("level", ["typed", "bytes"])
def test_gnss_reports_the_antenna_not_the_cg(level):
    """Both sensor levels: the typed model and the emulated L76K behind the real driver (the byte level once
    reported the CG's velocity with the antenna's position)."""
    vessel = with_sensors(load_vessel("wamv"), gnss={"antenna_x_m": 2.0, "antenna_y_m": 0.5, "cep_m": 0.01,
                                                     "speed_noise_mps": 0.0})
    truth = dict(north=10.0, east=5.0, heading=math.pi / 2, u=1.0, r=0.2)
    if level == "typed":
        suite = TypedSensorSuite(vessel, FRAME, 4, gps_noise="white")
    else:
        from hil.devices.sim_devices import ByteLevelSensors
        suite = ByteLevelSensors(vessel, FRAME, 4, gps_noise="white", truth0=still(0.0, **truth))
    got = []
    for k in range(150):                              # the byte level: the first epoch's sentences at 9600 baud
        got += suite.sample(still(0.02 * k, **truth)).gps
        if got:
            break
    fix = got[0]
    n, e = FRAME.to_ned(fix.lat_deg, fix.lon_deg)
    assert (n, e) == pytest.approx((10.0 - 0.5, 5.0 + 2.0), abs=0.05)    # heading east: x east, y south
    # velocity of the antenna: forward 1.0 - r*y = 0.9 (east), starboard r*x = 0.4 (south); NMEA's
    # 0.01 kn and 0.01 deg at the byte level
    assert fix.sog_mps == pytest.approx(math.hypot(0.9, 0.4), abs=0.006)
    assert fix.cog_rad == pytest.approx(math.atan2(0.9, -0.4), abs=2e-4)


def test_samples_arrive_at_their_rates_with_their_own_time_stamps():
    suite = TypedSensorSuite(load_vessel("iacquabot"), FRAME, 5, gps_rate_hz=5.0, imu_rate_hz=100.0,
                             mag_rate_hz=10.0)
    counts = {"gps": 0, "imu": 0, "mag": 0}
    stamps = []
    for k in range(0, 151):                              # 3 s at 50 Hz
        batch = suite.sample(still(k * 0.02, u=0.5))
        counts["gps"] += len(batch.gps)
        counts["imu"] += len(batch.imu)
        counts["mag"] += len(batch.mag)
        stamps += [s.time_s for s in batch.imu]
        assert all(s.time_s <= k * 0.02 + 1e-9 for s in batch.imu + batch.mag + batch.gps)
    assert counts == {"gps": 16, "imu": 301, "mag": 31}  # 0 .. 3 s inclusive
    assert np.allclose(np.diff(stamps), 0.01)
    # a fix due between two calls is placed where the boat was at its own time stamp
    suite = TypedSensorSuite(with_sensors(load_vessel("foka"), gnss={"cep_m": 0.001}), FRAME, 5,
                             gps_noise="white", gps_rate_hz=1.0)
    suite.sample(still(0.99, north=0.0, u=2.0))
    fix = suite.sample(still(1.05, north=2.0, u=2.0)).gps[0]
    assert fix.time_s == 1.0 and FRAME.to_ned(fix.lat_deg, fix.lon_deg)[0] == pytest.approx(1.9, abs=0.01)


def test_accelerometer_reads_minus_g_when_still_and_the_centripetal_force_in_a_turn():
    vessel = load_vessel("foka")
    suite = TypedSensorSuite(vessel, FRAME, 6)
    imu = [s for k in range(500) for s in suite.sample(still(k * 0.02)).imu]
    acc = np.array([s.accel_mps2 for s in imu])
    gyro = np.array([s.gyro_rps for s in imu])
    assert acc[:, 2].mean() == pytest.approx(-G, abs=0.25)            # within the turn-on bias
    assert acc.std(axis=0) == pytest.approx([vessel.sensors.imu.accel_noise_mps2] * 3, rel=0.15)
    assert gyro.mean(axis=0) == pytest.approx(suite.imu.gyro_bias_rps, abs=0.001)
    assert gyro.std(axis=0) == pytest.approx([vessel.sensors.imu.gyro_noise_rps] * 3, rel=0.15)
    # noise-free IMU on a boat turning to starboard at 0.3 rad/s, 1.5 m/s, drifting out at 0.1 m/s
    quiet = with_sensors(vessel, imu={"gyro_noise_rps": 0.0, "gyro_bias_rps": 0.0, "accel_noise_mps2": 0.0,
                                      "accel_bias_mps2": 0.0})
    sample = TypedSensorSuite(quiet, FRAME, 6).sample(still(0.0, u=1.5, v=-0.1, r=0.3, du=0.2)).imu[0]
    assert sample.accel_mps2 == pytest.approx((0.2 + 0.3 * 0.1, 0.3 * 1.5, -G))
    assert sample.gyro_rps == pytest.approx((0.0, 0.0, 0.3))


def test_accelerometer_agrees_with_the_plant_when_it_speeds_up():
    vessel = with_sensors(load_vessel("wamv"), imu={"accel_noise_mps2": 0.0, "accel_bias_mps2": 0.0})
    plant = Plant(vessel, EnvironmentConfig(), 0, 0.0, 0.0, 0.0)
    suite = TypedSensorSuite(vessel, FRAME, 0)
    surge, accel = [], []
    for k in range(1, 251):
        truth = plant.step_to(k * 0.02, (300.0, 300.0))
        surge.append(truth.surge_mps)
        accel.append(suite.sample(truth).imu[0].accel_mps2[0])
    integrated = np.cumsum(accel) * 0.02
    assert integrated[-1] == pytest.approx(surge[-1], rel=0.02)


@pytest.mark.parametrize("heading_deg", [0.0, 37.0, 90.0, 179.0, -120.0, -45.0])
def test_magnetometer_gives_back_the_true_heading_through_the_declination(heading_deg):
    vessel = load_vessel("foka")                         # declination 6.5 deg, inclination 67 deg, 50 uT
    decl = math.radians(vessel.sensors.mag.declination_deg)
    suite = TypedSensorSuite(vessel, FRAME, 7, mag_rate_hz=50.0)
    heading = math.radians(heading_deg)
    mags = [m for k in range(200) for m in suite.sample(still(k * 0.02, heading=heading)).mag]
    assert len(mags) == 200
    b = np.array([m.field_t for m in mags])
    magnetic = np.arctan2(-b[:, 1], b[:, 0])
    true = wrap_pi(magnetic + decl)
    assert np.degrees(np.abs(wrap_pi(true - heading)).max()) < 5.0          # noise only
    assert np.degrees(abs(wrap_pi(math.atan2(-b[:, 1].mean(), b[:, 0].mean()) + decl - heading))) < 0.3
    assert np.linalg.norm(b.mean(axis=0)) == pytest.approx(50e-6, rel=0.01)
    assert b[:, 2].mean() == pytest.approx(50e-6 * math.sin(math.radians(67.0)), rel=0.01)   # down


def test_hard_and_soft_iron_distort_the_magnetometer_as_configured():
    soft = (1.1, 0.05, 0.0, 0.05, 0.9, 0.0, 0.0, 0.0, 1.0)
    hard = (20e-6, -10e-6, 5e-6)
    vessel = with_sensors(load_vessel("foka"), mag={"soft_iron": soft, "hard_iron_t": hard, "noise_t": 0.0})
    clean = with_sensors(load_vessel("foka"), mag={"noise_t": 0.0})
    for heading in (0.0, 1.0, -2.5):
        m = TypedSensorSuite(vessel, FRAME, 8).sample(still(0.0, heading=heading)).mag[0].field_t
        b = TypedSensorSuite(clean, FRAME, 8).sample(still(0.0, heading=heading)).mag[0].field_t
        expected = np.array(soft).reshape(3, 3) @ np.array(b) + np.array(hard)
        assert m == pytest.approx(tuple(expected), abs=1e-12)
    # uncalibrated, the heading is wrong by tens of degrees (as FOKA saw in the field)
    m = TypedSensorSuite(vessel, FRAME, 8).sample(still(0.0, heading=math.pi / 2)).mag[0].field_t
    assert abs(math.degrees(wrap_pi(math.atan2(-m[1], m[0]) - (math.pi / 2 - math.radians(6.5))))) > 20.0


def test_same_seed_same_readings_and_rates_do_not_couple_streams():
    vessel = load_vessel("foka")

    def imu_series(seed, gps_rate):
        suite = TypedSensorSuite(vessel, FRAME, seed, gps_rate_hz=gps_rate)
        return [s for k in range(100) for s in suite.sample(still(k * 0.02, u=1.0)).imu]

    assert imu_series(3, 1.0) == imu_series(3, 1.0)
    assert imu_series(3, 1.0) == imu_series(3, 10.0)     # more fixes, same IMU noise
    assert imu_series(3, 1.0) != imu_series(4, 1.0)


def test_bad_suite_settings_are_refused():
    vessel = load_vessel("foka")
    with pytest.raises(ValueError, match="gps_noise"):
        TypedSensorSuite(vessel, FRAME, 0, gps_noise="pink")
    with pytest.raises(ValueError, match="gps_rate_hz"):
        TypedSensorSuite(vessel, FRAME, 0, gps_rate_hz=20.0)
    with pytest.raises(ValueError, match="imu_rate_hz"):
        TypedSensorSuite(vessel, FRAME, 0, imu_rate_hz=0.0)
