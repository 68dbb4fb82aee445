"""ESC pulses from a PCA9685 16-channel PWM board on I2C (Adafruit servo HAT/bonnet, Blue Robotics Navigator):
a port for drivers/esc.EscOutput (see esc_backends). `output` is the board channel, 0-15.

Through the Adafruit CircuitPython PCA9685 library on drivers/i2c_adapter.SMBusI2C (as the LSM9DS1), at 50 Hz.
The chip counts 4096 ticks per period of its oscillator, nominally 25 MHz but 3-5 % off on real boards, so a
board's pulses come out long or short by that much. `pulse_scale` (the boat config's esc.pulse_scale) is the
true pulse over the intended one as measured on that board with the nominal clock (a scope, or `autopilot bench
esc --calibrate`); the library is then given the true clock, 25 MHz / pulse_scale, for both the prescaler and
the duty counts, so the pulses are right to one tick (4.9 us at 50 Hz).

A pulse P [us] becomes round(P x f_osc / (PRE_SCALE + 1) / 1e6) ticks with ON at 0; 0 turns the output fully
off. Reading back converts the registers to microseconds, and gives the exact pulse last set while the
registers still hold its ticks (so a guardian can verify its neutral although 1500 us is not a whole number of
ticks). The board keeps its outputs when this process lets go (`stop()` closes the bus only), which is why the
deadman guardian opens a port of its own; opening a port does not touch a prescaler already at 50 Hz, so a
second port does not interrupt the pulses.
"""
from __future__ import annotations

import errno
from typing import Dict, Sequence, Tuple

from drivers.esc import EscError
from drivers.i2c_adapter import (I2CBusError, RegisterBus, SMBusI2C, SocketRegisters, import_without_blinka,
                                 open_smbus)

NOMINAL_OSC_HZ = 25e6
FRAME_HZ = 50.0
MODE1_AI = 0x20


class Pca9685Port:
    def __init__(self, pca, outputs: Sequence[int], bus: SMBusI2C, osc_hz: float):
        self.pca = pca
        self.outputs = list(outputs)
        self.bus = bus
        self.osc_hz = osc_hz
        self.connected = True
        self._set: Dict[int, Tuple[int, int]] = {}       # output -> (pulse us, ticks) last set

    @classmethod
    def open(cls, backend, outputs: Sequence[int]) -> "Pca9685Port":
        """The board at backend.pca9685_address on backend.i2c_bus (or backend.smbus), set to 50 Hz."""
        outputs = list(outputs)
        if any(not 0 <= o <= 15 for o in outputs) or len(set(outputs)) != len(outputs):
            raise EscError(f"PCA9685 outputs {outputs}: each ESC needs its own output, 0-15")
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
            pca = module.PCA9685.__new__(module.PCA9685)     # not __init__: its reset() would rewrite MODE1
            from adafruit_bus_device.i2c_device import I2CDevice
            pca.i2c_device = I2CDevice(bus, addr)            # probes the address: ValueError if nobody answers
            pca.channels = module.PCAChannels(pca)
            pca.reference_clock_speed = osc
            want = int(osc / 4096.0 / FRAME_HZ + 0.5) - 1
            if pca.prescale_reg != want or pca.mode1_reg & 0x10:
                pca.reset()                                  # MODE1 = 0: awake, so the next line wakes it after
                pca.frequency = FRAME_HZ                     # sleeps the chip ~5 ms: only when it is not at 50 Hz
            elif not pca.mode1_reg & MODE1_AI:
                pca.mode1_reg = pca.mode1_reg | MODE1_AI     # the library's 4-byte channel writes need it
        except (ValueError, OSError) as e:
            bus.close()
            if isinstance(e, ValueError) or getattr(e, "errno", None) in (errno.EREMOTEIO, errno.ENXIO, errno.EIO):
                raise EscError(f"no PCA9685 answering at 0x{addr:02x} on I2C bus {backend.i2c_bus}: check the "
                               f"wiring and the board's power, the address jumpers (esc.pca9685_address), and "
                               f"`i2cdetect -y {backend.i2c_bus}` for what does answer") from None
            raise EscError(f"PCA9685 at 0x{addr:02x} on I2C bus {backend.i2c_bus}: {e}") from None
        return cls(pca, outputs, bus, osc)

    # ------------------------------------------------------------------------------ the port contract
    def _tick_us(self) -> float:
        return (self.pca.prescale_reg + 1) / self.osc_hz * 1e6

    def set_servo_pulsewidth(self, output: int, pulse_us: int) -> None:
        """`pulse_us` (500-2500) on board output `output`; 0 turns it fully off. OSError on a bus fault."""
        self._check(output)
        try:
            if pulse_us == 0:
                self.pca.channels[output].duty_cycle = 0
                self._set.pop(output, None)
                return
            if not 500 <= pulse_us <= 2500:
                raise ValueError(f"pulse {pulse_us} us outside 500-2500 us")
            ticks = int(round(pulse_us / self._tick_us()))
            self.pca.pwm_regs[output] = (0, ticks)
            self._set[output] = (int(pulse_us), ticks)
        except OSError:
            self.connected = False
            raise

    def get_servo_pulsewidth(self, output: int) -> int:
        """The pulse on `output` [us] read from the board; 0 when it is off. OSError on a bus fault."""
        self._check(output)
        try:
            on, off = self.pca.pwm_regs[output]
            tick_us = self._tick_us()
        except OSError:
            self.connected = False
            raise
        if off & 0x1000:
            return 0
        ticks = (off - on) % 4096 if not on & 0x1000 else 4096
        last = self._set.get(output)
        if last is not None and last[1] == ticks:
            return last[0]
        return int(round(ticks * tick_us))

    def stop(self) -> None:
        """Close the bus; the board keeps its pulses (see the module docstring)."""
        self.connected = False
        self.bus.close()

    def _check(self, output: int) -> None:
        if output not in self.outputs:
            raise ValueError(f"output {output} is not one of this port's ({self.outputs})")


def pulse_scale_from_frequency(measured_hz: float, port: "Pca9685Port") -> float:
    """The board's pulse_scale from the frame rate measured on an output (a multimeter's Hz range) while `port`
    drives it: the true oscillator is measured_hz x 4096 x (PRE_SCALE + 1), and pulse_scale = 25 MHz / that
    (whatever pulse_scale the port was opened with)."""
    if not 20.0 <= measured_hz <= 100.0:
        raise ValueError(f"{measured_hz} Hz: the board runs near 50 Hz; measure the frame rate of the output")
    return NOMINAL_OSC_HZ / (measured_hz * 4096.0 * (port.pca.prescale_reg + 1))


def pulse_scale_from_width(measured_us: float, port: "Pca9685Port", output: int, current_scale: float) -> float:
    """The board's pulse_scale from the width measured (a scope) of the pulse `port` (opened with
    `current_scale`) last set on `output`: true/intended for the ticks actually sent, times the current scale."""
    pulse, ticks = port._set[output]
    sent_us = ticks * port._tick_us()                    # what the port believes it sent, ticks exact
    if not 0.8 <= measured_us / sent_us <= 1.2:
        raise ValueError(f"{measured_us} us against {sent_us:.1f} us sent: measure the pulse on output {output}")
    return current_scale * measured_us / sent_us
