"""The pack's power monitor: one contract over the chips small boats use, one module per chip beside this one.

Kinds (the boat config's `battery.kind`, autopilot/files/boat.py PowerMonitorConfig):

  ina219   a TI INA219 through the Adafruit CircuitPython INA219 library (ina219.py);
  ina226   a TI INA226, the commonest chip on boat power modules, register by register over adafruit_bus_device
           (ina226.py: no maintained library for it is on PyPI); its ids are checked at open;
  ads1115  an analog power-sense module (a divider on the pack, a current-sense amplifier) read by an ADS1115
           ADC through the Adafruit CircuitPython ADS1x15 library (ads1115.py).

chip.py says what a chip module provides. Configuration common to all: bus, address, the largest current to
measure [A], poll rate [Hz] and the time after which a silent monitor's last reading is no longer given [s];
the INA chips take a shunt resistance [ohm], the ADS1115 its two inputs, divider ratio, A/V, offset and gain.

Contract of `PowerMonitor.poll(t_s)`: the newest reading (PowerReading: voltage [V], current [A], positive when
discharging, consumed charge [mAh] since start) while it is at most `stale_timeout_s` old, else None. It reads
the chip at most `poll_rate_hz` times a second. It never raises: a bus error (OSError), a chip that reads
nonsense (outside its rating), a device that is not the configured chip (WrongChipError) or a library failure
leaves the last reading to age, counts an error, logs one warning when the monitor falls silent and one when it
answers again, and the chip is set up anew (after `reopen_s`) in case it lost its configuration.
`health(t_s)` says the same as (level "OK"/"ERROR", message, figures). The consumed charge integrates the
current by trapezoids between successful readings, across a silence too (the best guess of what was drawn
meanwhile).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from drivers.i2c_adapter import SMBusI2C
from drivers.power_monitor.ads1115 import Ads1115PowerModule, ads1115_check
from drivers.power_monitor.chip import Chip, WrongChipError
from drivers.power_monitor.ina219 import Ina219, ina219_calibration
from drivers.power_monitor.ina226 import Ina226, ina226_calibration

__all__ = ["CHIPS", "PowerMonitor", "PowerReading", "WrongChipError", "ads1115_check", "ina219_calibration",
           "ina226_calibration"]

log = logging.getLogger(__name__)

CHIPS: Dict[str, Callable[[Any], Chip]] = {"ina219": Ina219, "ina226": Ina226, "ads1115": Ads1115PowerModule}


@dataclass(frozen=True)
class PowerReading:
    """One reading of the pack: time stamp [s, the monitor's clock], voltage [V], current [A] (positive:
    discharging), charge drawn since the monitor started [mAh]."""

    t_s: float
    voltage_v: float
    current_a: float
    consumed_mah: float


class PowerMonitor:
    """The chip `cfg.kind` names on `i2c` (a busio.I2C-like bus; None: /dev/i2c-<cfg.bus> through SMBusI2C), see
    the module docstring. `cfg` is a PowerMonitorConfig (kind, bus, address, poll_rate_hz, stale_timeout_s,
    reopen_s and the chip's own keys); `clock` is the time base of poll()'s t_s when a reading's time is needed
    outside poll [s]. ValueError at construction for a kind or set-up no chip module accepts."""

    def __init__(self, cfg, *, i2c=None, clock: Callable[[], float] = time.monotonic):
        make = CHIPS.get(cfg.kind)
        if make is None:
            raise ValueError(f"battery.kind: {cfg.kind!r} is not a power monitor this driver knows "
                             f"({', '.join(CHIPS)})")
        self.cfg = cfg
        self.chip = make(cfg)
        self._i2c = i2c
        self._own_bus = i2c is None
        self._clock = clock
        self._open = False
        self.last: Optional[PowerReading] = None
        self.consumed_mah = 0.0
        self.errors = 0
        self.reads = 0
        self.last_error = ""
        self._next_read = -math.inf
        self._next_open = -math.inf
        self._silent_reported = False
        self.hardware_id = self.chip.hardware_id

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
            if not self._open:
                if t_s < self._next_open:
                    return
                self._next_open = t_s + self.cfg.reopen_s
                if self._i2c is None:
                    self._i2c = SMBusI2C(self.cfg.bus)
                self.chip.open(self._i2c)
                self._open = True
            voltage, current = self.chip.read()
        except Exception as e:                  # OSError from the bus, ValueError/RuntimeError from a bad chip
            self._failed(t_s, e)
            return
        if self.last is not None and t_s > self.last.t_s:
            self.consumed_mah += 0.5 * (current + self.last.current_a) * (t_s - self.last.t_s) / 3.6
        self.last = PowerReading(t_s, voltage, current, self.consumed_mah)
        self.reads += 1
        if self._silent_reported:
            self._silent_reported = False
            log.warning("power monitor %s answers again: %.2f V, %.2f A", self.hardware_id, voltage, current)

    def _failed(self, t_s: float, e: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(e).__name__}: {e}"
        self._open = False                      # set the chip up again: it may have lost its configuration
        self.chip.close()
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
        self._open = False
        self.chip.close()
        if self._own_bus and self._i2c is not None:
            self._i2c.close()
            self._i2c = None
