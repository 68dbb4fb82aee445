"""The mode contract."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from autopilot.vocab.types import GuidanceSetpoint, NavState, VelocitySetpoint, Wrench


@dataclass(frozen=True)
class ModeOutput:
    """What a mode asks for this cycle: at most one field set; all None means: thrusters to neutral."""

    setpoint: Optional[GuidanceSetpoint] = None   # heading and speed for the controllers
    wrench: Optional[Wrench] = None               # a direct force/moment demand (MANUAL), bypassing them
    velocity: Optional[VelocitySetpoint] = None   # surge speed and yaw rate for the velocity controller

    @property
    def neutral(self) -> bool:
        return self.setpoint is None and self.wrench is None and self.velocity is None


NEUTRAL = ModeOutput()


class Mode:
    """A mode is entered with the current estimate and updated once per cycle.

    `navigating` modes need a valid position estimate; the vehicle refuses or leaves them without one.
    `operator_selectable` is False for the stages a failsafe uses (BRAKE, HEADING_HOLD).
    A mode may set `notice` to a message during update(); the vehicle logs it once as a warning and clears it.
    """

    name = "BASE"
    navigating = True
    operator_selectable = True
    notice: Optional[str] = None

    def enter(self, t_s: float, nav: NavState) -> None:
        """Called when the mode becomes active (and again when the vehicle is armed in it)."""

    def update(self, t_s: float, nav: NavState) -> ModeOutput:
        return NEUTRAL

    @property
    def finished(self) -> bool:
        """True when the mode has done its job and the vehicle should move on (AUTO at mission end)."""
        return False
