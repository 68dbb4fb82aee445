"""The mode contract."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Tuple

from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint, NavState, VelocitySetpoint, Wrench


@dataclass(frozen=True)
class ModeOutput:
    """What a mode asks for this cycle: at most one field set; all None means: thrusters to neutral."""

    setpoint: Optional[GuidanceSetpoint] = None   # heading and speed for the controllers
    wrench: Optional[Wrench] = None               # a direct force/moment demand (MANUAL), bypassing them
    velocity: Optional[VelocitySetpoint] = None   # surge speed and yaw rate for the velocity controller
    notice: Optional[str] = None                  # a warning for the log, from this cycle
    progress: Optional[str] = None                # an info message for the log (a segment, a leg done)
    install_fit: bool = False                     # CALIBRATE_ON_WATER: its accepted fit is to be installed now

    @property
    def neutral(self) -> bool:
        return self.setpoint is None and self.wrench is None and self.velocity is None


NEUTRAL = ModeOutput()


class Mode:
    """A mode is entered with the current estimate and updated once per cycle.

    `name` is the mode's identity; what it needs to run (a position, the estimate, an operator, whether an operator
    may select it) is declared once on that name (autopilot/vocab/modes.py: `name.needs`).
    During update() a mode may set `notice` (a warning), `progress` (an info message) or `install_pending`;
    `step()` hands each over once, as the fields of the output the vehicle reads.
    """

    name: ModeName
    drift_ne: Tuple[float, float] = (0.0, 0.0)   # drift over ground the estimator learnt [m/s N, E]: set by the vehicle
    notice: Optional[str] = None
    progress: Optional[str] = None
    install_pending: bool = False

    def step(self, t_s: float, nav: NavState) -> ModeOutput:
        """update(), with the messages and requests it made as fields of the output (each handed over once)."""
        out = self.update(t_s, nav)
        if self.notice is None and self.progress is None and not self.install_pending:
            return out
        out = dataclasses.replace(out, notice=self.notice, progress=self.progress, install_fit=self.install_pending)
        self.notice = self.progress = None
        self.install_pending = False
        return out

    def enter(self, t_s: float, nav: NavState) -> None:
        """Called when the mode becomes active (and again when the vehicle is armed in it)."""

    def update(self, t_s: float, nav: NavState) -> ModeOutput:
        return NEUTRAL

    @property
    def finished(self) -> bool:
        """True when the mode has done its job and the vehicle should move on (AUTO at mission end)."""
        return False
