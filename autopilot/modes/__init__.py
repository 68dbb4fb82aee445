"""Modes, one small module each. A mode turns the estimate into what the controllers should do.

MANUAL (operator throttle/steering), HOLD (neutral), LOITER (station keeping), AUTO (the mission), RTL (home,
then LOITER), VELOCITY (operator speed and turn rate), GUIDED (position and velocity targets from a companion
computer or a ground station); HEADING_HOLD and BRAKE are stages the failsafes use.
"""
from autopilot.modes.base import Mode, ModeOutput

__all__ = ["Mode", "ModeOutput"]
