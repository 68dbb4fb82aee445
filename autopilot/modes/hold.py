"""HOLD: thrusters neutral, the boat drifts. Safe when nothing else can be vouched for."""
from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.vocab.modes import ModeName


class HoldMode(Mode):
    name = ModeName.HOLD

    def update(self, t_s, nav) -> ModeOutput:
        return NEUTRAL
