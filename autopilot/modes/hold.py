"""HOLD: thrusters neutral, the boat drifts. Safe when nothing else can be vouched for."""
from autopilot.modes.base import NEUTRAL, Mode, ModeOutput


class HoldMode(Mode):
    name = "HOLD"
    navigating = False

    def update(self, t_s, nav) -> ModeOutput:
        return NEUTRAL
