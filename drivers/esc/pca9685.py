"""ESC pulses from a PCA9685 16-channel PWM board on I2C (Adafruit servo HAT/bonnet, Blue Robotics Navigator):
a port for drivers/esc.EscOutput (see esc_backends). `output` is the board channel, 0-15.

Through the Adafruit CircuitPython PCA9685 library on drivers/i2c_adapter.SMBusI2C (as the LSM9DS1), at 50 Hz.

Clock. The chip counts 4096 ticks per period of its oscillator, nominally 25 MHz but 3-5 % off on real boards.
`pulse_scale` (the boat config's esc.pulse_scale, dimensionless) is the true pulse over the intended one, measured
on that board with pulse_scale 1 (a scope, or `autopilot bench esc --calibrate`). A tick lasts (PRE_SCALE + 1) /
f_osc, so true / intended = 25 MHz / f_osc and the board's oscillator is f_osc = 25 MHz / pulse_scale: a fast
oscillator (26 MHz) gives short pulses and pulse_scale < 1 (0.9615). The library is given f_osc as its
`reference_clock_speed` [Hz], used for the prescaler (round(f_osc / 4096 / 50 Hz) - 1) and for the tick
length, so the frame is 50 Hz and the pulses right to one tick (4.9 us at 50 Hz) on that board.

Pulses. P [us] becomes round(P x f_osc / (PRE_SCALE + 1) / 1e6) ticks, ON at 0 and OFF at that count, written
as one 4-byte register transfer through the library's `pwm_regs` (its `duty_cycle` would truncate a 16-bit duty
to 12 bits, losing up to one tick); 0 sets the channel's full-off bit. Reading back converts the registers to
microseconds, giving the exact pulse last set while the registers still hold its ticks (so a guardian can
verify its neutral although 1500 us is not a whole number of ticks), and 0 while the chip sleeps.

Faults. A bus error is OSError and makes `connected` False for good (EscOutput then opens a new port). A chip
found asleep when a pulse is set (it lost power and reset: its outputs are off) is OSError too, so the ESCs are
re-armed on a re-opened, re-configured board. The board keeps its outputs when this process lets go (`stop()`
closes the bus only), which is why the deadman guardian opens a port of its own; opening a port does not touch
a prescaler already at 50 Hz, so a second port does not interrupt the pulses.

Threads. adafruit_register (under the library) packs every register transfer in ONE buffer shared by the whole
process, outside the bus lock; two ports used from two threads (the loop and an emergency neutral) could send
each other's bytes. Every register access here holds REGISTER_LOCK, a re-entrant process-wide lock.
"""
from __future__ import annotations

import errno
import threading
from typing import Dict, Sequence, Tuple

from drivers.esc.contract import EscError
from drivers.i2c_adapter import I2CBusError, RegisterBus, SMBusI2C, SocketRegisters, import_without_blinka, open_smbus

NOMINAL_OSC_HZ = 25e6          # the datasheet's internal oscillator [Hz]
FRAME_HZ = 50.0                # servo/ESC frame rate [Hz]
PULSE_RANGE_US = (500, 2500)   # pulses accepted by set_servo_pulsewidth [us] (0 = off)
MODE1_AI, MODE1_SLEEP = 0x20, 0x10
FULL = 0x1000                  # full on (ON) / full off (OFF) bit of a 16-bit LED register pair
REGISTER_LOCK = threading.RLock()   # see "Threads" in the module docstring


class Pca9685Port:
    """The port contract of drivers/esc_backends on one PCA9685 board; make it with `Pca9685Port.open`.

    set_servo_pulsewidth(output, pulse_us)   0 = off, else 500-2500 us; OSError on a bus fault or reset chip
    get_servo_pulsewidth(output) -> int      the pulse on the board [us] read back, 0 = off or chip asleep
    connected                                False after a bus fault or stop()
    stop()                                   close the bus; the board keeps its pulses
    `outputs` are the board channels this port drives; `osc_hz` the oscillator it assumes [Hz]; `prescale` the
    PRE_SCALE it found or set when it opened, from which it computes ticks (one register read per pulse set:
    MODE1, to see a chip that reset).
    """

    def __init__(self, pca, outputs: Sequence[int], bus: SMBusI2C, osc_hz: float, prescale: int,
                 address: int = 0x40):
        self.pca = pca
        self.outputs = list(outputs)
        self.bus = bus
        self.osc_hz = osc_hz
        self.address = address
        self.prescale = int(prescale)
        self.connected = True
        self._stopped = False
        self._set: Dict[int, Tuple[int, int]] = {}       # output -> (pulse us, ticks) last set

    @classmethod
    def open(cls, backend, outputs: Sequence[int]) -> "Pca9685Port":
        """The board at backend.pca9685_address on /dev/i2c-<backend.i2c_bus> (or on backend.smbus, an emulated
        bus, or backend.i2c_socket, one served by another process), at 50 Hz with f_osc = 25 MHz /
        backend.pulse_scale. EscError saying what to do when the outputs, the bus or the board are wrong."""
        outputs = list(outputs)
        bad = [o for o in outputs if not 0 <= o <= 15]
        if bad:
            raise EscError(f"PCA9685 outputs {outputs}: {bad} out of range, a PCA9685 has outputs 0-15 "
                           f"(esc.pca9685_channels)")
        if len(set(outputs)) != len(outputs):
            raise EscError(f"PCA9685 outputs {outputs}: each ESC needs its own output, 0-15 "
                           f"(esc.pca9685_channels)")
        if not 0.8 <= backend.pulse_scale <= 1.2:
            raise EscError(f"esc.pulse_scale {backend.pulse_scale}: a PCA9685 oscillator is within a few % of "
                           f"25 MHz; measure it again (autopilot bench esc --calibrate)")
        addr = backend.pca9685_address
        try:
            if backend.smbus is not None:
                raw = backend.smbus
            elif backend.i2c_socket:
                raw = RegisterBus(SocketRegisters(backend.i2c_socket))
            else:
                raw = open_smbus(backend.i2c_bus)
        except I2CBusError as e:
            raise EscError(str(e).replace("sensors.imu.bus", "esc.i2c_bus")) from None
        except OSError as e:
            raise EscError(str(e)) from None
        bus = SMBusI2C(backend.i2c_bus, bus=raw)
        osc = NOMINAL_OSC_HZ / backend.pulse_scale
        module = import_without_blinka("adafruit_pca9685")
        try:
            with REGISTER_LOCK:
                pca = cls._configure(module, bus, addr, osc)
                prescale = pca.prescale_reg
        except (ValueError, OSError) as e:
            bus.close()
            if isinstance(e, ValueError) or getattr(e, "errno", None) in (errno.EREMOTEIO, errno.ENXIO, errno.EIO):
                raise EscError(f"no PCA9685 answering at 0x{addr:02x} on I2C bus {backend.i2c_bus}: check the "
                               f"wiring and the board's power, the address jumpers (esc.pca9685_address), and "
                               f"`i2cdetect -y {backend.i2c_bus}` for what does answer") from None
            raise EscError(f"PCA9685 at 0x{addr:02x} on I2C bus {backend.i2c_bus}: {e}") from None
        return cls(pca, outputs, bus, osc, prescale, addr)

    @staticmethod
    def _configure(module, bus: SMBusI2C, addr: int, osc: float):
        """The library's PCA9685 object on `bus`, the chip awake at 50 Hz with auto-increment on."""
        pca = module.PCA9685.__new__(module.PCA9685)     # not __init__: its reset() would rewrite MODE1
        from adafruit_bus_device.i2c_device import I2CDevice
        pca.i2c_device = I2CDevice(bus, addr)            # probes the address: ValueError if nobody answers
        pca.channels = module.PCAChannels(pca)
        pca.reference_clock_speed = osc
        want = int(osc / 4096.0 / FRAME_HZ + 0.5) - 1   # the library's own rounding
        mode1 = pca.mode1_reg
        if pca.prescale_reg != want or mode1 & MODE1_SLEEP:
            pca.reset()                                  # MODE1 = 0 (awake), so the setter wakes it after
            pca.frequency = FRAME_HZ                     # sleeps the chip ~5 ms: only when not at 50 Hz
        elif not mode1 & MODE1_AI:
            pca.mode1_reg = mode1 | MODE1_AI             # the 4-byte channel writes need auto-increment
        return pca

    # ------------------------------------------------------------------------------ the port contract
    def _tick_us(self, prescale=None) -> float:
        """One counter tick [us] at `prescale` (default: the one set at open) and this port's oscillator."""
        return ((self.prescale if prescale is None else prescale) + 1) / self.osc_hz * 1e6

    def set_servo_pulsewidth(self, output: int, pulse_us: int) -> None:
        """`pulse_us` (500-2500 us) on board output `output`; 0 turns it fully off. ValueError for a pulse or
        output this port does not drive; OSError on a bus fault or a chip that has reset (then not connected)."""
        self._check(output)
        if pulse_us != 0 and not PULSE_RANGE_US[0] <= pulse_us <= PULSE_RANGE_US[1]:
            raise ValueError(f"pulse {pulse_us} us outside {PULSE_RANGE_US[0]}-{PULSE_RANGE_US[1]} us")
        try:
            with REGISTER_LOCK:
                if self.pca.mode1_reg & MODE1_SLEEP:
                    raise OSError(errno.EIO, f"PCA9685 at 0x{self.address:02x} is asleep with its outputs off "
                                             f"(it reset: power lost on its VCC?); open it again")
                if pulse_us == 0:
                    self.pca.pwm_regs[output] = (0, FULL)
                    self._set.pop(output, None)
                    return
                ticks = int(round(pulse_us / self._tick_us()))
                self.pca.pwm_regs[output] = (0, ticks)
            self._set[output] = (int(pulse_us), ticks)
        except OSError:
            self.connected = False
            raise

    def get_servo_pulsewidth(self, output: int) -> int:
        """The pulse on `output` [us] read from the board; 0 when it is off or the chip sleeps. OSError on a
        bus fault."""
        self._check(output)
        try:
            with REGISTER_LOCK:
                asleep = self.pca.mode1_reg & MODE1_SLEEP
                on, off = self.pca.pwm_regs[output]
                tick_us = self._tick_us(self.pca.prescale_reg)
        except OSError:
            self.connected = False
            raise
        if asleep or off & FULL:
            return 0
        ticks = 4096 if on & FULL else (off - on) % 4096
        last = self._set.get(output)
        if last is not None and last[1] == ticks:
            return last[0]
        return int(round(ticks * tick_us))

    def stop(self) -> None:
        """Close the bus; the board keeps its pulses (see the module docstring). The port is then unusable."""
        self.connected = False
        self._stopped = True
        self.bus.close()

    def _check(self, output: int) -> None:
        if self._stopped:
            raise OSError(errno.EBADF, "PCA9685 port stopped: open a new one")
        if output not in self.outputs:
            raise ValueError(f"output {output} is not one of this port's ({self.outputs})")


def pulse_scale_from_frequency(measured_hz: float, port: "Pca9685Port") -> float:
    """The board's pulse_scale from the frame rate measured on an output (a multimeter's Hz range) while `port`
    drives it: the true oscillator is measured_hz x 4096 x (PRE_SCALE + 1), and pulse_scale = 25 MHz / that
    (whatever pulse_scale the port was opened with)."""
    if not 20.0 <= measured_hz <= 100.0:
        raise ValueError(f"{measured_hz} Hz: the board runs near 50 Hz; measure the frame rate of the output")
    with REGISTER_LOCK:
        prescale = port.pca.prescale_reg
    return NOMINAL_OSC_HZ / (measured_hz * 4096.0 * (prescale + 1))


def pulse_scale_from_width(measured_us: float, port: "Pca9685Port", output: int, current_scale: float) -> float:
    """The board's pulse_scale from the width measured (a scope) of the pulse `port` (opened with
    `current_scale`) last set on `output`: true/intended for the ticks actually sent, times the current scale."""
    pulse, ticks = port._set[output]
    sent_us = ticks * port._tick_us()                    # what the port believes it sent, ticks exact
    if not 0.8 <= measured_us / sent_us <= 1.2:
        raise ValueError(f"{measured_us} us against {sent_us:.1f} us sent: measure the pulse on output {output}")
    return current_scale * measured_us / sent_us
