"""A register-level NXP PCA9685 16-channel PWM controller on an emulated I2C bus, with its own oscillator.

Registers (PCA9685 product data sheet, rev. 4, sections 7.3 and 7.6):
  MODE1 0x00   reset 0x11: bit 7 RESTART, 6 EXTCLK, 5 AI (auto-increment), 4 SLEEP (oscillator off, no
               outputs), 3-1 SUB1-SUB3 (answer the sub-addresses), 0 ALLCALL (answer the LED All Call address).
  MODE2 0x01   reset 0x04.  SUBADR1-3 0x02-0x04 reset 0xE2/0xE4/0xE8, ALLCALLADR 0x05 reset 0xE0 (8-bit
               forms: the chip answers 0x71/0x72/0x74 while SUBn is set, 0x70 while ALLCALL is, as i2cdetect
               shows on a real board).
  LEDn_ON_L/H, LEDn_OFF_L/H at 0x06 + 4n (n = 0..15): 12-bit counts; bit 4 of ON_H is "full on", bit 4 of
               OFF_H "full off" (full off wins). Reset: OFF_H = 0x10 (all outputs off).
  ALL_LED_ON/OFF 0xFA..0xFD: a write sets every channel's matching register; they read back zero.
  PRE_SCALE 0xFE reset 0x1E: written only while SLEEP is set (the chip ignores it otherwise); values below 3
               are taken as 3.
Auto-increment: with AI set, each byte of a transfer goes to the next register, LED15_OFF_H (0x45) and
PRE_SCALE (0xFE) rolling over to MODE1 (0x00); without AI every byte goes to the register addressed (so a
4-byte LED write without AI lands in one register, as on the chip).
RESTART: setting SLEEP while any output is running sets RESTART and pauses the outputs (the registers keep
their values). After SLEEP is cleared they stay paused until 1 is written to RESTART (which clears it) or a
PWM register is written; writing 0 to RESTART does nothing. The 500 us the oscillator needs is not modelled.
EXTCLK is sticky (only a reset clears it); `osc_hz` is then the external clock's frequency.
Software reset: the general call address 0x00 with the byte 0x06 puts every register back to its reset value
(any other byte after 0x00 is not acknowledged); `reset()` is the same as a power cycle.

The output frequency is osc_hz / (4096 x (PRE_SCALE + 1)); a channel's pulse is (OFF - ON) mod 4096 counts of
(PRE_SCALE + 1) / osc_hz each. `osc_hz` is the board's true oscillator [Hz] (25 MHz nominal, real boards run a
few % off), so `pulse_us(ch)` is what an oscilloscope reads, not what the driver meant. An absent chip
(`present` False, or another address) answers OSError(121, Remote I/O error) as Linux i2c-dev does;
`inject_errors(n)` fails the next n transactions the same way. `smbus()` returns the SMBus-like object
drivers/i2c_adapter.SMBusI2C accepts. All register access holds one lock: a loop, a guardian thread and a
socket server (hil/devices/i2c_socket.py) may share the chip.
"""
from __future__ import annotations

import errno
import os
import threading

MODE1, MODE2, SUBADR1, ALLCALLADR, LED0, ALL_LED, PRE_SCALE = 0x00, 0x01, 0x02, 0x05, 0x06, 0xFA, 0xFE
LED15_OFF_H = LED0 + 4 * 15 + 3                    # 0x45, the last LED register
RESTART, EXTCLK, AI, SLEEP, ALLCALL = 0x80, 0x40, 0x20, 0x10, 0x01
SUB_BITS = (0x08, 0x04, 0x02)                      # MODE1 SUB1, SUB2, SUB3 enable SUBADR1, 2, 3
FULL = 0x10                                        # bit 4 of an _H register: full on (ON_H) / full off (OFF_H)
GENERAL_CALL, SWRST_BYTE = 0x00, 0x06
COUNTS = 4096                                      # counter steps per PWM period


def _nack() -> OSError:
    return OSError(errno.EREMOTEIO, os.strerror(errno.EREMOTEIO))


class Pca9685Emulator:
    """One PCA9685 at `address` (7-bit), clocked at `osc_hz` [Hz]; `present` False takes it off the bus."""

    def __init__(self, address: int = 0x40, osc_hz: float = 25e6, present: bool = True):
        self.address = int(address)
        self.osc_hz = float(osc_hz)
        self.present = bool(present)
        self.pending_errors = 0
        self.transactions = 0
        self.resets = 0                             # software resets received (power cycles: reset())
        self._lock = threading.RLock()
        self.regs = bytearray(256)
        self._paused = False                        # outputs held by RESTART (see the module docstring)
        self.reset()

    def reset(self) -> None:
        """Power-on state: every register at its reset value, outputs off, asleep."""
        with self._lock:
            self.regs[:] = bytes(256)
            self.regs[MODE1] = 0x11
            self.regs[MODE2] = 0x04
            self.regs[SUBADR1:ALLCALLADR + 1] = bytes((0xE2, 0xE4, 0xE8, 0xE0))
            for n in range(16):
                self.regs[LED0 + 4 * n + 3] = FULL
            self.regs[PRE_SCALE] = 0x1E
            self._paused = False

    def inject_errors(self, count: int) -> None:
        """Make the next `count` transactions fail with EREMOTEIO (a glitch on the bus)."""
        with self._lock:
            self.pending_errors = int(count)

    # ------------------------------------------------------------------------------ what a scope reads
    def frequency_hz(self) -> float:
        """The PWM frame rate the PRE_SCALE register gives with this oscillator [Hz]."""
        with self._lock:
            return self.osc_hz / (COUNTS * (self.regs[PRE_SCALE] + 1))

    def pulse_us(self, ch: int) -> float:
        """The true high time of output `ch` (0-15) per period [us]; 0 while off, asleep or paused."""
        if not 0 <= ch <= 15:
            raise ValueError(f"PCA9685 output {ch}: outputs are 0-15")
        with self._lock:
            if self.regs[MODE1] & SLEEP or self._paused:
                return 0.0
            on_l, on_h, off_l, off_h = self.regs[LED0 + 4 * ch:LED0 + 4 * ch + 4]
            tick_us = (self.regs[PRE_SCALE] + 1) / self.osc_hz * 1e6
            if off_h & FULL:
                return 0.0
            if on_h & FULL:
                return COUNTS * tick_us
            on, off = on_l | (on_h & 0x0F) << 8, off_l | (off_h & 0x0F) << 8
            return ((off - on) % COUNTS) * tick_us

    def addresses(self) -> list:
        """The 7-bit addresses the chip acknowledges now (its own, All Call and enabled sub-addresses)."""
        with self._lock:
            mode1 = self.regs[MODE1]
            out = [self.address]
            out += [self.regs[SUBADR1 + i] >> 1 for i, bit in enumerate(SUB_BITS) if mode1 & bit]
            if mode1 & ALLCALL:
                out.append(self.regs[ALLCALLADR] >> 1)
            return out

    # ------------------------------------------------------------------------------ the bus side
    def probe(self, addr: int) -> None:
        """An address-only transaction: OSError(EREMOTEIO) unless the chip acknowledges `addr`."""
        with self._lock:
            self._transaction(addr, general_call_ok=True)

    def read_registers(self, addr: int, reg: int, n: int) -> bytes:
        with self._lock:
            self._transaction(addr)
            out = bytearray()
            for _ in range(n):
                out.append(0 if ALL_LED <= reg <= ALL_LED + 3 else self.regs[reg])
                reg = self._next(reg)
            return bytes(out)

    def write_registers(self, addr: int, reg: int, data: bytes) -> None:
        with self._lock:
            self._transaction(addr, general_call_ok=True)
            if addr == GENERAL_CALL:
                if reg != SWRST_BYTE or data:
                    raise _nack()                   # the chip acknowledges only SWRST after 0x00
                self.reset()
                self.resets += 1
                return
            for value in data:
                self._write_one(reg, value)
                reg = self._next(reg)

    def smbus(self):
        """An smbus2.SMBus look-alike on this chip (what SMBusI2C(bus=...) takes)."""
        from drivers.i2c_adapter import RegisterBus
        return RegisterBus(self)

    # ------------------------------------------------------------------------------ internals (lock held)
    def _transaction(self, addr: int, general_call_ok: bool = False) -> None:
        self.transactions += 1
        if self.pending_errors > 0:
            self.pending_errors -= 1
            raise _nack()
        if not self.present:
            raise _nack()
        if addr == GENERAL_CALL and general_call_ok:
            return
        if addr not in self.addresses():
            raise _nack()

    def _next(self, reg: int) -> int:
        if not self.regs[MODE1] & AI:
            return reg
        return 0 if reg in (LED15_OFF_H, PRE_SCALE, 0xFF) else reg + 1

    def _running(self) -> bool:
        """Any output not fully off (its pulse continues until the oscillator stops)."""
        return any(not self.regs[LED0 + 4 * n + 3] & FULL for n in range(16))

    def _write_one(self, reg: int, value: int) -> None:
        mode1 = self.regs[MODE1]
        if reg == PRE_SCALE:
            if mode1 & SLEEP:
                self.regs[PRE_SCALE] = max(3, value)
            return
        if reg == MODE1:
            self._write_mode1(mode1, value)
            return
        if ALL_LED <= reg <= ALL_LED + 3:
            for n in range(16):
                self.regs[LED0 + 4 * n + reg - ALL_LED] = value
            self._restart_by_pwm_write()
            return
        self.regs[reg] = value
        if LED0 <= reg <= LED15_OFF_H:
            self._restart_by_pwm_write()

    def _write_mode1(self, old: int, value: int) -> None:
        new = (value & ~RESTART & 0xFF) | (old & RESTART) | (old & EXTCLK)    # RESTART 0, EXTCLK: no effect
        if value & SLEEP and not old & SLEEP and self._running():
            new |= RESTART
            self._paused = True
        if value & RESTART and not new & SLEEP:
            new &= ~RESTART
            self._paused = False
        self.regs[MODE1] = new

    def _restart_by_pwm_write(self) -> None:
        if not self.regs[MODE1] & SLEEP and self.regs[MODE1] & RESTART:
            self.regs[MODE1] &= ~RESTART & 0xFF
            self._paused = False
