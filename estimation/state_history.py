"""The navigation filter's recent states, so that a measurement stamped in the past is compared with the boat as
the filter had it then.

An L76K at 9600 baud hands its fix over 0.74-0.76 s after the first sentence that stamps it
(drivers/l76k_epoch.py). Carrying the state of now back by that much to first order is right for a position
(the ground velocity barely changes in 0.76 s), but not for a velocity while the boat speeds up or slows down:
FOKA gains 0.4 m/s in 0.76 s when it sets off, and the receiver's speed read against the state of now looked like
a hull slower to respond than its file, which the model-error states then learned.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

import numpy as np


class StateHistory:
    """(time [s], state column) pairs in time order, kept for `span_s` behind the newest.

    `record(t_s, x)` stores a copy of x; `near(t_s, tolerance_s)` returns the stored (time, state) nearest t_s,
    or None when none lies within tolerance_s (too old, or the history was cleared since)."""

    def __init__(self, span_s: float):
        if not span_s > 0.0:
            raise ValueError(f"span_s must be positive, got {span_s}")
        self.span_s = float(span_s)
        self._items: deque = deque()

    def record(self, t_s: float, x: np.ndarray) -> None:
        items = self._items
        items.append((t_s, x.copy()))
        while items[0][0] < t_s - self.span_s:
            items.popleft()

    def near(self, t_s: float, tolerance_s: float) -> Optional[tuple[float, np.ndarray]]:
        best = None
        for item in reversed(self._items):           # newest first: late fixes are recent
            if best is None or abs(item[0] - t_s) < abs(best[0] - t_s):
                best = item
            elif item[0] < t_s:
                break                                # times only fall from here
        return best if best is not None and abs(best[0] - t_s) <= tolerance_s else None

    def clear(self) -> None:
        """Forget every stored state (the filter's state was replaced, not evolved)."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
