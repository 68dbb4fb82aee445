"""A register-level TI INA219 current/power monitor on an emulated I2C bus, fed the pack's true voltage and current.

Registers (16 bit, big-endian, TI SBOS448): CONFIG 0x00 (reset 0x399F; bit 15 RST, bit 13 BRNG 16/32 V, bits
12-11 PG: shunt range 40/80/160/320 mV, bits 10-3 BADC/SADC, bits 2-0 MODE: 0 power-down, 1-3 triggered, 4 ADC
off, 5-7 continuous); SHUNT 0x01 (signed, 10 uV/LSB, clipped to the PG range); BUS 0x02 (bits 15-3: 4 mV/LSB, bit
1 CNVR conversion ready, bit 0 OVF); POWER 0x03 (= CURRENT x BUS / 5000, reading it clears CNVR); CURRENT 0x04
(signed, = SHUNT x CALIBRATION / 4096, 0 while CALIBRATION is 0); CALIBRATION 0x05 (bit 0 reads 0). The register
pointer does not auto-increment: a longer read repeats the register's two bytes.

The chip converts whenever a conversion register is read in a continuous mode (the ADC is always faster than the
autopilot asks); in power-down and ADC-off the registers hold their last values, and a triggered mode converts
once when CONFIG is written.

Inputs: `set_input(voltage_v, current_a)` is the bus voltage at IN- [V] and the current through the shunt [A]
(positive: the pack discharging); or give `source`, a callable returning them, read at every conversion.
Faults: `inject_errors(n)` fails the next n transactions with OSError(EREMOTEIO); `set_present(False)` takes the
chip off the bus (every transaction NACKs), as a loose wire or a dead monitor does. `smbus()` is the SMBus-like
bus drivers/i2c_adapter.SMBusI2C accepts, so the real Adafruit INA219 library runs on this emulated chip.
"""
from __future__ import annotations

import struct
from typing import Callable, Optional, Tuple

from hil.devices.i2c_chip import EmulatedI2cChip

CONFIG, SHUNT, BUS, POWER, CURRENT, CALIBRATION = range(6)
CONFIG_RESET = 0x399F
SHUNT_LSB_V = 10e-6
BUS_LSB_V = 4e-3
PGA_RANGE_V = (0.040, 0.080, 0.160, 0.320)


class Ina219Emulator(EmulatedI2cChip):
    """One INA219 at `address` with a shunt of `shunt_ohms` (see the module docstring)."""

    def __init__(self, address: int = 0x40, shunt_ohms: float = 0.1,
                 source: Optional[Callable[[], Tuple[float, float]]] = None):
        if not shunt_ohms > 0:
            raise ValueError(f"shunt_ohms must be > 0, got {shunt_ohms!r}")
        self._init_link(address)
        self.shunt_ohms = float(shunt_ohms)
        self.source = source
        self.voltage_v = 0.0
        self.current_a = 0.0
        self.conversions = 0
        self._reset()

    # ------------------------------------------------------------------------------ driving
    def set_input(self, voltage_v: float, current_a: float) -> None:
        """The pack's bus voltage [V] and the current through the shunt [A] from now on."""
        self.voltage_v, self.current_a = float(voltage_v), float(current_a)

    def register(self, reg: int) -> int:
        """A register's current 16-bit value, as the chip holds it (no conversion)."""
        return self._regs[reg]

    # ------------------------------------------------------------------------------ register access
    def read_registers(self, address: int, register: int, count: int) -> bytes:
        self._transaction(address)
        reg = register & 0xFF
        if reg > CALIBRATION:
            return bytes(0xFF for _ in range(count))      # unimplemented pointer: the bus floats high
        if reg in (SHUNT, BUS, POWER, CURRENT) and self._mode() >= 5:
            self._convert()
        value = self._regs[reg]
        if reg == POWER:
            self._regs[BUS] &= ~0x0002 & 0xFFFF         # CNVR clears when POWER is read
        two = struct.pack(">H", value)
        return bytes(two[i % 2] for i in range(count))

    def write_registers(self, address: int, register: int, data: bytes) -> None:
        self._transaction(address)
        if len(data) < 2:                                # a pointer write (handled by the bus) or a short one
            return
        value = (data[0] << 8) | data[1]
        reg = register & 0xFF
        if reg == CONFIG:
            if value & 0x8000:
                self._reset()
                return
            self._regs[CONFIG] = value & 0x3FFF
            if 1 <= self._mode() <= 3:
                self._convert()
        elif reg == CALIBRATION:
            self._regs[CALIBRATION] = value & 0xFFFE
        # SHUNT, BUS, POWER and CURRENT are read-only

    # ------------------------------------------------------------------------------ the chip
    def _reset(self) -> None:
        self._regs = [CONFIG_RESET, 0, 0, 0, 0, 0]

    def _mode(self) -> int:
        return self._regs[CONFIG] & 0x7

    def _convert(self) -> None:
        if self.source is not None:
            self.voltage_v, self.current_a = (float(x) for x in self.source())
        cfg = self._regs[CONFIG]
        self.conversions += 1
        overflow = False
        full_scale = PGA_RANGE_V[(cfg >> 11) & 0x3]
        shunt_v = self.current_a * self.shunt_ohms
        if abs(shunt_v) > full_scale:
            overflow = True
            shunt_v = max(-full_scale, min(full_scale, shunt_v))
        shunt_raw = int(round(shunt_v / SHUNT_LSB_V))
        bus_fs = 32.0 if cfg & 0x2000 else 16.0
        bus_raw = max(0, min(int(round(min(self.voltage_v, bus_fs) / BUS_LSB_V)), 0x1FFF))
        cal = self._regs[CALIBRATION]
        current_raw = int(shunt_raw * cal / 4096)
        if not -32768 <= current_raw <= 32767:
            overflow = True
            current_raw = max(-32768, min(32767, current_raw))
        power_raw = min(0xFFFF, abs(current_raw) * bus_raw // 5000)
        self._regs[SHUNT] = shunt_raw & 0xFFFF
        self._regs[BUS] = (bus_raw << 3) | 0x0002 | (0x0001 if overflow else 0)
        self._regs[CURRENT] = current_raw & 0xFFFF
        self._regs[POWER] = power_raw
