"""The filter's store of recent states (estimation/state_history.py): what a late fix is compared with."""
from __future__ import annotations

import numpy as np
import pytest

from estimation.state_history import StateHistory


def _column(v: float) -> np.ndarray:
    return np.full((3, 1), v)


def test_the_stored_state_nearest_the_time_is_returned_within_the_tolerance():
    h = StateHistory(1.1)
    for k in range(100):
        h.record(k * 0.02, _column(k))
    t, x = h.near(1.5 + 0.004, 0.05)
    assert t == pytest.approx(1.5) and x[0, 0] == 75
    assert h.near(2.5, 0.05) is None                 # later than anything stored
    assert h.near(0.5, 0.05) is None                 # older than the span: forgotten
    assert len(h) <= 1.1 / 0.02 + 2


def test_a_stored_state_is_a_copy_and_clear_forgets_everything():
    h = StateHistory(1.0)
    x = _column(1.0)
    h.record(0.0, x)
    x[0, 0] = 9.0                                    # the filter updates its state in place
    assert h.near(0.0, 0.01)[1][0, 0] == 1.0
    h.clear()
    assert h.near(0.0, 0.01) is None and len(h) == 0


def test_a_span_that_is_not_positive_is_refused():
    with pytest.raises(ValueError, match="span_s"):
        StateHistory(0.0)
