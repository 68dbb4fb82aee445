"""The real Adafruit LSM9DS1 library and our driver on the register-level emulated chip.

Expected values are computed here from first principles (rotation matrices written out in this file), not by
calling the emulator's own physics, so a frame or sign error in either the emulator or the driver shows up.
"""
import math
import subprocess
import sys

import numpy as np
import pytest

from autopilot.vocab.config import ConfigError, ImuConfig, MagConfig, load_vessel
from drivers.i2c_adapter import SMBusI2C, import_without_blinka
from drivers.lsm9ds1 import ImuError, Lsm9ds1Driver, Lsm9ds1Source
from estimation.heading.mag_calibration import MagCalibration
from estimation.heading.tilt_compensated import heading_from_vectors_rad
from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
from tests.support.imu_motion import Motion
from tests.support.paths import REPO

adafruit_lsm9ds1 = import_without_blinka("adafruit_lsm9ds1")
G = 9.80665


def rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def expected_body(m: Motion, mag_cfg: MagConfig):
    """Specific force, rate and field in body FRD for the motion, worked out independently."""
    r_nb = rz(m.heading_rad) @ ry(m.pitch_rad) @ rx(m.roll_rad)
    accel = np.array([m.surge_accel_mps2 - m.yaw_rate_rps * m.sway_mps,
                      m.sway_accel_mps2 + m.yaw_rate_rps * m.surge_mps, 0.0])
    force = accel - r_nb.T @ np.array([0.0, 0.0, G])
    rate = np.array([m.roll_rate_rps, m.pitch_rate_rps, m.yaw_rate_rps])
    inc, dec = math.radians(mag_cfg.inclination_deg), math.radians(mag_cfg.declination_deg)
    b_ned = mag_cfg.field_t * np.array([math.cos(inc) * math.cos(dec), math.cos(inc) * math.sin(dec),
                                        math.sin(inc)])
    return force, rate, r_nb.T @ b_ned


def adafruit_on(emu):
    return adafruit_lsm9ds1.LSM9DS1_I2C(SMBusI2C(1, bus=emu.smbus()))


def test_chip_axes_follow_the_datasheet_conventions_as_read_by_the_adafruit_library():
    """Board flat, top up, accel X axis pointing north, turning to starboard: raw chip axes as the real chip
    reports them (accel +1 g on Z; magnetometer X opposite to accel X; left-handed accel/gyro set)."""
    mag = MagConfig(field_t=50e-6, inclination_deg=60.0, declination_deg=0.0)
    emu = Lsm9ds1Emulator(ImuConfig(), mag, noise=False)
    emu.update(0.0, Motion(heading_rad=0.0, yaw_rate_rps=0.5))
    sensor = adafruit_on(emu)
    ax, ay, az = sensor.acceleration
    assert (ax, ay) == pytest.approx((0.0, 0.0), abs=0.01) and az == pytest.approx(G, abs=0.01)
    mx, my, mz = sensor.magnetic                     # gauss
    h, v = 0.5 * math.cos(math.radians(60)), 0.5 * math.sin(math.radians(60))
    assert mx == pytest.approx(-h, abs=2e-3)         # X_M points south when X_A points north
    assert my == pytest.approx(0.0, abs=2e-3)
    assert mz == pytest.approx(-v, abs=2e-3)         # Z_M up, field points down (northern hemisphere)
    gx, gy, gz = sensor.gyro                         # rad/s
    assert gz == pytest.approx(-0.5, abs=0.01)       # clockwise seen from above = negative about Z_A (up)


@pytest.mark.parametrize("mount_rpy_deg", [(0.0, 0.0, 0.0), (180.0, 0.0, 90.0), (10.0, -20.0, 135.0)])
def test_driver_matches_truth_in_body_frame_for_tilted_turning_boat(mount_rpy_deg):
    imu_cfg = ImuConfig(mount_rpy_deg=mount_rpy_deg, accel_range_g=4, gyro_range_dps=500, rate_hz=119)
    mag_cfg = MagConfig(rate_hz=40, noise_t=0.3e-6, inclination_deg=67.0, declination_deg=6.5, range_gauss=4)
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, seed=7)
    emu.update(0.0, Motion(heading_rad=0.3))                 # still at start-up: gyro bias measured
    source = Lsm9ds1Source.open_emulated(imu_cfg, mag_cfg, emu, gyro_bias_samples=200)
    assert source.driver.was_still_at_start
    motion = Motion(heading_rad=math.radians(-140.0), surge_mps=1.5, sway_mps=-0.2, yaw_rate_rps=0.35,
                    surge_accel_mps2=0.4, sway_accel_mps2=-0.3, roll_rad=math.radians(12.0),
                    pitch_rad=math.radians(-7.0), roll_rate_rps=0.1, pitch_rate_rps=-0.05)
    force, rate, field = expected_body(motion, mag_cfg)
    imu_err, gyro_err, mag_err = [], [], []
    t = 10.0
    for _ in range(300):
        t += 0.02
        emu.update(t, motion)
        batch = source.poll(t)
        (imu,) = batch.imu
        assert not imu.stale and imu.time_s == t
        imu_err.append(np.subtract(imu.accel_mps2, force))
        gyro_err.append(np.subtract(imu.gyro_rps, rate))
        for m in batch.mag:
            mag_err.append(np.subtract(m.field_t, field))
    imu_err, gyro_err, mag_err = map(np.asarray, (imu_err, gyro_err, mag_err))
    # magnetometer sampled at its own 40 Hz rate (of a 50 Hz loop)
    assert 230 <= len(mag_err) <= 250
    # means: accel within its turn-on bias (0.05 m/s^2 std -> 4 sigma), gyro bias removed (noise/sqrt(n))
    assert np.all(np.abs(imu_err.mean(axis=0)) < 0.2)
    assert np.all(np.abs(gyro_err.mean(axis=0)) < 0.002)
    assert np.all(np.abs(mag_err.mean(axis=0)) < 0.15e-6)
    # spreads: the configured white noise (plus quantisation)
    assert np.all(imu_err.std(axis=0) < 1.3 * 0.05 + 0.005)
    assert np.all(gyro_err.std(axis=0) < 1.3 * 0.002 + 0.0005)
    assert np.all(mag_err.std(axis=0) < 1.3 * 0.3e-6 + 0.02e-6)
    # and a signal far above the noise on every axis was really resolved
    assert np.linalg.norm(force) > 9.0 and abs(rate[2]) > 0.3


def test_magnetometer_calibration_is_applied_to_the_body_field():
    soft = np.array([[1.1, 0.05, 0.0], [0.05, 0.92, 0.02], [0.0, 0.02, 1.03]])
    hard = np.array([12e-6, -7e-6, 3e-6])
    mag_cfg = MagConfig(noise_t=0.0, soft_iron=tuple(soft.ravel()), hard_iron_t=tuple(hard))
    imu_cfg = ImuConfig(mount_rpy_deg=(0.0, 0.0, 90.0))
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, noise=False)
    emu.update(0.0, Motion())
    cal = MagCalibration(offset_t=tuple(hard), matrix=tuple(map(tuple, np.linalg.inv(soft))))
    source = Lsm9ds1Source.open_emulated(imu_cfg, mag_cfg, emu, mag_calibration=cal, gyro_bias_samples=5,
                                         watch_output=False)         # a noiseless chip is a frozen one
    for k, heading_deg in enumerate((0.0, 90.0, -135.0)):
        motion = Motion(heading_rad=math.radians(heading_deg))
        emu.update(100.0 + k, motion)
        (mag,) = source.poll(100.0 + k).mag
        _, _, field = expected_body(motion, mag_cfg)
        assert np.allclose(mag.field_t, field, atol=0.05e-6)     # quantisation 0.014 uT


def test_i2c_error_burst_is_survived_counted_and_flagged_stale_then_device_reinitialised():
    imu_cfg = ImuConfig(accel_range_g=8, gyro_range_dps=2000)
    mag_cfg = MagConfig(range_gauss=8)
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, noise=False)
    clock = {"t": 0.0}
    emu.update(0.0, Motion(heading_rad=1.0, yaw_rate_rps=0.0))
    driver = Lsm9ds1Driver(
        imu_cfg,
        mag_cfg,
        i2c=SMBusI2C(1, bus=emu.smbus()),
        clock=lambda: clock["t"],
        watch_output=False,
        sleep=emu.advance,
        gyro_bias_samples=5,
        reinit_interval_s=0.05,
    )
    driver.start()
    moving = Motion(heading_rad=1.0, yaw_rate_rps=0.25, surge_mps=1.0)
    t = 1.0
    emu.update(t, moving)
    good, good_mag = driver.read(t)
    assert not good.stale
    resets_before = dict(emu.resets)
    emu.inject_errors(12)                                     # a burst across reads and re-inits
    stale_seen = 0
    for k in range(40):
        t += 0.02
        clock["t"] = t
        emu.update(t, moving)
        imu, mag = driver.read(t)                             # never raises
        assert imu is not None and imu.time_s == t
        if imu.stale:
            stale_seen += 1
            assert imu.accel_mps2 == good.accel_mps2 and imu.gyro_rps == good.gyro_rps
    assert emu.pending_errors == 0 and emu.errors_raised == 12
    assert stale_seen >= 1 and driver.stats.stale == stale_seen
    # each failed read and each failed re-initialisation is counted (the library's bus probe absorbs some
    # of the injected errors itself, so not all 12 reach the driver)
    assert 2 <= driver.stats.errors <= 12
    assert driver.stats.reinits >= 1 and emu.resets["xg"] > resets_before["xg"]
    assert driver.healthy and not imu.stale
    # after the chip's reset the driver restored its ranges: values are right again (8 g, 2000 dps, 8 gauss)
    force, rate, field = expected_body(moving, mag_cfg)
    assert np.allclose(imu.accel_mps2, force, atol=0.02)
    assert np.allclose(imu.gyro_rps, rate, atol=0.01)
    assert emu._xg[0x20] & 0x18 == 0x18 and emu._xg[0x10] & 0x18 == 0x18 and emu._mag[0x21] == 0x20
    assert emu.gyro_odr_hz() == 119.0 and emu.mag_odr_hz() == 40.0


def test_a_failing_magnetometer_costs_neither_the_gyro_nor_the_accelerometer():
    imu_cfg, mag_cfg = ImuConfig(), MagConfig()
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, noise=False)
    clock = {"t": 0.0}
    emu.update(0.0, Motion(heading_rad=0.5))
    driver = Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=SMBusI2C(1, bus=emu.smbus()), clock=lambda: clock["t"],
                           watch_output=False, sleep=emu.advance, gyro_bias_samples=5, reinit_interval_s=0.05)
    driver.start()
    turning = Motion(heading_rad=0.5, yaw_rate_rps=0.2)
    t = 1.0
    emu.update(t, turning)
    _, last_mag = driver.read(t)
    emu.inject_errors(10 ** 6, address=emu.mag_address)      # the magnetometer stops answering
    fresh_imu = stale_mag = 0
    for _ in range(50):
        t += 0.02
        clock["t"] = t
        emu.update(t, turning)
        imu, mag = driver.read(t)
        fresh_imu += int(imu is not None and not imu.stale)
        if mag is not None:
            assert mag.stale and mag.field_t == last_mag.field_t
            stale_mag += 1
    assert fresh_imu == 50                                      # every gyro/accel sample stayed fresh
    _, rate, _ = expected_body(turning, mag_cfg)
    assert np.allclose(imu.gyro_rps, rate, atol=0.01)
    assert stale_mag >= 30 and not driver.mag_healthy and driver.healthy
    assert driver.stats.mag_errors >= 30 and driver.stats.reinits == 0
    emu.inject_errors(0)                                        # it comes back
    for _ in range(5):
        t += 0.02
        clock["t"] = t
        emu.update(t, turning)
        imu, mag = driver.read(t)
    assert driver.mag_healthy and mag is not None and not mag.stale


def test_chip_unplugged_keeps_returning_stale_samples_with_backoff_and_recovers():
    imu_cfg, mag_cfg = ImuConfig(), MagConfig()
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, noise=False)
    clock = {"t": 0.0}
    emu.update(0.0, Motion())
    driver = Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=SMBusI2C(1, bus=emu.smbus()), clock=lambda: clock["t"],
                           watch_output=False, sleep=emu.advance, gyro_bias_samples=3, reinit_interval_s=0.5)
    driver.start()
    driver.read(0.1)
    emu.set_present(False)
    tx_before = emu.transactions
    for k in range(50):                                       # 1 s without the chip
        clock["t"] = t = 0.2 + 0.02 * k
        imu, _ = driver.read(t)
        assert imu.stale and not driver.healthy
    # re-initialisation tried about twice per second, not on every read
    assert emu.transactions - tx_before < 50 + 3 * 4
    emu.set_present(True)
    clock["t"] = 2.0
    imu, _ = driver.read(2.0)                                 # first read after the back-off: re-initialises
    imu, _ = driver.read(2.02)
    assert not imu.stale and driver.healthy


def test_who_am_i_mismatch_names_bus_and_address():
    imu_cfg = ImuConfig(bus=3)
    emu = Lsm9ds1Emulator(imu_cfg, MagConfig(), who_am_i_xg=0x69)
    driver = Lsm9ds1Driver(imu_cfg, MagConfig(), i2c=SMBusI2C(3, bus=emu.smbus()), sleep=emu.advance)
    with pytest.raises(ImuError) as err:
        driver.start()
    msg = str(err.value)
    assert "I2C bus 3" in msg and "0x6B" in msg and "0x69" in msg and "0x68" in msg


def test_missing_magnetometer_names_its_address():
    imu_cfg = ImuConfig(address_mag=0x1C)
    emu = Lsm9ds1Emulator(imu_cfg, MagConfig(), mag_address=0x1E)   # the chip strapped for 0x1E
    driver = Lsm9ds1Driver(imu_cfg, MagConfig(), i2c=SMBusI2C(1, bus=emu.smbus()), sleep=emu.advance)
    with pytest.raises(ImuError, match=r"magnetometer does not answer on I2C bus 1 .*0x1C"):
        driver.start()


def test_missing_bus_device_says_how_to_enable_i2c():
    with pytest.raises(OSError, match=r"I2C bus 97 not found.*enable I2C"):
        SMBusI2C(97)


def test_adapter_scan_and_raw_transfers_on_the_emulated_bus():
    emu = Lsm9ds1Emulator(ImuConfig(), MagConfig(), noise=False)
    i2c = SMBusI2C(1, bus=emu.smbus())
    assert i2c.try_lock() and not i2c.try_lock()
    try:
        assert i2c.scan() == [0x1E, 0x6B]
        buf = bytearray(2)
        i2c.writeto_then_readfrom(0x6B, bytes([0x0F]), buf, in_start=1)   # one register into buf[1]
        assert buf[1] == 0x68
        i2c.writeto(0x1E, bytes([0x05 | 0x80, 1, 2, 3, 4, 5, 6]))          # mag offsets, auto-increment
        back = bytearray(6)
        i2c.writeto_then_readfrom(0x1E, bytes([0x05 | 0x80]), back)
        assert back == bytearray([1, 2, 3, 4, 5, 6])
        block = bytearray(40)                                              # > 32 bytes: i2c_rdwr path
        i2c.writeto_then_readfrom(0x6B, bytes([0x00]), block)
        assert block[0x0F] == 0x68 and block[0x22] == 0x04                 # WHO_AM_I, CTRL_REG8 reset value
        with pytest.raises(OSError):
            i2c.writeto(0x50, b"")
    finally:
        i2c.unlock()


def test_importing_the_driver_does_not_run_blinka_platform_detection():
    code = ("import sys, drivers.lsm9ds1; "
            "bad = [m for m in sys.modules if m.startswith(('adafruit_platformdetect', 'adafruit_blinka'))"
            " or m in ('busio', 'board', 'digitalio')]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("heading_deg,roll_deg,pitch_deg", [(123.0, 20.0, -10.0), (-170.0, -15.0, 25.0),
                                                             (5.0, 0.0, 0.0)])
def test_tilt_compensated_heading(heading_deg, roll_deg, pitch_deg):
    mag_cfg = MagConfig(declination_deg=6.5, inclination_deg=67.0)
    m = Motion(heading_rad=math.radians(heading_deg), roll_rad=math.radians(roll_deg),
               pitch_rad=math.radians(pitch_deg))
    force, _, field = expected_body(m, mag_cfg)
    # the field points to magnetic north; adding the declination gives the true heading
    got = heading_from_vectors_rad(force, field, math.radians(6.5))
    assert math.degrees(got) == pytest.approx(heading_deg, abs=1e-6)


def test_rates_map_to_chip_output_data_rates():
    emu = Lsm9ds1Emulator(ImuConfig(rate_hz=200), MagConfig(rate_hz=15))
    emu.update(0.0, Motion())
    driver = Lsm9ds1Driver(ImuConfig(rate_hz=200), MagConfig(rate_hz=15), i2c=SMBusI2C(1, bus=emu.smbus()),
                           sleep=emu.advance, gyro_bias_samples=2)
    driver.start()
    assert (driver.gyro_rate_hz, driver.mag_rate_hz) == (238.0, 20.0)
    assert (emu.gyro_odr_hz(), emu.accel_odr_hz(), emu.mag_odr_hz()) == (238.0, 238.0, 20.0)


def test_invalid_ranges_are_config_errors(tmp_path):
    vessel = (REPO / "config" / "vessels" / "foka.yaml").read_text()
    bad = vessel.replace("gyro_bias_rps: 0.005}", "gyro_bias_rps: 0.005, accel_range_g: 3}")
    assert bad != vessel
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    with pytest.raises(ConfigError, match=r"sensors.imu.accel_range_g: must be 2, 4, 8 or 16"):
        load_vessel(str(path))
