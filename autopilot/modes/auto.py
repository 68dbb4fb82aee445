"""AUTO: fly the mission with its guidance law."""
from __future__ import annotations

from typing import Optional

from autopilot.guidance.path_following import MissionGuidance
from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.vocab.modes import ModeName


class AutoMode(Mode):
    name = ModeName.AUTO

    def __init__(self, guidance: Optional[MissionGuidance]):
        self.guidance = guidance       # None until the vehicle's load_mission gives it the mission's

    def enter(self, t_s, nav) -> None:
        assert self.guidance is not None
        # the first leg starts where the boat is; without a position yet, guidance starts it on the first update
        if nav.valid and (self.guidance.leg is None or self.guidance.complete):
            self.guidance.start(nav.north_m, nav.east_m)

    def update(self, t_s, nav) -> ModeOutput:
        assert self.guidance is not None
        sp = self.guidance.update(t_s, nav)
        return NEUTRAL if sp is None else ModeOutput(setpoint=sp)

    @property
    def finished(self) -> bool:
        assert self.guidance is not None
        return self.guidance.complete
