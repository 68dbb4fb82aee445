"""What the control loop measures about itself and its sensors: cycle cost, latency and rate (wall clock), and when
each sensor last delivered (core time). Read by diagnostics, the ROS rim and the benchmarks."""
from __future__ import annotations

import math
from collections import deque
from typing import Optional

import numpy as np


class CycleStats:
    """Cost and latency of recent cycles (wall clock), for diagnostics and benchmarks."""

    def __init__(self, period_s: float, window: int = 500):
        self.period_s = period_s
        self.cost_s: deque = deque(maxlen=window)
        self.latency_s: deque = deque(maxlen=window)
        self.cycles = 0
        self.overruns = 0
        self.last_cycle_wall_s: Optional[float] = None
        self.interval_s: deque = deque(maxlen=window)

    def add(self, start_wall_s: float, end_wall_s: float, input_wall_s: Optional[float]) -> None:
        cost = end_wall_s - start_wall_s
        self.cycles += 1
        self.cost_s.append(cost)
        if cost > self.period_s:
            self.overruns += 1
        if input_wall_s is not None:
            self.latency_s.append(end_wall_s - input_wall_s)
        if self.last_cycle_wall_s is not None:
            self.interval_s.append(start_wall_s - self.last_cycle_wall_s)
        self.last_cycle_wall_s = start_wall_s

    @staticmethod
    def _pct(values, q) -> float:
        return float(np.percentile(np.fromiter(values, float), q)) if values else math.nan

    def summary(self) -> dict:
        return {"cycles": self.cycles, "overruns": self.overruns,
                "cost_p50_ms": 1e3 * self._pct(self.cost_s, 50), "cost_p99_ms": 1e3 * self._pct(self.cost_s, 99),
                "cost_max_ms": 1e3 * max(self.cost_s) if self.cost_s else math.nan,
                "latency_p50_ms": 1e3 * self._pct(self.latency_s, 50),
                "latency_p99_ms": 1e3 * self._pct(self.latency_s, 99),
                "rate_hz": 1.0 / float(np.mean(self.interval_s)) if self.interval_s else math.nan}


class SensorWatch:
    """When each sensor last delivered (core time), how many samples, and the latest GNSS epoch."""

    def __init__(self):
        self.last_s = {"gnss": None, "gnss_valid": None, "imu": None, "mag": None}
        self.counts = {"gnss": 0, "imu": 0, "mag": 0}
        self.stale = {"imu": 0, "mag": 0}
        self.last_fix = None

    def add(self, batch) -> None:
        for key, samples in (("gnss", batch.gps), ("imu", batch.imu), ("mag", batch.mag)):
            if samples:
                self.counts[key] += len(samples)
                self.last_s[key] = samples[-1].time_s
        for s in batch.imu:
            self.stale["imu"] += int(getattr(s, "stale", False))
        for s in batch.mag:
            self.stale["mag"] += int(getattr(s, "stale", False))
        if batch.gps:
            self.last_fix = batch.gps[-1]
            valid = [f for f in batch.gps if f.valid]
            if valid:
                self.last_s["gnss_valid"] = valid[-1].time_s
