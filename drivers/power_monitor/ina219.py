"""A TI INA219 high-side monitor through the Adafruit CircuitPython INA219 library (battery.kind: ina219).

The chip sits high-side: IN+ at the pack, IN- at the load, so the pack voltage is bus voltage (IN- to ground)
plus shunt voltage. The current register's resolution is max_current_a / 32768 A per bit, coarser only where the
calibration register would overflow; the PGA is the smallest shunt range (40/80/160/320 mV) that holds
max_current_a x shunt_ohms. A bus voltage outside the chip's 0-26 V rating is a bad read.
"""
from __future__ import annotations

import math
from typing import Any, Tuple

from drivers.i2c_adapter import import_without_blinka

INA219_MAX_BUS_V = 26.0          # the chip's rated bus voltage; a reading above it is a bad read [V]
SHUNT_RANGES_V = (0.040, 0.080, 0.160, 0.320)   # PGA /1, /2, /4, /8 full scale across the shunt [V]
CAL_MAX = 0xFFFE                 # largest calibration register value (bit 0 is not writable)


def ina219_calibration(shunt_ohms: float, max_current_a: float) -> Tuple[int, float, int]:
    """(calibration register, current LSB [A], PGA setting 0-3) for a shunt and the largest current to read.

    The current LSB is max_current_a / 32768, made coarser only when the register would exceed CAL_MAX; the PGA
    is the smallest range that holds max_current_a x shunt_ohms. ValueError when the shunt or current is not a
    positive finite number or their product exceeds the chip's 320 mV shunt range."""
    if not (math.isfinite(shunt_ohms) and shunt_ohms > 0 and math.isfinite(max_current_a) and max_current_a > 0):
        raise ValueError(f"shunt_ohms and max_current_a must be positive numbers, got {shunt_ohms!r}, "
                         f"{max_current_a!r}")
    shunt_v = shunt_ohms * max_current_a
    pga = next((i for i, r in enumerate(SHUNT_RANGES_V) if shunt_v <= r * (1 + 1e-9)), None)
    if pga is None:
        raise ValueError(f"{max_current_a:g} A through {shunt_ohms:g} ohm is {1e3 * shunt_v:.0f} mV across the "
                         f"shunt; the INA219 measures at most 320 mV: use a smaller shunt or a lower max_current_a")
    lsb = max_current_a / 32768.0
    cal = int(0.04096 / (lsb * shunt_ohms))
    if cal > CAL_MAX:
        cal = CAL_MAX
    cal &= ~1
    lsb = 0.04096 / (cal * shunt_ohms)
    return cal, lsb, pga


class Ina219:
    """The INA219 of a `battery:` section (kind, bus, address, shunt_ohms, max_current_a); see drivers/power_monitor/
    chip.py for the interface."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.cal, self.current_lsb_a, self.pga = ina219_calibration(cfg.shunt_ohms, cfg.max_current_a)
        self.hardware_id = f"INA219 i2c-{cfg.bus} 0x{cfg.address:02x}"
        self._ina: Any = None                   # the library's INA219 once set up

    def open(self, i2c) -> None:
        adafruit_ina219 = import_without_blinka("adafruit_ina219")
        ina = adafruit_ina219.INA219(i2c, self.cfg.address)   # writes its default 32 V / 2 A set-up
        ina.bus_voltage_range = adafruit_ina219.BusVoltageRange.RANGE_32V
        ina.gain = self.pga
        ina.bus_adc_resolution = adafruit_ina219.ADCResolution.ADCRES_12BIT_8S
        ina.shunt_adc_resolution = adafruit_ina219.ADCResolution.ADCRES_12BIT_8S
        ina.mode = adafruit_ina219.Mode.SANDBVOLT_CONTINUOUS
        ina.calibration = self.cal
        if ina._raw_calibration != self.cal:
            raise RuntimeError(f"calibration register reads 0x{ina._raw_calibration:04x} after writing "
                               f"0x{self.cal:04x}: not an INA219 at 0x{self.cfg.address:02x}?")
        self._ina = ina

    def read(self) -> Tuple[float, float]:
        ina = self._ina
        ina.calibration = self.cal          # as the library does before each current read: a chip that
        raw_current = ina.raw_current       # browned out and reset reads no current until it is set again
        voltage = ina.bus_voltage + ina.shunt_voltage
        if not 0.0 <= voltage <= INA219_MAX_BUS_V + 0.5:
            raise ValueError(f"pack voltage {voltage:.2f} V read: outside the INA219's 0-26 V")
        return voltage, raw_current * self.current_lsb_a

    def close(self) -> None:
        self._ina = None
