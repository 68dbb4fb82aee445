"""LSM9DS1 axis conventions pinned by vectors worked out by hand (issue 19), not by the emulator.

The emulator and the driver were written from the same reading of the datasheet, so a mistake made in both
(a mirrored Y axis swaps east and west on the water) passed every emulator test. Here each side is held to the
table below on its own:

- the driver and estimation/heading/tilt_compensated.py get the Adafruit library's values (what `sensor.acceleration`,
`.gyro`
  and `.magnetic` return: m/s^2, rad/s, gauss, chip axes) and must give the FRD vectors, heading and yaw rate;
- the emulator, read through the real Adafruit library over its I2C bus, must give the library values.

Conventions (ST's axis figure, as cited by PX4 and ArduPilot's LSM9DS1 drivers, RTIMULib, and an AHRS tested on
the Adafruit breakout): Z_A out of the top face (flat reads +1 g); seen from above, the Y arrow is 90 degrees
clockwise of the X arrow; the magnetometer's X is opposite the accelerometer's: X_M = -X_A, Y_M = Y_A,
Z_M = Z_A. Turning clockwise seen from above is a negative rate about Z_A (up).

Field: 19.5 uT north, 46 uT down (inclination 67.03 deg), declination 0. Board flat, top up, mounted with its X
arrow to the bow (mount_rpy_deg 0, 0, 0). By hand:

| X arrow | library accel | library mag [gauss]  | FRD field [uT]   | heading |
|---------|---------------|----------------------|------------------|---------|
| north   | (0, 0, +g)    | (-0.195, 0, -0.46)   | (19.5, 0, 46)    | 0       |
| east    | (0, 0, +g)    | (0, -0.195, -0.46)   | (0, -19.5, 46)   | +90     |
| south   | (0, 0, +g)    | (+0.195, 0, -0.46)   | (-19.5, 0, 46)   | 180     |
| west    | (0, 0, +g)    | (0, +0.195, -0.46)   | (0, 19.5, 46)    | -90     |

East, worked through: the bow points east, so north is off the port beam: FRD field (0, -19.5, 46). The chip's
Y_A is the board's right (starboard), Y_M = Y_A, so my = -0.195 G; X_M points aft, along which north has no
component; Z_M is up, the field points down: mz = -0.46 G.

Rolled 30 degrees starboard side down, X arrow north: gravity's reaction (up) tilts toward port in the board
frame. FRD specific force g (0, -sin 30, -cos 30) = (0, -4.903, -8.493); the chip's Z_A is -Z_FRD: library
accel (0, -4.903, +8.493). The field in FRD is Rx(30)^T (19.5, 0, 46) = (19.5, 46 sin 30, 46 cos 30) =
(19.5, 23.0, 39.84) uT; to the magnetometer's axes (-x, y, -z): (-0.195, +0.230, -0.3984) G. Heading 0.
"""
from __future__ import annotations

import math

import pytest

from autopilot.vocab.config import ImuConfig, MagConfig
from drivers.i2c_adapter import SMBusI2C, import_without_blinka
from drivers.lsm9ds1 import Lsm9ds1Driver
from estimation.heading.tilt_compensated import heading_from_vectors_rad
from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
from tests.support.imu_motion import Motion

adafruit_lsm9ds1 = import_without_blinka("adafruit_lsm9ds1")

G = 9.80665
S30, C30 = 0.5, math.sqrt(3.0) / 2.0
FIELD = MagConfig(field_t=math.hypot(19.5e-6, 46e-6), inclination_deg=math.degrees(math.atan2(46.0, 19.5)),
                  declination_deg=0.0, noise_t=0.0)

# name: (heading of the X arrow [deg], roll [deg], library accel, library mag [gauss], FRD field [uT], heading)
TABLE = {
    "north": (0.0, 0.0, (0.0, 0.0, G), (-0.195, 0.0, -0.46), (19.5, 0.0, 46.0), 0.0),
    "east": (90.0, 0.0, (0.0, 0.0, G), (0.0, -0.195, -0.46), (0.0, -19.5, 46.0), 90.0),
    "south": (180.0, 0.0, (0.0, 0.0, G), (0.195, 0.0, -0.46), (-19.5, 0.0, 46.0), 180.0),
    "west": (-90.0, 0.0, (0.0, 0.0, G), (0.0, 0.195, -0.46), (0.0, 19.5, 46.0), -90.0),
    "north, rolled 30 deg to starboard": (0.0, 30.0, (0.0, -G * S30, G * C30), (-0.195, 0.230, -0.46 * C30),
                                          (19.5, 23.0, 46.0 * C30), 0.0),
}
CLOCKWISE_10_DPS = math.radians(10.0)


class LibraryValues:
    """Stands in for the Adafruit library object: its three properties, in its units and the chip's axes."""

    def __init__(self, accel, gyro, mag_gauss):
        self.acceleration, self.gyro, self.magnetic = accel, gyro, mag_gauss


def _driver_output(accel, gyro, mag_gauss):
    drv = Lsm9ds1Driver(ImuConfig(), MagConfig(), watch_output=False)
    drv.sensor = LibraryValues(accel, gyro, mag_gauss)       # the library's values, no chip, no emulator
    imu, mag = drv.read(1.0)
    return imu, mag


def _angle_error_deg(a, b):
    return abs((a - b + 180.0) % 360.0 - 180.0)


@pytest.mark.parametrize("name", list(TABLE))
def test_the_driver_turns_library_values_into_the_hand_derived_frd_vectors_and_heading(name):
    _, _, accel, mag_gauss, field_ut, heading_deg = TABLE[name]
    imu, mag = _driver_output(accel, (0.0, 0.0, 0.0), mag_gauss)
    assert imu.accel_mps2 == pytest.approx((accel[0], accel[1], -accel[2]), abs=1e-9)
    assert [v * 1e6 for v in mag.field_t] == pytest.approx(field_ut, abs=0.01)
    heading = math.degrees(heading_from_vectors_rad(imu.accel_mps2, mag.field_t))
    assert _angle_error_deg(heading, heading_deg) < 0.5, f"{name}: heading {heading:.1f}, expected {heading_deg}"


def test_turning_clockwise_seen_from_above_is_a_positive_yaw_rate():
    imu, _ = _driver_output((0.0, 0.0, G), (0.0, 0.0, -CLOCKWISE_10_DPS), (-0.195, 0.0, -0.46))
    assert imu.gyro_rps == pytest.approx((0.0, 0.0, CLOCKWISE_10_DPS), abs=1e-9)


def test_a_quarter_turn_clockwise_raises_the_heading_by_90_degrees_while_the_rate_is_positive():
    """Step 4 of the bench check: north, then 90 degrees clockwise (east); the heading grows through +45."""
    _, _, a_n, m_n, _, _ = TABLE["north"]
    _, _, a_e, m_e, _, _ = TABLE["east"]
    headings = []
    for k in range(7):                              # the field turns with the board: interpolate the angle
        psi = math.radians(15.0 * k)
        h = 0.195
        mag = (-h * math.cos(psi), -h * math.sin(psi), -0.46)
        imu, field = _driver_output(a_n, (0.0, 0.0, -CLOCKWISE_10_DPS), mag)
        assert imu.gyro_rps[2] > 0.0
        headings.append(math.degrees(heading_from_vectors_rad(imu.accel_mps2, field.field_t)))
    assert headings == pytest.approx([15.0 * k for k in range(7)], abs=0.5)
    assert mag == pytest.approx(m_e, abs=1e-9) and a_n == a_e


def _emulated_library(heading_deg, roll_deg=0.0, yaw_rate_rps=0.0):
    emu = Lsm9ds1Emulator(ImuConfig(), FIELD, noise=False)
    emu.update(0.0, Motion(heading_rad=math.radians(heading_deg), roll_rad=math.radians(roll_deg),
                           yaw_rate_rps=yaw_rate_rps))
    return adafruit_lsm9ds1.LSM9DS1_I2C(SMBusI2C(1, bus=emu.smbus()))


@pytest.mark.parametrize("name", list(TABLE))
def test_the_emulated_chip_read_by_the_adafruit_library_gives_the_hand_derived_values(name):
    heading_deg, roll_deg, accel, mag_gauss, _, _ = TABLE[name]
    lib = _emulated_library(heading_deg, roll_deg)
    assert tuple(lib.acceleration) == pytest.approx(accel, abs=0.01)
    assert tuple(lib.magnetic) == pytest.approx(mag_gauss, abs=2e-3)     # 0.14 mgauss LSB, 4 gauss range


def test_the_emulated_chip_turning_clockwise_reads_a_negative_rate_about_z():
    lib = _emulated_library(0.0, yaw_rate_rps=CLOCKWISE_10_DPS)
    assert tuple(lib.gyro) == pytest.approx((0.0, 0.0, -CLOCKWISE_10_DPS), abs=0.002)


def test_east_and_west_end_to_end():
    """Emulator, library and driver together: the board turned east reads +90, west -90. (This one alone could
    not catch a mistake made in both; the tests above hold each side to the table.)"""
    for heading_deg in (90.0, -90.0):
        lib = _emulated_library(heading_deg)
        imu, mag = _driver_output(tuple(lib.acceleration), tuple(lib.gyro), tuple(lib.magnetic))
        heading = math.degrees(heading_from_vectors_rad(imu.accel_mps2, mag.field_t))
        assert _angle_error_deg(heading, heading_deg) < 1.0
