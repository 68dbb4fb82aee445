"""How often the interpreter lock changes hands, for a process whose control loop shares it with its rims.

A thread that wants the lock waits until the holder has run for the switch interval (5 ms by default) and may
then lose the race to another waiting thread, so with the MAVLink links, the ROS executor, the web page and a
mission being prepared all busy, the loop thread can wake whole periods late while its own cycle is short.
A switch interval of a small fraction of the loop period bounds each wait to that fraction.
"""
from __future__ import annotations

import sys

SHARE_OF_PERIOD = 0.05       # the switch interval as a share of the control period
MIN_SWITCH_S = 0.0005        # never below this: each switch costs the running thread a little


def share_lock_with_loop(period_s: float) -> float:
    """Set the interpreter's switch interval to SHARE_OF_PERIOD of `period_s` [s] (1 ms at 50 Hz), never above
    the current interval nor below MIN_SWITCH_S; return the interval now in force [s]. ValueError for a period
    that is not a positive finite number. Affects the whole process; call once, before the loop starts."""
    if not (isinstance(period_s, (int, float)) and 0.0 < period_s < float("inf")):
        raise ValueError(f"period_s must be a positive number of seconds, got {period_s!r}")
    interval = min(sys.getswitchinterval(), max(MIN_SWITCH_S, SHARE_OF_PERIOD * period_s))
    sys.setswitchinterval(interval)
    return sys.getswitchinterval()
