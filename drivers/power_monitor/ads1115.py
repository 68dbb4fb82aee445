"""An analog power-sense module read by a TI ADS1115 ADC (battery.kind: ads1115), through the Adafruit
CircuitPython ADS1x15 library.

The module (the "3DR-style" power module and its many copies, or a divider and a current-sense amplifier of
one's own) gives two voltages: the pack through a divider (pack = input x voltage_ratio; 11 on many modules,
10.1 on 3DR's) and a current-sense output (current = (input - amps_offset_v) x amps_per_volt). The ADS1115 reads
each single-ended (AINx to ground) in single-shot mode at 860 samples/s, two conversions of about 1.2 ms per
poll, at the programmable gain `gain` (2/3, 1, 2, 4, 8, 16: +-6.144, 4.096, 2.048, 1.024, 0.512, 0.256 V full
scale; no input may exceed the ADC's supply, whatever the gain).

The ADS1115 has no id register: open() reads the configuration register back after the library writes it and
refuses (WrongChipError) a device that does not hold it. A conversion that never completes (the library would
wait for it forever) fails the read after CONVERSION_TIMEOUT_S; an input at the ADC's full scale is a bad read
(the true value is beyond it: a lower gain or a larger divider is needed).
"""
from __future__ import annotations

import time
from typing import Any, Tuple

from drivers.i2c_adapter import import_without_blinka
from drivers.power_monitor.chip import WrongChipError, register_read

CONFIG = 0x01
GAINS = (2 / 3, 1.0, 2.0, 4.0, 8.0, 16.0)
FULL_SCALE_V = {2 / 3: 6.144, 1.0: 4.096, 2.0: 2.048, 4.0: 1.024, 8.0: 0.512, 16.0: 0.256}
DATA_RATE = 860                  # samples/s: the fastest, a conversion takes 1.2 ms
CONVERSION_TIMEOUT_S = 0.05      # a conversion not done by then is a fault, not a hung control loop
ADDRESSES = (0x48, 0x49, 0x4A, 0x4B)   # ADDR to GND, VDD, SDA, SCL


def ads1115_gain(gain: float) -> float:
    """The library's gain key for a configured gain (0.667 stands for 2/3); ValueError for another value."""
    for g in GAINS:
        if abs(gain - g) <= 1e-3:
            return g
    raise ValueError(f"{gain:g} is not an ADS1115 gain (2/3 as 0.667, 1, 2, 4, 8 or 16)")


def ads1115_check(cfg) -> None:
    """ValueError naming the key for a `battery:` section an ADS1115 power module cannot read."""
    if cfg.address not in ADDRESSES:
        raise ValueError(f"address: an ADS1115 is at 0x48-0x4B (its ADDR pin), not 0x{cfg.address:02x}")
    if cfg.current_channel == cfg.voltage_channel:
        raise ValueError(f"current_channel: AIN{cfg.current_channel} is already voltage_channel; the module's "
                         f"voltage and current outputs go to two inputs")
    try:
        gain = ads1115_gain(cfg.gain)
    except ValueError as e:
        raise ValueError(f"gain: {e}") from None
    full = FULL_SCALE_V[gain]
    if cfg.amps_offset_v >= full:
        raise ValueError(f"amps_offset_v: {cfg.amps_offset_v:g} V is beyond the {full:g} V full scale of gain "
                         f"{cfg.gain:g}")
    at_max = cfg.amps_offset_v + cfg.max_current_a / cfg.amps_per_volt
    if at_max >= full:
        raise ValueError(f"max_current_a: {cfg.max_current_a:g} A is {at_max:.3f} V at the current input, beyond "
                         f"the {full:g} V full scale of gain {cfg.gain:g}: use a lower gain")


def _bounded(library_class: Any) -> Any:
    """A subclass of the library's ADS1115 whose wait for a single-shot conversion (a busy loop on the OS bit
    there) gives up after CONVERSION_TIMEOUT_S with TimeoutError."""

    def _read(self, pin: int) -> int:
        self.deadline = time.monotonic() + CONVERSION_TIMEOUT_S
        return library_class._read(self, pin)

    def _conversion_complete(self) -> int:
        done = library_class._conversion_complete(self)
        if not done and time.monotonic() > self.deadline:
            raise TimeoutError(f"no ADS1115 conversion within {1e3 * CONVERSION_TIMEOUT_S:.0f} ms")
        return done

    return type("BoundedADS1115", (library_class,),
                {"deadline": 0.0, "_read": _read, "_conversion_complete": _conversion_complete})


class Ads1115PowerModule:
    """The ADS1115 and module of a `battery:` section (kind, bus, address, voltage_channel, current_channel,
    voltage_ratio, amps_per_volt, amps_offset_v, gain); see drivers/power_monitor/chip.py for the interface."""

    def __init__(self, cfg):
        ads1115_check(cfg)
        self.cfg = cfg
        self.gain = ads1115_gain(cfg.gain)
        self.full_scale_v = FULL_SCALE_V[self.gain]
        self.hardware_id = f"ADS1115 i2c-{cfg.bus} 0x{cfg.address:02x}"
        self._ads: Any = None
        self._voltage_in: Any = None
        self._current_in: Any = None

    def open(self, i2c) -> None:
        ads1115 = import_without_blinka("adafruit_ads1x15.ads1115")
        analog_in = import_without_blinka("adafruit_ads1x15.analog_in")
        ads1x15 = import_without_blinka("adafruit_ads1x15.ads1x15")
        ads = _bounded(ads1115.ADS1115)(i2c, gain=self.gain, data_rate=DATA_RATE, mode=ads1x15.Mode.SINGLE,
                                        address=self.cfg.address)
        # what the library wrote: gain, single-shot, the rate, comparator off (queue 0b11)
        expect = ads1x15._ADS1X15_CONFIG_GAIN[self.gain] | ads1x15.Mode.SINGLE | \
            ads.rate_config[DATA_RATE] | 0x0003
        held = register_read(ads.i2c_device, CONFIG)
        if held & 0x0FFF != expect:
            raise WrongChipError(f"the device at 0x{self.cfg.address:02x} holds 0x{held:04x} in register 1 after "
                                 f"0x{expect:04x} was written: not an ADS1115; check battery.kind and "
                                 f"battery.address")
        self._voltage_in = analog_in.AnalogIn(ads, self.cfg.voltage_channel)
        self._current_in = analog_in.AnalogIn(ads, self.cfg.current_channel)
        self._ads = ads

    def _input_v(self, pin: Any, what: str) -> float:
        raw = pin.value
        if raw >= 32767 or raw <= -32768:
            raise ValueError(f"the {what} input AIN{pin._pin_setting} is at the ADC's full scale "
                             f"(+-{self.full_scale_v:g} V at gain {self.cfg.gain:g})")
        return pin.convert_to_voltage(raw)

    def read(self) -> Tuple[float, float]:
        voltage = self._input_v(self._voltage_in, "voltage") * self.cfg.voltage_ratio
        current = (self._input_v(self._current_in, "current") - self.cfg.amps_offset_v) * self.cfg.amps_per_volt
        if voltage < -0.5:
            raise ValueError(f"pack voltage {voltage:.2f} V read: below ground")
        return max(0.0, voltage), current

    def close(self) -> None:
        self._ads = self._voltage_in = self._current_in = None
