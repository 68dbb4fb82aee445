"""A register-level TI INA226 current/power monitor on an emulated I2C bus, fed the pack's true voltage and current.

Registers (16 bit, big-endian, TI SBOS547): CONFIG 0x00 (reset 0x4127; bit 15 RST, bits 14-12 read 100, AVG
11-9, VBUSCT 8-6, VSHCT 5-3, MODE 2-0: 0/4 power-down, 1-3 triggered, 5-7 continuous); SHUNT 0x01 (signed, 2.5
uV/LSB, clipped at +-81.92 mV); BUS 0x02 (1.25 mV/LSB, 15 bits); POWER 0x03 (= CURRENT x BUS / 20000, 25 x the
current LSB per bit); CURRENT 0x04 (signed, = SHUNT x CALIBRATION / 2048, 0 while CALIBRATION is 0);
CALIBRATION 0x05 (bits 14-0); MASK/ENABLE 0x06 (bit 3 CVRF conversion ready, cleared by reading it; bit 2 OVF
math overflow); ALERT LIMIT 0x07; MANUFACTURER ID 0xFE = 0x5449, DIE ID 0xFF = 0x2260 (`manufacturer_id` and
`die_id` make it another chip, for the driver's refusal). Other pointers read 0xFFFF. The pointer does not
auto-increment: a longer read repeats the register's two bytes.

The chip converts whenever a conversion register is read in a continuous mode (its ADC is faster than the
autopilot asks); in power-down the registers hold their last values, a triggered mode converts once when CONFIG
is written.

Inputs: `set_input(voltage_v, current_a)`: the bus voltage at VBUS [V] and the current through the shunt [A]
(positive: the pack discharging); or `source`, a callable returning them, read at every conversion. Faults:
`inject_errors(n)` fails the next n transactions with OSError(EREMOTEIO); `set_present(False)` takes the chip off
the bus. `smbus()` is the SMBus-like bus drivers/i2c_adapter.SMBusI2C accepts.
"""
from __future__ import annotations

import struct
from typing import Callable, Optional, Tuple

from hil.devices.i2c_chip import EmulatedI2cChip

CONFIG, SHUNT, BUS, POWER, CURRENT, CALIBRATION, MASK_ENABLE, ALERT_LIMIT = range(8)
MANUFACTURER_ID, DIE_ID = 0xFE, 0xFF
CONFIG_RESET = 0x4127
SHUNT_LSB_V = 2.5e-6
BUS_LSB_V = 1.25e-3


class Ina226Emulator(EmulatedI2cChip):
    """One INA226 at `address` with a shunt of `shunt_ohms` (see the module docstring)."""

    def __init__(self, address: int = 0x40, shunt_ohms: float = 0.002,
                 source: Optional[Callable[[], Tuple[float, float]]] = None,
                 manufacturer_id: int = 0x5449, die_id: int = 0x2260):
        if not shunt_ohms > 0:
            raise ValueError(f"shunt_ohms must be > 0, got {shunt_ohms!r}")
        self._init_link(address)
        self.shunt_ohms = float(shunt_ohms)
        self.source = source
        self.ids = {MANUFACTURER_ID: manufacturer_id, DIE_ID: die_id}
        self.voltage_v = 0.0
        self.current_a = 0.0
        self.conversions = 0
        self._reset()

    # ------------------------------------------------------------------------------ driving
    def set_input(self, voltage_v: float, current_a: float) -> None:
        """The bus voltage [V] and the current through the shunt [A] from now on."""
        self.voltage_v, self.current_a = float(voltage_v), float(current_a)

    def register(self, reg: int) -> int:
        """A register's current 16-bit value, as the chip holds it (no conversion)."""
        return self.ids.get(reg, self._regs[reg] if reg < len(self._regs) else 0xFFFF)

    def reset(self) -> None:
        """A brown-out: every register back to its power-on value."""
        self._reset()

    # ------------------------------------------------------------------------------ register access
    def read_registers(self, address: int, register: int, count: int) -> bytes:
        self._transaction(address)
        reg = register & 0xFF
        if reg in self.ids:
            value = self.ids[reg]
        elif reg > ALERT_LIMIT:
            value = 0xFFFF
        else:
            if reg in (SHUNT, BUS, POWER, CURRENT) and self._mode() >= 5:
                self._convert()
            value = self._regs[reg]
            if reg == MASK_ENABLE:
                self._regs[MASK_ENABLE] &= ~0x0008 & 0xFFFF     # CVRF clears when read
        two = struct.pack(">H", value)
        return bytes(two[i % 2] for i in range(count))

    def write_registers(self, address: int, register: int, data: bytes) -> None:
        self._transaction(address)
        if len(data) < 2:
            return
        value = (data[0] << 8) | data[1]
        reg = register & 0xFF
        if reg == CONFIG:
            if value & 0x8000:
                self._reset()
                return
            self._regs[CONFIG] = (value & 0x0FFF) | 0x4000
            if 1 <= self._mode() <= 3:
                self._convert()
        elif reg == CALIBRATION:
            self._regs[CALIBRATION] = value & 0x7FFF
        elif reg == MASK_ENABLE:
            self._regs[MASK_ENABLE] = (value & 0xFC01) | (self._regs[MASK_ENABLE] & 0x001E)
        elif reg == ALERT_LIMIT:
            self._regs[ALERT_LIMIT] = value
        # SHUNT, BUS, POWER, CURRENT and the ids are read-only

    # ------------------------------------------------------------------------------ the chip
    def _reset(self) -> None:
        self._regs = [CONFIG_RESET, 0, 0, 0, 0, 0, 0, 0]

    def _mode(self) -> int:
        return self._regs[CONFIG] & 0x7

    def _convert(self) -> None:
        if self.source is not None:
            self.voltage_v, self.current_a = (float(x) for x in self.source())
        self.conversions += 1
        shunt_raw = max(-32768, min(32767, int(round(self.current_a * self.shunt_ohms / SHUNT_LSB_V))))
        bus_raw = max(0, min(int(round(self.voltage_v / BUS_LSB_V)), 0x7FFF))
        current_raw = int(shunt_raw * self._regs[CALIBRATION] / 2048)
        overflow = not -32768 <= current_raw <= 32767
        current_raw = max(-32768, min(32767, current_raw))
        self._regs[SHUNT] = shunt_raw & 0xFFFF
        self._regs[BUS] = bus_raw
        self._regs[CURRENT] = current_raw & 0xFFFF
        self._regs[POWER] = min(0xFFFF, abs(current_raw) * bus_raw // 20000)
        self._regs[MASK_ENABLE] = (self._regs[MASK_ENABLE] & ~0x000C & 0xFFFF) | 0x0008 | (0x4 if overflow else 0)
