"""A register-level ST LSM9DS1 on an emulated I2C bus, driven by the plant's true motion and a noise model.

The chip answers on two addresses: accelerometer + gyroscope (0x6B, or 0x6A with SDO_AG low) and magnetometer
(0x1E, or 0x1C). Registers, reset values and scalings follow the LSM9DS1 datasheet (DocID025715):

  accel/gyro: WHO_AM_I 0x0F = 0x68; CTRL_REG1_G 0x10 (ODR_G[7:5], FS_G[4:3]); STATUS_REG 0x17/0x27;
              OUT_X_L_G 0x18..0x1D; CTRL_REG4 0x1E (0x38); CTRL_REG5_XL 0x1F (0x38); CTRL_REG6_XL 0x20
              (ODR_XL[7:5], FS_XL[4:3]: 00 2 g, 01 16 g, 10 4 g, 11 8 g); CTRL_REG8 0x22 (0x04: IF_ADD_INC;
              bit 0 SW_RESET); OUT_X_L_XL 0x28..0x2D; OUT_TEMP 0x15/0x16 (16 LSB/degC, 0 = 25 degC).
              Multi-byte reads auto-increment while CTRL_REG8.IF_ADD_INC is set; bit 7 of the sub-address is
              ignored. Gyro ODR 14.9/59.5/119/238/476/952 Hz; with the gyro on, the accelerometer runs at the
              gyro's rate, else at its own (10/50/119/238/476/952 Hz).
  magnetometer: OFFSET_X_REG_L_M 0x05..0x0A (hard-iron offset subtracted by the chip, in output LSB);
              WHO_AM_I_M 0x0F = 0x3D; CTRL_REG1_M 0x20 (0x10; DO[4:2]: 0.625..80 Hz); CTRL_REG2_M 0x21
              (FS[6:5]: 4/8/12/16 gauss; bit 3 REBOOT, bit 2 SOFT_RST); CTRL_REG3_M 0x22 (0x03; MD[1:0]: 00
              continuous, 01 single, 1x power-down); CTRL_REG4_M 0x23; CTRL_REG5_M 0x24; STATUS_REG_M 0x27;
              OUT_X_L_M 0x28..0x2D. Multi-byte reads auto-increment only when bit 7 of the sub-address is set.
  Sensitivities: 0.061/0.122/0.244/0.732 mg/LSB; 8.75/17.5/70 mdps/LSB; 0.14/0.29/0.43/0.58 mgauss/LSB.
  Outputs saturate at the 16-bit limits.

Axes. The accel/gyro output axes (X_A, Y_A, Z_A) form a left-handed set with Z_A out of the top of the package
(flat and still, the accelerometer reads +1 g on Z); the magnetometer's axes are (X_M, Y_M, Z_M) = (-X_A, Y_A,
Z_A). (RTIMULib's LSM9DS1 driver and S. J. Remington's LSM9DS1 AHRS both negate exactly these axes to make the
three sensors agree.) The project's right-handed sensor frame is S = (X_A, Y_A, -Z_A): for a board mounted flat,
top up, with its X arrow forward, S is the body FRD frame. The emulator maps a vector v given in S to the chip's
registers as accel/gyro (vx, vy, -vz) and magnetometer (-vx, vy, -vz); drivers/lsm9ds1.py maps back.

Truth -> physics (body FRD): specific force f = (du/dt - r v, dv/dt + r u, 0) - R^T (0, 0, g); angular rate
(p, q, r); field m = S_iron R^T B_ned + h_iron with B_ned = F (cos I cos D, cos I sin D, sin I). R is the
body-to-NED rotation from heading and, when the truth object has them, `roll_rad` and `pitch_rad` (with body
rates `roll_rate_rps`, `pitch_rate_rps`); the built-in plant is level (3-DOF). Body vectors go to S through the
mounting rotation (ImuConfig.mount_rpy_deg: roll, pitch, yaw of S in the body, v_body = R_mount v_S).
A later change of the hard iron (`hard_iron_shift_t`, body FRD [T]) adds to h_iron.
Noise: turn-on bias per axis (drawn once, ImuConfig.*_bias_*) plus white noise per sample (ImuConfig.*_noise_*,
MagConfig.noise_t), all seeded.

Time: `update(t_s, truth)` sets the emulator's clock and the truth; `advance(dt_s)` moves the clock alone (a
driver sleeping at start-up). A sensor converts a new sample when its output is read at a clock time that lies
in a later ODR period than its previous conversion; otherwise it repeats the held sample, as the chip does.

Faults: `inject_errors(n)` makes the next n bus transactions fail with OSError(EREMOTEIO), `set_present(False)`
takes the chip off the bus. `smbus()` returns the SMBus-like object that drivers/i2c_adapter.SMBusI2C accepts,
so the real Adafruit library runs on the emulated chip.
Why: docs/design-notes/simulator-and-rims.md, "Emulated devices".
"""
from __future__ import annotations

import errno
import math
import struct
from typing import Optional, Union

import numpy as np

from drivers.i2c_adapter import RegisterBus
from hil.sim.environment import GRAVITY_MPS2
from hil.sim.sensor_models import NormalStream

XG_WHO_AM_I = 0x68
MAG_WHO_AM_I = 0x3D

# accel/gyro registers
_WHO_AM_I = 0x0F
_CTRL_REG1_G = 0x10
_OUT_TEMP_L = 0x15
_STATUS_REG = 0x17
_OUT_X_L_G = 0x18
_CTRL_REG4 = 0x1E
_CTRL_REG5_XL = 0x1F
_CTRL_REG6_XL = 0x20
_CTRL_REG8 = 0x22
_STATUS_REG_2 = 0x27
_OUT_X_L_XL = 0x28
# magnetometer registers
_OFFSET_X_L_M = 0x05
_CTRL_REG1_M = 0x20
_CTRL_REG2_M = 0x21
_CTRL_REG3_M = 0x22
_INT_CFG_M = 0x30
_STATUS_REG_M = 0x27
_OUT_X_L_M = 0x28

_XG_RESET = {_CTRL_REG4: 0x38, _CTRL_REG5_XL: 0x38, _CTRL_REG8: 0x04, _WHO_AM_I: XG_WHO_AM_I}
_MAG_RESET = {_CTRL_REG1_M: 0x10, _CTRL_REG3_M: 0x03, _INT_CFG_M: 0x08, _WHO_AM_I: MAG_WHO_AM_I}

GYRO_ODR_HZ = {1: 14.9, 2: 59.5, 3: 119.0, 4: 238.0, 5: 476.0, 6: 952.0}
ACCEL_ODR_HZ = {1: 10.0, 2: 50.0, 3: 119.0, 4: 238.0, 5: 476.0, 6: 952.0}
MAG_ODR_HZ = {0: 0.625, 1: 1.25, 2: 2.5, 3: 5.0, 4: 10.0, 5: 20.0, 6: 40.0, 7: 80.0}
ACCEL_MG_PER_LSB = {0b00: 0.061, 0b10: 0.122, 0b11: 0.244, 0b01: 0.732}   # FS_XL code -> mg/LSB
GYRO_MDPS_PER_LSB = {0b00: 8.75, 0b01: 17.5, 0b11: 70.0}                 # FS_G code (10 is not available)
MAG_MGAUSS_PER_LSB = {0b00: 0.14, 0b01: 0.29, 0b10: 0.43, 0b11: 0.58}

GAUSS_PER_TESLA = 1.0e4
_PACK = struct.Struct("<hhh")


def rotation_rpy(roll_rad: float, pitch_rad: float, yaw_rad: float) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll): maps vectors of the rotated frame into the reference frame.

    Written out here rather than imported from the driver, so the emulated chip shares no frame math with
    the code it tests.
    """
    cr, sr = math.cos(roll_rad), math.sin(roll_rad)
    cp, sp = math.cos(pitch_rad), math.sin(pitch_rad)
    cy, sy = math.cos(yaw_rad), math.sin(yaw_rad)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


# chip axes from the sensor frame S (see module docstring); both matrices are their own inverse
S_TO_XG_AXES = np.diag([1.0, 1.0, -1.0])
S_TO_MAG_AXES = np.diag([-1.0, 1.0, -1.0])


def body_motion(truth, field_ned_t=(0.0, 0.0, 0.0), gravity_mps2: float = GRAVITY_MPS2):
    """(specific force [m/s^2], angular rate [rad/s], Earth field [T]) of `truth` in body FRD, as tuples.

    Plain floats rather than numpy: this runs for every emulated sample of a 100x real-time simulation.
    """
    roll = getattr(truth, "roll_rad", 0.0)
    pitch = getattr(truth, "pitch_rad", 0.0)
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(truth.heading_rad), math.sin(truth.heading_rad)
    # columns of R_nb = rows of R_bn: body axes expressed in NED
    x_n = (cy * cp, sy * cp, -sp)
    y_n = (cy * sp * sr - sy * cr, sy * sp * sr + cy * cr, cp * sr)
    z_n = (cy * sp * cr + sy * sr, sy * sp * cr - cy * sr, cp * cr)
    u, v, r = truth.surge_mps, truth.sway_mps, truth.yaw_rate_rps
    force = (truth.surge_accel_mps2 - r * v - x_n[2] * gravity_mps2,
             truth.sway_accel_mps2 + r * u - y_n[2] * gravity_mps2,
             -z_n[2] * gravity_mps2)
    rate = (getattr(truth, "roll_rate_rps", 0.0), getattr(truth, "pitch_rate_rps", 0.0), r)
    bn, be, bd = field_ned_t
    field = (x_n[0] * bn + x_n[1] * be + x_n[2] * bd,
             y_n[0] * bn + y_n[1] * be + y_n[2] * bd,
             z_n[0] * bn + z_n[1] * be + z_n[2] * bd)
    return force, rate, field


def _mul(m, v):
    return (m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
            m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
            m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2])


class Lsm9ds1Emulator:
    """The LSM9DS1's two I2C devices, with the register behaviour described in the module docstring."""

    def __init__(self, imu_cfg=None, mag_cfg=None, *, seed: int = 0, noise: bool = True,
                 xg_address: Optional[int] = None, mag_address: Optional[int] = None,
                 who_am_i_xg: int = XG_WHO_AM_I, who_am_i_mag: int = MAG_WHO_AM_I,
                 temperature_c: float = 25.0, gravity_mps2: float = GRAVITY_MPS2):
        from autopilot.vocab.config import ImuConfig, MagConfig
        imu_cfg = imu_cfg if imu_cfg is not None else ImuConfig()
        mag_cfg = mag_cfg if mag_cfg is not None else MagConfig()
        self.xg_address = imu_cfg.address_xg if xg_address is None else xg_address
        self.mag_address = imu_cfg.address_mag if mag_address is None else mag_address
        self._who = {self.xg_address: who_am_i_xg, self.mag_address: who_am_i_mag}
        self.gravity_mps2 = gravity_mps2
        self.temperature_c = temperature_c
        # mounting: S -> body, and the combined body -> chip-axes maps
        r_bs = rotation_rpy(*(math.radians(a) for a in imu_cfg.mount_rpy_deg))
        self._body_to_xg = (S_TO_XG_AXES @ r_bs.T).tolist()
        self._body_to_mag = (S_TO_MAG_AXES @ r_bs.T).tolist()
        inc, dec = math.radians(mag_cfg.inclination_deg), math.radians(mag_cfg.declination_deg)
        self.field_ned_t = (mag_cfg.field_t * math.cos(inc) * math.cos(dec),
                            mag_cfg.field_t * math.cos(inc) * math.sin(dec), mag_cfg.field_t * math.sin(inc))
        self.soft_iron = np.asarray(mag_cfg.soft_iron, dtype=float).reshape(3, 3).tolist()
        self.hard_iron_t = tuple(float(h) for h in mag_cfg.hard_iron_t)
        # a change of the hard iron after calibration (a tool left by the compass, a new battery): body FRD [T],
        # added to hard_iron_t (the mag-shift fault of hil/sim/faults.py sets it)
        self.hard_iron_shift_t = (0.0, 0.0, 0.0)
        scale = 1.0 if noise else 0.0
        bias_rng = np.random.default_rng([seed, 41])
        self.gyro_bias_rps = tuple((scale * imu_cfg.gyro_bias_rps * bias_rng.standard_normal(3)).tolist())
        self.accel_bias_mps2 = tuple((scale * imu_cfg.accel_bias_mps2 * bias_rng.standard_normal(3)).tolist())
        # the same turn-on biases on the chip's axes (sensor frame S -> accel/gyro axes)
        self._gyro_bias_chip = _mul(S_TO_XG_AXES.tolist(), self.gyro_bias_rps)
        self._accel_bias_chip = _mul(S_TO_XG_AXES.tolist(), self.accel_bias_mps2)
        self._gyro_sigma = scale * imu_cfg.gyro_noise_rps
        self._accel_sigma = scale * imu_cfg.accel_noise_mps2
        self._mag_sigma = scale * mag_cfg.noise_t
        self._w = NormalStream(np.random.default_rng([seed, 42]))
        self.t_s = 0.0
        self.truth = None
        self._motion = None
        self.present = True
        self.data_fault: Optional[str] = None     # None, "zero" or "frozen": what the data registers read
        self._frozen: dict = {}
        self.pending_errors = 0
        self.pending_error_address: Optional[int] = None
        self.errors_raised = 0
        self.transactions = 0
        self.resets = {"xg": 0, "mag": 0}
        self._reset_xg()
        self._reset_mag()

    # ------------------------------------------------------------------------------ driving
    def update(self, t_s: float, truth) -> None:
        """Set the clock and the true motion (a hil.sim.plant.Truth or any object with its fields)."""
        self.t_s = float(t_s)
        self.truth = truth
        self._motion = None

    def motion(self):
        """body_motion() of the current truth, computed once per update()."""
        if self._motion is None:
            self._motion = body_motion(self.truth, self.field_ned_t, self.gravity_mps2)
        return self._motion

    def advance(self, dt_s: float) -> None:
        """Move the clock on by dt_s with the truth unchanged (for a driver sleeping at start-up)."""
        self.t_s += float(dt_s)

    def inject_errors(self, count: int, address: Optional[int] = None) -> None:
        """Make the next `count` transactions (to `address`, or to either device) fail with EREMOTEIO."""
        self.pending_errors = int(count)
        self.pending_error_address = address

    def set_data_fault(self, fault: Optional[str]) -> None:
        """A chip that answers but whose output registers read all zero ("zero") or stay at the values they had
        when the fault began ("frozen"); None: normal. The control registers and WHO_AM_I keep working."""
        if fault not in (None, "zero", "frozen"):
            raise ValueError(f"data fault must be None, 'zero' or 'frozen', got {fault!r}")
        self.data_fault = fault
        self._frozen = {}

    def set_present(self, present: bool) -> None:
        """Connect or disconnect the chip: a missing chip NACKs its addresses (OSError EREMOTEIO)."""
        self.present = bool(present)

    def smbus(self) -> "FakeSMBus":
        return FakeSMBus(self)

    # ------------------------------------------------------------------------------ register access
    def read_registers(self, address: int, register: int, count: int) -> bytes:
        self._transaction(address)
        if address == self.xg_address:
            reg = register & 0x7F
            step = 1 if self._xg[_CTRL_REG8] & 0x04 else 0
            regs, refresh = self._xg, self._refresh_xg
        else:
            reg = register & 0x7F
            step = 1 if register & 0x80 else 0
            regs, refresh = self._mag, self._refresh_mag
        refresh(reg, count, step)
        out: Union[bytes, bytearray]
        if step and reg + count <= 0x80:
            out = regs[reg:reg + count]
        else:
            out = bytes(regs[(reg + i * step) & 0x7F] for i in range(count))
        if self.data_fault is not None:
            out = self._faulty_data(address, bytearray(out), reg, step)
        if address == self.xg_address:
            self._clear_xg_status(reg, count, step)
        elif any(0x28 <= (reg + i * step) & 0x7F <= 0x2D for i in range(count)):
            self._mag[_STATUS_REG_M] &= ~0x0F & 0xFF
        return bytes(out)

    def _faulty_data(self, address: int, out: bytearray, reg: int, step: int) -> bytearray:
        data = (range(_OUT_X_L_G, _OUT_X_L_G + 6), range(_OUT_X_L_XL, _OUT_X_L_XL + 6)) \
            if address == self.xg_address else (range(_OUT_X_L_M, _OUT_X_L_M + 6),)
        for i in range(len(out)):
            r = (reg + i * step) & 0x7F
            if any(r in block for block in data):
                out[i] = 0 if self.data_fault == "zero" else self._frozen.setdefault((address, r), out[i])
        return out

    def write_registers(self, address: int, register: int, data: bytes) -> None:
        self._transaction(address)
        if address == self.xg_address:
            step = 1 if self._xg[_CTRL_REG8] & 0x04 else 0
            for i, value in enumerate(data):
                self._write_xg((register + i * step) & 0x7F, value)
        else:
            step = 1 if register & 0x80 else 0
            for i, value in enumerate(data):
                self._write_mag((register + i * step) & 0x7F, value)

    def probe(self, address: int) -> None:
        """An address-only transaction (quick write / probe read): raises OSError if nothing answers."""
        self._transaction(address)

    def _transaction(self, address: int) -> None:
        self.transactions += 1
        if self.pending_errors > 0 and self.pending_error_address in (None, address):
            self.pending_errors -= 1
            self.errors_raised += 1
            raise OSError(errno.EREMOTEIO, f"emulated I2C error at 0x{address:02X}")
        if not self.present or address not in (self.xg_address, self.mag_address):
            raise OSError(errno.EREMOTEIO, f"no acknowledge from 0x{address:02X}")

    # ------------------------------------------------------------------------------ accel/gyro device
    def _reset_xg(self) -> None:
        self._xg = bytearray(128)
        for reg, value in _XG_RESET.items():
            self._xg[reg] = value
        self._xg[_WHO_AM_I] = self._who[self.xg_address]
        self._gyro_period = None
        self._accel_period = None
        self.resets["xg"] += 1

    def _write_xg(self, reg: int, value: int) -> None:
        if reg == _CTRL_REG8 and value & 0x01:          # SW_RESET: registers to defaults, bit clears itself
            self._reset_xg()
            return
        if reg in (_WHO_AM_I, _STATUS_REG, _STATUS_REG_2) or _OUT_X_L_G <= reg <= _OUT_X_L_G + 5 \
                or _OUT_X_L_XL <= reg <= _OUT_X_L_XL + 5 or reg in (_OUT_TEMP_L, _OUT_TEMP_L + 1):
            return                                       # read-only
        self._xg[reg] = value & 0xFF

    def gyro_odr_hz(self) -> float:
        return GYRO_ODR_HZ.get(self._xg[_CTRL_REG1_G] >> 5, 0.0)

    def accel_odr_hz(self) -> float:
        gyro = self.gyro_odr_hz()
        return gyro if gyro else ACCEL_ODR_HZ.get(self._xg[_CTRL_REG6_XL] >> 5, 0.0)

    def _refresh_xg(self, reg: int, count: int, step: int) -> None:
        last = reg + (count - 1) * step
        if reg <= _OUT_X_L_G + 5 and last >= _OUT_TEMP_L:
            self._convert_gyro()
        if reg <= _OUT_X_L_XL + 5 and last >= _OUT_X_L_XL:
            self._convert_accel()

    def _clear_xg_status(self, reg: int, count: int, step: int) -> None:
        last = reg + (count - 1) * step
        if reg <= _OUT_X_L_G + 5 and last >= _OUT_X_L_G:
            self._set_status(0x02, False)
        if reg <= _OUT_X_L_XL + 5 and last >= _OUT_X_L_XL:
            self._set_status(0x01, False)

    def _set_status(self, bit: int, on: bool) -> None:
        for reg in (_STATUS_REG, _STATUS_REG_2):
            self._xg[reg] = (self._xg[reg] | bit) if on else (self._xg[reg] & ~bit & 0xFF)

    def _convert_gyro(self) -> None:
        odr = self.gyro_odr_hz()
        if not odr or self.truth is None:
            return
        period = math.floor(self.t_s * odr + 1e-9)
        if period == self._gyro_period:
            return
        self._gyro_period = period
        rate_chip = _mul(self._body_to_xg, self.motion()[1])
        w, sig, bias = self._w, self._gyro_sigma, self._gyro_bias_chip
        lsb_rps = math.radians(GYRO_MDPS_PER_LSB.get((self._xg[_CTRL_REG1_G] >> 3) & 0x3, 8.75) * 1e-3)
        values = [rate_chip[i] + bias[i] + sig * w() for i in range(3)]
        self._store(self._xg, _OUT_X_L_G, values, lsb_rps)
        temp = int(round((self.temperature_c - 25.0) * 16.0))
        self._xg[_OUT_TEMP_L:_OUT_TEMP_L + 2] = struct.pack("<h", max(-32768, min(32767, temp)))
        self._set_status(0x02 | 0x04, True)

    def _convert_accel(self) -> None:
        odr = self.accel_odr_hz()
        if not odr or self.truth is None:
            return
        period = math.floor(self.t_s * odr + 1e-9)
        if period == self._accel_period:
            return
        self._accel_period = period
        force_chip = _mul(self._body_to_xg, self.motion()[0])
        w, sig, bias = self._w, self._accel_sigma, self._accel_bias_chip
        mg = ACCEL_MG_PER_LSB[(self._xg[_CTRL_REG6_XL] >> 3) & 0x3]
        lsb = mg * 1e-3 * GRAVITY_MPS2
        values = [force_chip[i] + bias[i] + sig * w() for i in range(3)]
        self._store(self._xg, _OUT_X_L_XL, values, lsb)
        self._set_status(0x01, True)

    # ------------------------------------------------------------------------------ magnetometer device
    def _reset_mag(self) -> None:
        self._mag = bytearray(128)
        for reg, value in _MAG_RESET.items():
            self._mag[reg] = value
        self._mag[_WHO_AM_I] = self._who[self.mag_address]
        self._mag_period = None
        self.resets["mag"] += 1

    def _write_mag(self, reg: int, value: int) -> None:
        if reg == _CTRL_REG2_M and value & 0x0C:         # REBOOT / SOFT_RST: defaults, bits clear themselves
            self._reset_mag()
            return
        if reg in (_WHO_AM_I, _STATUS_REG_M) or _OUT_X_L_M <= reg <= _OUT_X_L_M + 5:
            return
        self._mag[reg] = value & 0xFF

    def mag_odr_hz(self) -> float:
        if self._mag[_CTRL_REG3_M] & 0x02:               # power-down
            return 0.0
        return MAG_ODR_HZ[(self._mag[_CTRL_REG1_M] >> 2) & 0x7]

    def _refresh_mag(self, reg: int, count: int, step: int) -> None:
        last = reg + (count - 1) * step
        if reg <= _OUT_X_L_M + 5 and last >= _OUT_X_L_M:
            self._convert_mag()

    def _convert_mag(self) -> None:
        odr = self.mag_odr_hz()
        if not odr or self.truth is None:
            return
        period = math.floor(self.t_s * odr + 1e-9)
        if period == self._mag_period:
            return
        self._mag_period = period
        if self._mag[_CTRL_REG3_M] & 0x03 == 0x01:       # single conversion, then power-down
            self._mag[_CTRL_REG3_M] |= 0x03
        distorted = _mul(self.soft_iron, self.motion()[2])
        h0, dh = self.hard_iron_t, self.hard_iron_shift_t
        h = (h0[0] + dh[0], h0[1] + dh[1], h0[2] + dh[2])
        field_chip = _mul(self._body_to_mag, (distorted[0] + h[0], distorted[1] + h[1], distorted[2] + h[2]))
        w, sig = self._w, self._mag_sigma
        lsb_gauss = MAG_MGAUSS_PER_LSB[(self._mag[_CTRL_REG2_M] >> 5) & 0x3] * 1e-3
        lsb_t = lsb_gauss / GAUSS_PER_TESLA
        offsets = struct.unpack_from("<hhh", self._mag, _OFFSET_X_L_M)
        values = [field_chip[i] + sig * w() - offsets[i] * lsb_t for i in range(3)]
        self._store(self._mag, _OUT_X_L_M, values, lsb_t)
        self._mag[_STATUS_REG_M] |= 0x0F

    @staticmethod
    def _store(regs: bytearray, reg: int, values, lsb: float) -> None:
        raw = [max(-32768, min(32767, int(round(v / lsb)))) for v in values]
        _PACK.pack_into(regs, reg, *raw)


class FakeSMBus(RegisterBus):
    """The smbus2.SMBus methods SMBusI2C uses, served by an Lsm9ds1Emulator (errors are OSError, as smbus2's)."""

    @property
    def emulator(self):
        return self.device

