"""The boat process hands the interpreter lock round often enough for its 50 Hz loop (autopilot/runtime/
interpreter_lock.py): 1 ms at 50 Hz, never raised above what the process already had, and a period that is no
period refused with its value named."""
from __future__ import annotations

import sys

import pytest

from autopilot.runtime.interpreter_lock import share_lock_with_loop


@pytest.fixture
def switch_interval():
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_a_50_hz_loop_gets_the_lock_back_within_a_millisecond(switch_interval):
    sys.setswitchinterval(0.005)                      # CPython's default
    assert share_lock_with_loop(0.02) == pytest.approx(0.001, rel=1e-6)
    assert sys.getswitchinterval() == pytest.approx(0.001, rel=1e-6)


def test_it_never_lengthens_an_interval_set_shorter_and_never_goes_below_its_floor(switch_interval):
    sys.setswitchinterval(0.0007)
    assert share_lock_with_loop(0.1) == pytest.approx(0.0007, rel=1e-6)   # 5 ms would be longer: kept
    assert share_lock_with_loop(0.001) == pytest.approx(0.0005, rel=1e-6)  # 1 kHz: the floor, not 50 us


@pytest.mark.parametrize("bad", [0.0, -0.02, float("inf"), float("nan"), "0.02", None])
def test_a_period_that_is_not_one_is_refused_naming_it(switch_interval, bad):
    before = sys.getswitchinterval()
    with pytest.raises(ValueError, match="period_s must be a positive number"):
        share_lock_with_loop(bad)
    assert sys.getswitchinterval() == before
