"""A register-level TI ADS1115 ADC on an emulated I2C bus, and the analog power-sense module it reads.

Registers (16 bit, big-endian, TI SBAS444): CONVERSION 0x00 (signed, the last result, full scale = 32767),
CONFIG 0x01 (reset 0x8583: bit 15 OS, write 1 in single-shot mode to start a conversion, reads 0 while
converting and 1 when done; MUX 14-12: 000 AIN0-AIN1, 001 AIN0-AIN3, 010 AIN1-AIN3, 011 AIN2-AIN3, 100-111
AINx-GND; PGA 11-9: +-6.144, 4.096, 2.048, 1.024, 0.512, 0.256 V (110, 111 also 0.256); MODE 8: 1 single-shot /
power-down, 0 continuous; DR 7-5; comparator 4-0), LO_THRESH 0x02 (reset 0x8000), HI_THRESH 0x03 (reset
0x7FFF). The pointer register has two bits: only its low two bits select.

A single-shot conversion completes after `busy_reads` reads of CONFIG that show OS = 0 (so a driver's wait for
it is exercised; None: never completes, a hung ADC); in continuous mode each read of CONVERSION converts anew.
Inputs are clipped to the supply (`vdd_v`, -0.3 V to VDD + 0.3 V) and results to the full scale.

`set_pins(volts)` sets AIN0-AIN3 [V]. `PowerSenseModule(chip, ...)` is a power module wired to it: its
`set_input(voltage_v, current_a)` puts pack / voltage_ratio on one input and amps_offset_v + current /
amps_per_volt on another. Faults as the other emulated chips: `inject_errors(n)`, `set_present(False)`;
`smbus()` is the SMBus-like bus drivers/i2c_adapter.SMBusI2C accepts, so the Adafruit ADS1x15 library runs on it.
"""
from __future__ import annotations

import struct
from typing import Optional, Sequence

from hil.devices.i2c_chip import EmulatedI2cChip

CONVERSION, CONFIG, LO_THRESH, HI_THRESH = range(4)
CONFIG_RESET = 0x8583
PGA_FULL_SCALE_V = (6.144, 4.096, 2.048, 1.024, 0.512, 0.256, 0.256, 0.256)
MUX_PAIRS = ((0, 1), (0, 3), (1, 3), (2, 3), (0, None), (1, None), (2, None), (3, None))


class Ads1115Emulator(EmulatedI2cChip):
    """One ADS1115 at `address`, supplied with `vdd_v` (see the module docstring)."""

    def __init__(self, address: int = 0x48, vdd_v: float = 5.0, busy_reads: Optional[int] = 1):
        self._init_link(address)
        self.vdd_v = float(vdd_v)
        self.busy_reads = busy_reads
        self.pins = [0.0, 0.0, 0.0, 0.0]
        self.conversions = 0
        self._busy_left: Optional[int] = 0
        self._regs = [0, CONFIG_RESET, 0x8000, 0x7FFF]

    def set_pins(self, volts: Sequence[float]) -> None:
        """AIN0-AIN3 to ground [V] from now on."""
        self.pins = [float(v) for v in volts]

    def register(self, reg: int) -> int:
        return self._regs[reg & 3]

    # ------------------------------------------------------------------------------ register access
    def read_registers(self, address: int, register: int, count: int) -> bytes:
        self._transaction(address)
        reg = register & 3
        cfg = self._regs[CONFIG]
        if reg == CONVERSION and not cfg & 0x0100:            # continuous: a new result each read
            self._convert()
        value = self._regs[reg]
        if reg == CONFIG:
            if cfg & 0x0100:
                if self._busy_left is None:
                    value &= 0x7FFF                           # hung: converting for ever
                elif self._busy_left > 0:
                    self._busy_left -= 1
                    value &= 0x7FFF
                    if self._busy_left == 0:
                        self._convert()
            else:
                value &= 0x7FFF                               # continuous: always converting
        two = struct.pack(">H", value)
        return bytes(two[i % 2] for i in range(count))

    def write_registers(self, address: int, register: int, data: bytes) -> None:
        self._transaction(address)
        if len(data) < 2:
            return
        value = (data[0] << 8) | data[1]
        reg = register & 3
        if reg == CONFIG:
            self._regs[CONFIG] = (value & 0x7FFF) | 0x8000      # OS reads 1 when idle
            if value & 0x8000 and value & 0x0100:             # start a single-shot conversion
                self._busy_left = self.busy_reads
                if self._busy_left == 0:
                    self._convert()
        elif reg in (LO_THRESH, HI_THRESH):
            self._regs[reg] = value
        # CONVERSION is read-only

    def _pin(self, i: Optional[int]) -> float:
        if i is None:
            return 0.0
        return max(-0.3, min(self.vdd_v + 0.3, self.pins[i]))

    def _convert(self) -> None:
        cfg = self._regs[CONFIG]
        pos, neg = MUX_PAIRS[(cfg >> 12) & 7]
        full = PGA_FULL_SCALE_V[(cfg >> 9) & 7]
        code = int(round((self._pin(pos) - self._pin(neg)) / full * 32768))
        self._regs[CONVERSION] = max(-32768, min(32767, code)) & 0xFFFF
        self.conversions += 1


class PowerSenseModule:
    """An analog power module on an Ads1115Emulator: `set_input(voltage_v, current_a)` drives its two outputs."""

    def __init__(self, chip: Ads1115Emulator, voltage_channel: int = 0, current_channel: int = 1,
                 voltage_ratio: float = 11.0, amps_per_volt: float = 17.0, amps_offset_v: float = 0.0):
        self.chip = chip
        self.voltage_channel, self.current_channel = voltage_channel, current_channel
        self.voltage_ratio, self.amps_per_volt, self.amps_offset_v = voltage_ratio, amps_per_volt, amps_offset_v

    def set_input(self, voltage_v: float, current_a: float) -> None:
        pins = list(self.chip.pins)
        pins[self.voltage_channel] = voltage_v / self.voltage_ratio
        pins[self.current_channel] = self.amps_offset_v + current_a / self.amps_per_volt
        self.chip.set_pins(pins)

    def set_present(self, present: bool) -> None:
        self.chip.set_present(present)
