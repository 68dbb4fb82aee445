"""LSM9DS1 9-DoF IMU driver: the Adafruit CircuitPython library over drivers/i2c_adapter, samples in body FRD, SI.

`Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=...)`:
  start()            WHO_AM_I of both devices (an error names bus and address), library init, ranges and rates
                     from the config, gyro bias averaged while the boat is still.
  read(t_s)          -> (ImuSample, MagSample or None); the magnetometer is read at its own rate.
                     An I2C error (OSError) is counted, the chip is re-initialised (at most every
                     `reinit_interval_s`), and the last good sample is returned with stale=True; it never raises
                     for a bus fault. Before any good sample it returns (None, None). The magnetometer is a
                     device of its own: when only it fails, accel/gyro samples stay fresh, the field sample is
                     the stale repeat and only the magnetometer is re-configured (`mag_healthy` is False).
A chip that answers but does not measure (data registers all zero, frozen, at full scale, or an accelerometer far
from 1 g) is judged by drivers/sensor_plausibility.OutputWatch: its samples are delivered as stale repeats of the
last good one (the estimator ignores them, so the IMU-silent failsafe acts as for a chip that left the bus),
counted in `stats.implausible`, the reason in `stats.last_error`, and the chip is re-initialised.
`Lsm9ds1Source` wraps a driver as an autopilot.interfaces.SensorSource (poll(t_s) -> SensorBatch).

Frames. The chip's accel/gyro axes are left-handed and its magnetometer X points against the accelerometer's X
(see hil/devices/lsm9ds1_emulator.py for the sources). The driver's sensor frame S = (X_A, Y_A, -Z_A) is right-handed
and, for a board mounted flat with its top up and X arrow forward, equals body FRD. Chip to S:
accel/gyro (x, y, z) -> (x, y, -z); magnetometer (x, y, z) -> (-x, y, -z). S to body by the mounting rotation
R = Rz(yaw) Ry(pitch) Rx(roll) of ImuConfig.mount_rpy_deg (v_body = R v_S).

Units: accel m/s^2 (specific force: level and still reads (0, 0, -9.81)), gyro rad/s, field tesla (the library
gives gauss; 1 G = 1e-4 T). The gyro bias is subtracted in the sensor frame. A magnetometer calibration (any
object with `.apply(field_t) -> field_t`, e.g. estimation.heading.mag_calibration.MagCalibration) is applied to the
body-frame field: it must have been fitted to this driver's uncalibrated MagSample fields.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, cast

import numpy as np

from autopilot.vocab.angles import rotation_rpy
from autopilot.vocab.types import ImuSample, MagSample, SensorBatch
from drivers.i2c_adapter import SMBusI2C, import_without_blinka
from drivers.sensor_plausibility import OutputWatch

adafruit_lsm9ds1 = import_without_blinka("adafruit_lsm9ds1")

XG_WHO_AM_I = 0x68
MAG_WHO_AM_I = 0x3D
_WHO_AM_I_REG = 0x0F
_CTRL_REG1_G = 0x10
_CTRL_REG6_XL = 0x20
_CTRL_REG1_M = 0x20
_CTRL_REG3_M = 0x22
_CTRL_REG4_M = 0x23
GAUSS_TO_TESLA = 1.0e-4

# chip output data rates (code -> Hz) and the project's allowed set
GYRO_ODR_CODES = ((119.0, 3), (238.0, 4), (476.0, 5), (952.0, 6))
MAG_ODR_CODES = ((0.625, 0), (1.25, 1), (2.5, 2), (5.0, 3), (10.0, 4), (20.0, 5), (40.0, 6), (80.0, 7))
ACCEL_RANGES = {2: adafruit_lsm9ds1.ACCELRANGE_2G, 4: adafruit_lsm9ds1.ACCELRANGE_4G,
                8: adafruit_lsm9ds1.ACCELRANGE_8G, 16: adafruit_lsm9ds1.ACCELRANGE_16G}
GYRO_RANGES = {245: adafruit_lsm9ds1.GYROSCALE_245DPS, 500: adafruit_lsm9ds1.GYROSCALE_500DPS,
               2000: adafruit_lsm9ds1.GYROSCALE_2000DPS}
MAG_RANGES = {4: adafruit_lsm9ds1.MAGGAIN_4GAUSS, 8: adafruit_lsm9ds1.MAGGAIN_8GAUSS,
              12: adafruit_lsm9ds1.MAGGAIN_12GAUSS, 16: adafruit_lsm9ds1.MAGGAIN_16GAUSS}


class ImuError(RuntimeError):
    """The IMU cannot be used at start-up (absent, wrong chip, bad settings). The message says where and why."""


def chip_odr(requested_hz: float, table) -> Tuple[float, int]:
    """The slowest chip rate >= requested (the fastest if none is): (rate_hz, register code)."""
    for rate, code in table:
        if rate >= requested_hz - 1e-9:
            return rate, code
    return table[-1]


_GYRO_DIGIT_DPS = {245: 0.00875, 500: 0.0175, 2000: 0.07}    # LSM9DS1 datasheet, table 3


class _Implausible(Exception):
    """A magnetometer read that answered with output that cannot be a measurement."""


@dataclass
class ImuStats:
    reads: int = 0                 # read() calls that returned a fresh accel/gyro sample
    errors: int = 0                # failed reads (OSError) plus failed re-initialisations
    reinits: int = 0               # successful re-initialisations after an error
    stale: int = 0                 # samples returned as stale repeats
    mag_errors: int = 0            # failed magnetometer reads (the accelerometer/gyro carried on)
    mag_reinits: int = 0           # successful magnetometer re-configurations after an error
    implausible: int = 0           # reads that answered with output that cannot be a measurement
    last_error: str = ""


class Lsm9ds1Driver:
    """One LSM9DS1 on one I2C bus. Not thread-safe: call from one thread (the control loop or a reader)."""

    def __init__(self, imu_cfg, mag_cfg, *, i2c=None, mag_calibration=None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 gyro_bias_samples: int = 100, still_gyro_std_rps: float = 0.02,
                 reinit_interval_s: float = 0.5, watch_output: bool = True):
        self.imu_cfg, self.mag_cfg = imu_cfg, mag_cfg
        self.bus_number = imu_cfg.bus
        self.i2c = i2c
        self.mag_calibration = mag_calibration
        self.clock, self.sleep = clock, sleep
        self.gyro_bias_samples = int(gyro_bias_samples)
        self.still_gyro_std_rps = float(still_gyro_std_rps)
        self.reinit_interval_s = float(reinit_interval_s)
        self.gyro_rate_hz, self._gyro_code = chip_odr(imu_cfg.rate_hz, GYRO_ODR_CODES)
        self.mag_rate_hz, self._mag_code = chip_odr(mag_cfg.rate_hz, MAG_ODR_CODES)
        r_bs = rotation_rpy(*(math.radians(a) for a in imu_cfg.mount_rpy_deg))
        # chip axes -> body FRD, in one matrix per device (as nested lists: faster than numpy for 3 values)
        self._xg_to_body = (r_bs @ np.diag([1.0, 1.0, -1.0])).tolist()
        self._mag_to_body = (r_bs @ np.diag([-1.0, 1.0, -1.0])).tolist()
        self.gyro_bias_rps = (0.0, 0.0, 0.0)        # chip axes
        self.gyro_bias_std_rps = 0.0
        self.was_still_at_start: Optional[bool] = None
        self.stats = ImuStats()
        self.sensor: Optional[Any] = None       # an adafruit_lsm9ds1.LSM9DS1_I2C (the library ships no types)
        # the Adafruit library's last values, chip axes, before any frame change or bias (bench checks show them)
        self.last_raw_accel_gyro: Optional[Tuple[Tuple[float, float, float], Tuple[float, float, float]]] = None
        self.last_raw_mag_gauss: Optional[Tuple[float, float, float]] = None
        self._last_imu: Optional[ImuSample] = None
        self._last_mag: Optional[MagSample] = None
        self._next_mag_t: Optional[float] = None
        self._next_reinit_t = -math.inf
        self._next_mag_reinit_t = -math.inf
        self._healthy = False
        self.mag_healthy = False
        g = 9.80665
        gyro_fs_rps = math.radians(32767 * _GYRO_DIGIT_DPS[imu_cfg.gyro_range_dps])
        self._imu_watch = OutputWatch(full_scale=(0.995 * imu_cfg.accel_range_g * g,) * 3 + (0.995 * gyro_fs_rps,) * 3,
                                      magnitude_range=(0.5 * g, 1.5 * g))
        self._mag_watch = OutputWatch(frozen_min_s=0.2)
        self.watch_output = watch_output          # False only for a noiseless emulator (whose output is frozen)

    # --------------------------------------------------------------------------------------- start-up
    def where(self, address: int) -> str:
        return f"I2C bus {self.bus_number} (/dev/i2c-{self.bus_number}) address 0x{address:02X}"

    def start(self, calibrate_gyro: bool = True) -> None:
        """Open the bus if needed, check both WHO_AM_I registers, configure, and measure the gyro bias."""
        if self.i2c is None:
            self.i2c = SMBusI2C(self.bus_number)
        self.check_who_am_i()
        self._init_chip()
        self._healthy = True
        if calibrate_gyro:
            self.calibrate_gyro()

    def check_who_am_i(self) -> None:
        for address, expected, what in ((self.imu_cfg.address_xg, XG_WHO_AM_I, "accelerometer/gyro"),
                                        (self.imu_cfg.address_mag, MAG_WHO_AM_I, "magnetometer")):
            buf = bytearray(1)
            try:
                while not self.i2c.try_lock():
                    pass
                try:
                    self.i2c.writeto_then_readfrom(address, bytes([_WHO_AM_I_REG]), buf)
                finally:
                    self.i2c.unlock()
            except OSError as e:
                raise ImuError(f"LSM9DS1 {what} does not answer on {self.where(address)} ({e}): check wiring "
                               f"and power, and run `i2cdetect -y {self.bus_number}`") from None
            if buf[0] != expected:
                raise ImuError(f"LSM9DS1 {what} not found on {self.where(address)}: WHO_AM_I reads "
                               f"0x{buf[0]:02X}, expected 0x{expected:02X} (another chip at this address? "
                               f"check sensors.imu.address_xg/address_mag)")

    def _init_chip(self) -> None:
        """Library init (soft reset, WHO_AM_I, continuous mode) then this project's ranges and rates."""
        s = adafruit_lsm9ds1.LSM9DS1_I2C(self.i2c, mag_address=self.imu_cfg.address_mag,
                                         xg_address=self.imu_cfg.address_xg)
        s.accel_range = ACCEL_RANGES[self.imu_cfg.accel_range_g]
        s.gyro_scale = GYRO_RANGES[self.imu_cfg.gyro_range_dps]
        s.mag_gain = MAG_RANGES[self.mag_cfg.range_gauss]
        # output data rates: the library leaves the gyro/accel at 952 Hz and the magnetometer at 10 Hz
        reg = s._read_u8(False, _CTRL_REG1_G)
        s._write_u8(False, _CTRL_REG1_G, (reg & 0x1F) | (self._gyro_code << 5))
        reg = s._read_u8(False, _CTRL_REG6_XL)
        s._write_u8(False, _CTRL_REG6_XL, (reg & 0x1F) | (self._gyro_code << 5))
        self._configure_mag(s)
        self.sensor = s
        self.mag_healthy = True
        self._gyro_scale = s._gyro_dps_digit
        self._next_mag_t = None

    def _configure_mag(self, s) -> None:
        """Temperature compensation, ultra-high-performance X/Y and Z, the configured rate, continuous mode."""
        s._write_u8(True, _CTRL_REG1_M, 0x80 | 0x60 | (self._mag_code << 2))
        s._write_u8(True, _CTRL_REG4_M, 0x0C)
        s._write_u8(True, _CTRL_REG3_M, 0x00)

    def calibrate_gyro(self) -> Tuple[float, float, float]:
        """Average `gyro_bias_samples` gyro readings, one per output period; the boat should be still.

        Sets `gyro_bias_rps` (chip axes), `gyro_bias_std_rps` (largest per-axis standard deviation) and
        `was_still_at_start` (std below still_gyro_std_rps). A moving boat still gets the mean (the EKF
        estimates the remaining bias); the flag lets pre-arm checks warn.
        """
        assert self.sensor is not None                # start() initialised the chip before calling this
        samples = []
        period = 1.0 / self.gyro_rate_hz
        for _ in range(max(1, self.gyro_bias_samples)):
            samples.append(tuple(self.sensor.gyro))
            self.sleep(period)
        arr = np.asarray(samples)
        self.gyro_bias_rps = tuple(arr.mean(axis=0).tolist())
        self.gyro_bias_std_rps = float(arr.std(axis=0).max())
        self.was_still_at_start = self.gyro_bias_std_rps < self.still_gyro_std_rps
        return self.gyro_bias_rps

    # --------------------------------------------------------------------------------------- reading
    @property
    def healthy(self) -> bool:
        """True while the last read succeeded."""
        return self._healthy

    def read(self, t_s: float) -> Tuple[Optional[ImuSample], Optional[MagSample]]:
        """One accel+gyro sample and, when due at the magnetometer's rate, one field sample (else None)."""
        if self.sensor is None:
            return self._fault(t_s, "not initialised")
        try:
            s = self.sensor
            ax, ay, az = s.acceleration
            gx, gy, gz = s.gyro
            self.last_raw_accel_gyro = ((ax, ay, az), (gx, gy, gz))
        except OSError as e:
            self.stats.errors += 1
            return self._fault(t_s, f"I2C error: {e}")
        bad = self._imu_watch.check(t_s, (ax, ay, az, gx, gy, gz)) if self.watch_output else None
        if bad is not None:
            self.stats.implausible += 1
            return self._fault(t_s, f"accelerometer/gyro {bad}")
        mag_due = self._mag_due(t_s)
        mag_failed = False
        if mag_due:
            # the magnetometer is a device of its own on the bus: its failure must not cost the gyro
            try:
                mx, my, mz = s.magnetic
                self.last_raw_mag_gauss = (mx, my, mz)
                bad = self._mag_watch.check(t_s, (mx, my, mz)) if self.watch_output else None
                if bad is not None:
                    self.stats.implausible += 1
                    raise _Implausible(f"magnetometer {bad}")
            except (OSError, _Implausible) as e:
                self.stats.errors += 1
                self.stats.mag_errors += 1
                self.stats.last_error = str(e) if isinstance(e, _Implausible) else f"magnetometer I2C error: {e}"
                self.mag_healthy = False
                mag_failed = True
                self._try_reinit_mag()
        self._healthy = True
        self.stats.reads += 1
        b = self.gyro_bias_rps
        gx, gy, gz = gx - b[0], gy - b[1], gz - b[2]
        m = self._xg_to_body
        imu = ImuSample(t_s,
                        (m[0][0] * ax + m[0][1] * ay + m[0][2] * az,
                         m[1][0] * ax + m[1][1] * ay + m[1][2] * az,
                         m[2][0] * ax + m[2][1] * ay + m[2][2] * az),
                        (m[0][0] * gx + m[0][1] * gy + m[0][2] * gz,
                         m[1][0] * gx + m[1][1] * gy + m[1][2] * gz,
                         m[2][0] * gx + m[2][1] * gy + m[2][2] * gz))
        self._last_imu = imu
        mag = None
        if mag_failed:
            if self._last_mag is not None:
                mag = MagSample(t_s, self._last_mag.field_t, stale=True)
                self.stats.stale += 1
            self._advance_mag_schedule(t_s)
        elif mag_due:
            self.mag_healthy = True
            k = self._mag_to_body
            mx, my, mz = mx * GAUSS_TO_TESLA, my * GAUSS_TO_TESLA, mz * GAUSS_TO_TESLA
            field = (k[0][0] * mx + k[0][1] * my + k[0][2] * mz,
                     k[1][0] * mx + k[1][1] * my + k[1][2] * mz,
                     k[2][0] * mx + k[2][1] * my + k[2][2] * mz)
            if self.mag_calibration is not None:
                field = cast(Tuple[float, float, float], tuple(float(v) for v in self.mag_calibration.apply(field)))
            mag = MagSample(t_s, field)
            self._last_mag = mag
            self._advance_mag_schedule(t_s)
        return imu, mag

    def _fault(self, t_s: float, reason: str):
        self._healthy = False
        self.stats.last_error = reason
        self._try_reinit()
        imu = mag = None
        if self._last_imu is not None:
            last = self._last_imu
            imu = ImuSample(t_s, last.accel_mps2, last.gyro_rps, stale=True)
            self.stats.stale += 1
        if self._last_mag is not None and self._mag_due(t_s):
            mag = MagSample(t_s, self._last_mag.field_t, stale=True)
            self._advance_mag_schedule(t_s)
        return imu, mag

    def _mag_due(self, t_s: float) -> bool:
        return self._next_mag_t is None or t_s >= self._next_mag_t

    def _advance_mag_schedule(self, t_s: float) -> None:
        period = 1.0 / self.mag_rate_hz
        nxt = (t_s if self._next_mag_t is None else self._next_mag_t) + period
        self._next_mag_t = nxt if nxt > t_s else t_s + period

    def _try_reinit(self) -> None:
        now = self.clock()
        if now < self._next_reinit_t:
            return
        self._next_reinit_t = now + self.reinit_interval_s
        try:
            self._init_chip()
        except (OSError, ValueError, RuntimeError) as e:
            # ValueError: adafruit_bus_device found no device; RuntimeError: the library's WHO_AM_I check
            self.stats.errors += 1
            self.sensor = None
            self.stats.last_error = f"re-initialisation failed: {e}"
            return
        self.stats.reinits += 1

    def _try_reinit_mag(self) -> None:
        """Re-write the magnetometer's configuration (it may have lost power or reset), at most every
        reinit_interval_s; the accelerometer/gyro is left alone."""
        now = self.clock()
        if now < self._next_mag_reinit_t:
            return
        self._next_mag_reinit_t = now + self.reinit_interval_s
        try:
            self._configure_mag(self.sensor)
        except OSError as e:
            self.stats.errors += 1
            self.stats.last_error = f"magnetometer re-configuration failed: {e}"
            return
        self.stats.mag_reinits += 1

    def close(self) -> None:
        if self.i2c is not None:
            self.i2c.close()


class Lsm9ds1Source:
    """autopilot.interfaces.SensorSource for the IMU: each poll(t_s) reads the chip once (magnetometer at its
    own rate). Stale repeats after a fault are delivered with stale=True for the estimator to judge."""

    def __init__(self, driver: Lsm9ds1Driver):
        self.driver = driver

    @classmethod
    def open_hw(cls, imu_cfg, mag_cfg, mag_calibration=None, **kwargs) -> "Lsm9ds1Source":
        """The boat: /dev/i2c-<imu_cfg.bus>, wall-clock sleeps for the start-up gyro bias."""
        driver = Lsm9ds1Driver(imu_cfg, mag_cfg, mag_calibration=mag_calibration, **kwargs)
        driver.start()
        return cls(driver)

    @classmethod
    def open_emulated(cls, imu_cfg, mag_cfg, emulator, mag_calibration=None, **kwargs) -> "Lsm9ds1Source":
        """The simulator's fast path: the emulated chip in-process; start-up sleeps advance its clock."""
        i2c = SMBusI2C(imu_cfg.bus, bus=emulator.smbus())
        kwargs.setdefault("sleep", emulator.advance)
        driver = Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=i2c, mag_calibration=mag_calibration, **kwargs)
        driver.start()
        return cls(driver)

    def poll(self, t_s: float) -> SensorBatch:
        imu, mag = self.driver.read(t_s)
        batch = SensorBatch()
        if imu is not None:
            batch.imu.append(imu)
        if mag is not None:
            batch.mag.append(mag)
        return batch
