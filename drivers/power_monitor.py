"""The pack's power monitor: a TI INA219 on I2C through the Adafruit CircuitPython INA219 library.

Why the INA219: the INA226 is the more common chip on small boats, but no Adafruit (or other maintained
CircuitPython) library for it is on PyPI, and the INA228 library checks for the INA228's device id; the INA219
library drives the many INA219 breakouts and boards. The chip sits high-side: IN+ at the pack, IN- at the load,
so the pack voltage is bus voltage (IN- to ground) plus shunt voltage.

Configuration (the boat config's `battery:` section, autopilot/files/boat.py PowerMonitorConfig): bus, address,
shunt resistance [ohm], the largest current to measure [A] (it sets the shunt range and the current register's
resolution: max_current_a / 32768 A per bit, coarser only where the calibration register would overflow),
poll rate [Hz] and the time after which a silent monitor's last reading is no longer given [s].

Contract of `PowerMonitor.poll(t_s)`: the newest reading (PowerReading: voltage [V], current [A], positive when
discharging, consumed charge [mAh] since start) while it is at most `stale_timeout_s` old, else None. It reads
the chip at most `poll_rate_hz` times a second. It never raises: a bus error (OSError), a chip that reads
nonsense (a bus voltage outside 0-26 V, the INA219's rating) or a library failure leaves the last reading to
age, counts an error, logs one warning when the monitor falls silent and one when it answers again, and the
chip is set up anew (after `reopen_s`) in case it lost its configuration. `health(t_s)` says the same as
(level "OK"/"ERROR", message, figures). The consumed charge integrates the current by trapezoids between
successful readings, across a silence too (the best guess of what was drawn meanwhile).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from drivers.i2c_adapter import SMBusI2C, import_without_blinka

log = logging.getLogger(__name__)

INA219_MAX_BUS_V = 26.0          # the chip's rated bus voltage; a reading above it is a bad read [V]
SHUNT_RANGES_V = (0.040, 0.080, 0.160, 0.320)   # PGA /1, /2, /4, /8 full scale across the shunt [V]
CAL_MAX = 0xFFFE                 # largest calibration register value (bit 0 is not writable)


@dataclass(frozen=True)
class PowerReading:
    """One reading of the pack: time stamp [s, the monitor's clock], voltage [V], current [A] (positive:
    discharging), charge drawn since the monitor started [mAh]."""

    t_s: float
    voltage_v: float
    current_a: float
    consumed_mah: float


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


class PowerMonitor:
    """An INA219 on `i2c` (a busio.I2C-like bus; None: /dev/i2c-<cfg.bus> through SMBusI2C), see the module
    docstring. `cfg` has kind, bus, address, shunt_ohms, max_current_a, poll_rate_hz, stale_timeout_s, reopen_s;
    `clock` is the time base of poll()'s t_s when a reading's time is needed outside poll [s]."""

    def __init__(self, cfg, *, i2c=None, clock: Callable[[], float] = time.monotonic):
        if cfg.kind != "ina219":
            raise ValueError(f"battery.kind: {cfg.kind!r} is not a power monitor this driver knows (ina219)")
        self.cfg = cfg
        self.cal, self.current_lsb_a, self.pga = ina219_calibration(cfg.shunt_ohms, cfg.max_current_a)
        self._i2c = i2c
        self._own_bus = i2c is None
        self._clock = clock
        self._ina: Any = None                   # the library's INA219 once set up
        self.last: Optional[PowerReading] = None
        self.consumed_mah = 0.0
        self.errors = 0
        self.reads = 0
        self.last_error = ""
        self._next_read = -math.inf
        self._next_open = -math.inf
        self._silent_reported = False
        self.hardware_id = f"INA219 i2c-{cfg.bus} 0x{cfg.address:02x}"

    # ------------------------------------------------------------------------------ reading
    def poll(self, t_s: float) -> Optional[PowerReading]:
        """The newest reading while at most stale_timeout_s old at t_s [s], else None; reads the chip when its
        poll period is up. Never raises (see the module docstring)."""
        if t_s >= self._next_read - 1e-6:
            period = 1.0 / self.cfg.poll_rate_hz      # on a fixed schedule: a loop's jitter does not slow it
            self._next_read = self._next_read + period if t_s - self._next_read < period else t_s + period
            self._read(t_s)
        return self.fresh(t_s)

    def fresh(self, t_s: float) -> Optional[PowerReading]:
        """The newest reading if it is at most stale_timeout_s old at t_s, else None (no bus traffic)."""
        if self.last is None or t_s - self.last.t_s > self.cfg.stale_timeout_s:
            return None
        return self.last

    def _read(self, t_s: float) -> None:
        try:
            if self._ina is None:
                if t_s < self._next_open:
                    return
                self._next_open = t_s + self.cfg.reopen_s
                self._ina = self._open()
            ina = self._ina
            ina.calibration = self.cal          # as the library does before each current read: a chip that
            raw_current = ina.raw_current       # browned out and reset reads no current until it is set again
            voltage = ina.bus_voltage + ina.shunt_voltage
            if not 0.0 <= voltage <= INA219_MAX_BUS_V + 0.5:
                raise ValueError(f"pack voltage {voltage:.2f} V read: outside the INA219's 0-26 V")
        except Exception as e:                  # OSError from the bus, ValueError/RuntimeError from a bad chip
            self._failed(t_s, e)
            return
        current = raw_current * self.current_lsb_a
        if self.last is not None and t_s > self.last.t_s:
            self.consumed_mah += 0.5 * (current + self.last.current_a) * (t_s - self.last.t_s) / 3.6
        self.last = PowerReading(t_s, voltage, current, self.consumed_mah)
        self.reads += 1
        if self._silent_reported:
            self._silent_reported = False
            log.warning("power monitor %s answers again: %.2f V, %.2f A", self.hardware_id, voltage, current)

    def _open(self):
        adafruit_ina219 = import_without_blinka("adafruit_ina219")
        if self._i2c is None:
            self._i2c = SMBusI2C(self.cfg.bus)
        ina = adafruit_ina219.INA219(self._i2c, self.cfg.address)   # writes its default 32 V / 2 A set-up
        ina.bus_voltage_range = adafruit_ina219.BusVoltageRange.RANGE_32V
        ina.gain = self.pga
        ina.bus_adc_resolution = adafruit_ina219.ADCResolution.ADCRES_12BIT_8S
        ina.shunt_adc_resolution = adafruit_ina219.ADCResolution.ADCRES_12BIT_8S
        ina.mode = adafruit_ina219.Mode.SANDBVOLT_CONTINUOUS
        ina.calibration = self.cal
        if ina._raw_calibration != self.cal:
            raise RuntimeError(f"calibration register reads 0x{ina._raw_calibration:04x} after writing "
                               f"0x{self.cal:04x}: not an INA219 at 0x{self.cfg.address:02x}?")
        return ina

    def _failed(self, t_s: float, e: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(e).__name__}: {e}"
        self._ina = None                        # set the chip up again: it may have lost its configuration
        if not self._silent_reported:
            self._silent_reported = True
            log.warning("power monitor %s failed (%s); retrying every %g s", self.hardware_id, self.last_error,
                        self.cfg.reopen_s)

    # ------------------------------------------------------------------------------ reporting
    def health(self, t_s: float) -> Tuple[str, str, dict]:
        """(level "OK" or "ERROR", one-line message, figures) at t_s: ERROR while no reading is fresh."""
        r = self.fresh(t_s)
        vals = {"reads": self.reads, "errors": self.errors, "consumed_mah": self.consumed_mah}
        if r is not None:
            vals.update(voltage_v=r.voltage_v, current_a=r.current_a, age_s=t_s - r.t_s)
            return "OK", f"{r.voltage_v:.2f} V, {r.current_a:.2f} A, {r.consumed_mah:.0f} mAh used", vals
        why = f" ({self.last_error})" if self.last_error else ""
        if self.last is None:
            return "ERROR", f"no power monitor reading yet{why}", vals
        return "ERROR", f"power monitor silent for {t_s - self.last.t_s:.1f} s{why}", vals

    def close(self) -> None:
        self._ina = None
        if self._own_bus and self._i2c is not None:
            self._i2c.close()
            self._i2c = None
