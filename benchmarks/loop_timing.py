"""What the loop benchmarks measure of a running BoatRuntime: each cycle's cost and start-to-start interval.

`CycleRecorder(runtime)` is an observer (append it to `runtime.observers`): every cycle adds a row
(phase, cost [s], interval [s] or None for the first, start [s, perf_counter]); set `phase` to tag what follows.
`pct_ms(values_s, q)` is the q-th percentile in milliseconds (NaN for no values).
"""
from __future__ import annotations

import numpy as np


class CycleRecorder:
    def __init__(self, runtime):
        self.runtime = runtime
        self.phase = "none"
        self.rows: list = []
        self._last = None

    def cycle_done(self, t_s, batch, result) -> None:
        st = self.runtime.stats
        start = st.last_cycle_wall_s
        interval = None if self._last is None else start - self._last
        self._last = start
        self.rows.append((self.phase, st.cost_s[-1], interval, start))


def pct_ms(values_s, q) -> float:
    return float(np.percentile(np.asarray(values_s), q)) * 1e3 if len(values_s) else float("nan")
