"""Telling a sensor that answers from one that measures: frozen, all-zero, saturated and implausible output.

A chip can keep acknowledging its bus address while its output is useless: every data register reads zero
(a brown-out, a reset into power-down), the registers stop updating (a stuck state machine), or it sits at full
scale. The bus is fine, so the I2C error handling never sees it. `OutputWatch.check(t_s, values)` looks at the
raw values of one read and returns the reason it cannot be trusted, or None:

- all zero: every value exactly 0.0 (an accelerometer always feels gravity; a magnetometer the earth's field);
- frozen: bit-identical to the previous read for `frozen_reads` reads in a row and at least `frozen_min_s`
  (a real MEMS sensor's noise changes its last bits every sample, at rest on a dock too; the time floor keeps a
  loop that reads faster than the chip's output rate from seeing its repeats as frozen);
- saturated: some value at `full_scale` or beyond for `frozen_reads` reads in a row;
- implausible magnitude (accelerometer only, `magnitude_range`): the moving mean (~`magnitude_window` reads) of
  the first three values' norm outside the range (|a| far from 1 g: not a boat afloat).
A verdict holds until the output is alive again. Pure: values and time in, a reason out.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple


class OutputWatch:
    """Plausibility of one device's raw output, read after read. See the module docstring."""

    def __init__(self, frozen_reads: int = 5, frozen_min_s: float = 0.04, full_scale: Optional[Sequence] = None,
                 magnitude_range: Optional[Tuple[float, float]] = None, magnitude_window: int = 50):
        self.frozen_reads = int(frozen_reads)
        self.frozen_min_s = float(frozen_min_s)
        self.full_scale = tuple(full_scale) if full_scale is not None else None
        self.magnitude_range = magnitude_range
        self._k = 1.0 / magnitude_window
        self._last: Optional[tuple] = None
        self._same = 0
        self._same_since: Optional[float] = None
        self._saturated = 0
        self._magnitude: Optional[float] = None
        self.reason: Optional[str] = None

    def check(self, t_s: float, values: Sequence[float]) -> Optional[str]:
        """The reason this read cannot be trusted, or None."""
        values = tuple(values)
        if values == self._last:
            self._same += 1
        else:
            self._same, self._same_since = 1, t_s
        self._last = values
        assert self._same_since is not None                 # set by the first read (a tuple never equals None)
        reason = None
        if all(v == 0.0 for v in values):
            reason = "all-zero output"
        elif self._same >= self.frozen_reads and t_s - self._same_since >= self.frozen_min_s:
            reason = f"output frozen (the same value {self._same} reads in a row)"
        if self.full_scale is not None:
            at_limit = any(abs(v) >= fs for v, fs in zip(values, self.full_scale))
            self._saturated = self._saturated + 1 if at_limit else 0
            if reason is None and self._saturated >= self.frozen_reads:
                reason = f"output at full scale for {self._saturated} reads"
        if self.magnitude_range is not None and reason is None:
            norm = math.sqrt(sum(v * v for v in values[:3]))
            self._magnitude = norm if self._magnitude is None else self._magnitude + self._k * (norm - self._magnitude)
            lo, hi = self.magnitude_range
            if not lo <= self._magnitude <= hi:
                reason = f"implausible magnitude {self._magnitude:.2f} (expected {lo:g}..{hi:g})"
        self.reason = reason
        return reason
