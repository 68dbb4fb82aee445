"""What a failsafe does: one `Action` per outcome, and the mode each switching action puts the vehicle in.

An `Action` is a `str` (its value is the word the vessel file's `failsafe:` section and the event log use), so
an action read from the file compares equal to its member. `Action(text)` raises ValueError for any other word.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from autopilot.vocab.modes import ModeName


class Action(str, Enum):
    NONE = "none"                  # the condition holds, the present mode is left alone (HOLD already, MANUAL)
    REPORT = "report"              # nothing to change, but worth knowing
    RECOVERED = "recovered"        # the condition cleared; the mode is not changed back
    DEAD_RECKON = "dead-reckon"    # GNSS lost or rejected: the mode carries on, on the estimate
    SLOW = "slow"                  # hold the present heading at the slow speed (HEADING_HOLD)
    LOITER = "loiter"              # keep station about the present estimate (LOITER)
    RTL = "rtl"                    # return to the launch point, then LOITER (RTL)
    HOLD = "hold"                  # thrusters neutral (HOLD)
    DISARM = "disarm"              # thrusters neutral and disarmed
    BRAKE_RTL = "brake-rtl"        # stop on the present heading (BRAKE), then RTL
    BRAKE_LOITER = "brake-loiter"  # ... then LOITER
    BRAKE_HOLD = "brake-hold"      # ... then HOLD

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    @property
    def after_brake(self) -> Optional["Action"]:
        """For a BRAKE_* action, what follows the stop; None for the others."""
        return _AFTER_BRAKE.get(self)

    @staticmethod
    def brake_then(action: str) -> "Action":
        """The braking action that stops first, then takes `action` (rtl, loiter or hold)."""
        return Action("brake-" + str(action))


_AFTER_BRAKE = {Action.BRAKE_RTL: Action.RTL, Action.BRAKE_LOITER: Action.LOITER, Action.BRAKE_HOLD: Action.HOLD}

# the actions that put the vehicle in another mode at once (BRAKE_* go to BRAKE first, then `after_brake`)
SWITCH_TO = {Action.HOLD: ModeName.HOLD, Action.SLOW: ModeName.HEADING_HOLD, Action.LOITER: ModeName.LOITER,
             Action.RTL: ModeName.RTL}
