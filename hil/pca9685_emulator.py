"""A register-level NXP PCA9685 16-channel PWM controller on an emulated I2C bus, with its own oscillator.

Registers (PCA9685 datasheet, rev. 4, section 7.3):
  MODE1 0x00   reset 0x11: bit 7 RESTART, 6 EXTCLK, 5 AI (auto-increment), 4 SLEEP (oscillator off, no
               outputs), 0 ALLCALL. Writing RESTART 1 clears it.
  MODE2 0x01   reset 0x04.
  LEDn_ON_L/H, LEDn_OFF_L/H at 0x06 + 4n (n = 0..15): 12-bit counts; bit 4 of ON_H is "full on", bit 4 of
               OFF_H "full off" (full off wins). Reset: OFF_H = 0x10 (all outputs off).
  ALL_LED_ON/OFF 0xFA..0xFD: a write sets every channel's four registers.
  PRE_SCALE 0xFE reset 0x1E: written only while SLEEP is set (the chip ignores it otherwise).
Auto-increment: with AI set, each byte of a transfer goes to the next register; without it, every byte goes to
the register addressed (so a 4-byte LED write without AI lands in one register, as on the chip).

The output frequency is osc_hz / (4096 x (PRE_SCALE + 1)); a channel's pulse is (OFF - ON) mod 4096 counts of
(PRE_SCALE + 1) / osc_hz each. `osc_hz` is the board's true oscillator (25 MHz nominal, real boards run a few %
off), so `pulse_us(ch)` is what an oscilloscope reads, not what the driver meant. An absent chip (`present`
False, or another address) answers OSError(121, Remote I/O error) as Linux i2c-dev does. `smbus()` returns the
SMBus-like object drivers/i2c_adapter.SMBusI2C accepts. Thread-safe.
"""
from __future__ import annotations

import errno
import os
import threading

MODE1, MODE2, LED0, ALL_LED, PRE_SCALE = 0x00, 0x01, 0x06, 0xFA, 0xFE
RESTART, AI, SLEEP = 0x80, 0x20, 0x10
FULL = 0x10                           # bit 4 of an _H register


class Pca9685Emulator:
    def __init__(self, address: int = 0x40, osc_hz: float = 25e6):
        self.address = address
        self.osc_hz = float(osc_hz)
        self.present = True
        self._lock = threading.Lock()
        self.regs = bytearray(256)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.regs[:] = bytes(256)
            self.regs[MODE1] = 0x11
            self.regs[MODE2] = 0x04
            for n in range(16):
                self.regs[LED0 + 4 * n + 3] = FULL
            self.regs[ALL_LED + 3] = FULL
            self.regs[PRE_SCALE] = 0x1E

    # ------------------------------------------------------------------------------ what a scope reads
    def frequency_hz(self) -> float:
        return self.osc_hz / (4096.0 * (self.regs[PRE_SCALE] + 1))

    def pulse_us(self, ch: int) -> float:
        """The true high time of output `ch` per period [us]; 0 while off or asleep."""
        with self._lock:
            if self.regs[MODE1] & SLEEP:
                return 0.0
            base = LED0 + 4 * ch
            on = self.regs[base] | (self.regs[base + 1] & 0x0F) << 8
            off = self.regs[base + 2] | (self.regs[base + 3] & 0x0F) << 8
            tick_us = (self.regs[PRE_SCALE] + 1) / self.osc_hz * 1e6
            if self.regs[base + 3] & FULL:
                return 0.0
            if self.regs[base + 1] & FULL:
                return 4096 * tick_us
            return ((off - on) % 4096) * tick_us

    # ------------------------------------------------------------------------------ the bus side
    def probe(self, addr: int) -> None:
        if not self.present or addr != self.address:
            raise OSError(errno.EREMOTEIO, os.strerror(errno.EREMOTEIO))

    def read_registers(self, addr: int, reg: int, n: int) -> bytes:
        self.probe(addr)
        with self._lock:
            step = 1 if self.regs[MODE1] & AI else 0
            return bytes(self.regs[(reg + i * step) & 0xFF] for i in range(n))

    def write_registers(self, addr: int, reg: int, data: bytes) -> None:
        self.probe(addr)
        with self._lock:
            step = 1 if self.regs[MODE1] & AI else 0
            for i, value in enumerate(data):
                self._write_one((reg + i * step) & 0xFF, value)

    def _write_one(self, reg: int, value: int) -> None:
        if reg == PRE_SCALE:
            if self.regs[MODE1] & SLEEP:
                self.regs[PRE_SCALE] = max(3, value)          # the chip forces values below 3 to 3
            return
        if reg == MODE1:
            self.regs[MODE1] = value & ~RESTART & 0xFF if value & RESTART else value
            return
        if ALL_LED <= reg <= ALL_LED + 3:
            self.regs[reg] = value
            for n in range(16):
                self.regs[LED0 + 4 * n + reg - ALL_LED] = value
            return
        self.regs[reg] = value

    def smbus(self):
        """An smbus2.SMBus look-alike on this chip (what SMBusI2C(bus=...) takes)."""
        from drivers.i2c_adapter import RegisterBus
        return RegisterBus(self)
