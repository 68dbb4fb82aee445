"""A TI INA226 high-side monitor (battery.kind: ina226), driven register by register.

Why by hand: the INA226 is the commonest chip on boat power modules, but no maintained CircuitPython or PyPI
library for it exists (adafruit-circuitpython-ina226 and pi-ina226 are not on PyPI; the INA228 library checks for
the INA228's device id), so this talks to its registers itself through adafruit_bus_device's I2CDevice, which
the Adafruit libraries already bring.

Registers (TI SBOS547, 16 bit, big-endian): 0x00 CONFIG (bit 15 reset; AVG 11-9, VBUSCT 8-6, VSHCT 5-3, MODE 2-0,
0b111 shunt and bus continuous; reset value 0x4127), 0x01 SHUNT (signed, 2.5 uV/LSB, +-81.92 mV), 0x02 BUS
(1.25 mV/LSB, 0-36 V), 0x03 POWER (25 x current LSB per bit), 0x04 CURRENT (signed, current LSB per bit, zero
until calibrated), 0x05 CALIBRATION (bits 14-0: CAL = 0.00512 / (current LSB x shunt)), 0xFE manufacturer id
0x5449 ("TI"), 0xFF die id 0x2260. open() reads both ids and refuses (WrongChipError) anything else: an INA219
at the address floats 0xFFFF there, an INA228 answers a different die id.

The set-up: 16 averages of 1.1 ms bus and shunt conversions, continuous (a new reading every 35 ms, faster
than the poll rate), and the calibration for max_current_a / 32768 A per bit (coarser only where CAL would
exceed 15 bits). Each read checks CONFIG first: a chip that browned out (it resets to 0x4127, uncalibrated) is
set up again on the spot. The pack voltage is the bus voltage plus the shunt voltage (VBUS wired to IN-, high
side, as on the INA219 modules; where a board ties VBUS to IN+ the error is at most the 81.92 mV shunt range).
"""
from __future__ import annotations

import math
from typing import Any, Tuple

from drivers.i2c_adapter import import_without_blinka
from drivers.power_monitor.chip import WrongChipError, register_read, register_write, signed16

CONFIG, SHUNT, BUS, POWER, CURRENT, CALIBRATION = range(6)
MANUFACTURER_ID, DIE_ID = 0xFE, 0xFF
TI_ID = 0x5449                   # "TI"
INA226_DIE_ID = 0x2260
SHUNT_LSB_V = 2.5e-6
BUS_LSB_V = 1.25e-3
MAX_SHUNT_V = 0.08192            # the shunt input's full scale [V]
MAX_BUS_V = 36.0                 # the bus input's rating [V]
CAL_MAX = 0x7FFF                 # the calibration register has 15 bits
AVG_16, CT_1100US, MODE_CONTINUOUS = 0b010, 0b100, 0b111
CONFIG_SETUP = (AVG_16 << 9) | (CT_1100US << 6) | (CT_1100US << 3) | MODE_CONTINUOUS   # 0x0527
CONFIG_MASK = 0x0FFF             # bits 14-12 are fixed (read 100), bit 15 is the reset


def ina226_calibration(shunt_ohms: float, max_current_a: float) -> Tuple[int, float]:
    """(calibration register, current LSB [A]) for a shunt [ohm] and the largest current to read [A].

    ValueError when either is not a positive finite number or their product exceeds the 81.92 mV the shunt
    input measures."""
    if not (math.isfinite(shunt_ohms) and shunt_ohms > 0 and math.isfinite(max_current_a) and max_current_a > 0):
        raise ValueError(f"shunt_ohms and max_current_a must be positive numbers, got {shunt_ohms!r}, "
                         f"{max_current_a!r}")
    shunt_v = shunt_ohms * max_current_a
    if shunt_v > MAX_SHUNT_V * (1 + 1e-9):
        raise ValueError(f"{max_current_a:g} A through {shunt_ohms:g} ohm is {1e3 * shunt_v:.1f} mV across the "
                         f"shunt; the INA226 measures at most 81.92 mV: use a smaller shunt or a lower "
                         f"max_current_a")
    lsb = max_current_a / 32768.0
    cal = min(int(0.00512 / (lsb * shunt_ohms)), CAL_MAX)
    return cal, 0.00512 / (cal * shunt_ohms)


class Ina226:
    """The INA226 of a `battery:` section (kind, bus, address, shunt_ohms, max_current_a); see drivers/power_monitor/
    chip.py for the interface and this module's docstring for the registers."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.cal, self.current_lsb_a = ina226_calibration(cfg.shunt_ohms, cfg.max_current_a)
        self.hardware_id = f"INA226 i2c-{cfg.bus} 0x{cfg.address:02x}"
        self.setups = 0                          # how often the chip was set up (a brown-out adds one)
        self._dev: Any = None

    def open(self, i2c) -> None:
        i2c_device = import_without_blinka("adafruit_bus_device.i2c_device")   # Blinka's board guess stays out
        dev = i2c_device.I2CDevice(i2c, self.cfg.address, probe=False)
        maker, die = register_read(dev, MANUFACTURER_ID), register_read(dev, DIE_ID)
        if (maker, die) != (TI_ID, INA226_DIE_ID):
            raise WrongChipError(f"the chip at 0x{self.cfg.address:02x} is not an INA226: manufacturer id "
                                 f"0x{maker:04x}, die id 0x{die:04x} (an INA226 answers 0x{TI_ID:04x}, "
                                 f"0x{INA226_DIE_ID:04x}); check battery.kind and battery.address")
        self._setup(dev)
        self._dev = dev

    def _setup(self, dev) -> None:
        register_write(dev, CONFIG, CONFIG_SETUP)
        register_write(dev, CALIBRATION, self.cal)
        cal = register_read(dev, CALIBRATION)
        if cal != self.cal:
            raise RuntimeError(f"calibration register reads 0x{cal:04x} after writing 0x{self.cal:04x}")
        self.setups += 1

    def read(self) -> Tuple[float, float]:
        dev = self._dev
        if register_read(dev, CONFIG) & CONFIG_MASK != CONFIG_SETUP:   # reset (brown-out): not calibrated now
            self._setup(dev)
        shunt_v = signed16(register_read(dev, SHUNT)) * SHUNT_LSB_V
        bus_raw = register_read(dev, BUS)
        current = signed16(register_read(dev, CURRENT)) * self.current_lsb_a
        if bus_raw & 0x8000:
            raise ValueError(f"bus voltage register reads 0x{bus_raw:04x}: bit 15 is always 0 on an INA226")
        voltage = bus_raw * BUS_LSB_V + shunt_v
        if not 0.0 <= voltage <= MAX_BUS_V + 0.5:
            raise ValueError(f"pack voltage {voltage:.2f} V read: outside the INA226's 0-36 V")
        return voltage, current

    def close(self) -> None:
        self._dev = None
