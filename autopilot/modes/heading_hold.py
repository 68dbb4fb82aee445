"""HEADING_HOLD and BRAKE: keep the heading the boat had on entry at a fixed speed over ground.

The GNSS failsafe uses HEADING_HOLD (slow, straight, predictable) once dead reckoning has run its time; the
geofence failsafe uses BRAKE (speed 0: the speed controller ramps down and holds still), which is `finished`
once the boat has stopped, so the vehicle can carry on with the failsafe's next action.
"""
from __future__ import annotations

from autopilot.modes.base import Mode, ModeOutput
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint

STOPPED_MPS = 0.1        # below this ground speed the boat counts as stopped
BRAKE_MAX_S = 20.0       # and after this long anyway (a current may keep it from ever reading zero)


class HeadingHoldMode(Mode):
    """HEADING_HOLD (`speed_mps` > 0) or BRAKE (0): the failsafe stages no operator selects."""

    def __init__(self, name: ModeName, speed_mps: float):
        self.name = ModeName.parse(name)
        self.speed_mps = speed_mps
        self.heading_rad = 0.0
        self._t_enter = 0.0
        self._stopped = False

    def enter(self, t_s, nav) -> None:
        self.heading_rad = nav.heading_rad
        self._t_enter = t_s
        self._stopped = False

    def update(self, t_s, nav) -> ModeOutput:
        if self.speed_mps == 0.0 and t_s - self._t_enter > 1.0:
            self._stopped = nav.speed_mps < STOPPED_MPS or t_s - self._t_enter > BRAKE_MAX_S
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=self.heading_rad, speed_mps=self.speed_mps))

    @property
    def finished(self) -> bool:
        return self._stopped
