"""The boundaries between the autopilot core and what surrounds it.

A backend (hw, sim, gazebo) is a SensorSource plus an ActuatorSink. The estimator is a NavigationFilter.
The core calls these with the runner's time; none of them may block for long (a control cycle is 20 ms).
"""
from __future__ import annotations

from typing import Optional, Protocol

from autopilot.vocab.types import NavState, PulseCommand, SensorBatch, ThrustCommand


class SensorSource(Protocol):
    def poll(self, t_s: float) -> SensorBatch:
        """Every sample that arrived since the previous poll, each with its own time stamp (<= t_s)."""


class ActuatorSink(Protocol):
    def write(self, t_s: float, pulses: PulseCommand) -> None:
        """Send one pulse width per thruster (vessel config order). Never raises on a hardware fault."""

    def neutral(self) -> None:
        """Put every output to its neutral pulse now (shutdown, failsafe, exception)."""

    @property
    def connected(self) -> bool:
        """False when the output cannot be vouched for (pigpiod gone, ESC disconnected)."""


class NavigationFilter(Protocol):
    def step(self, t_s: float, batch: SensorBatch, thrust: Optional[ThrustCommand]) -> NavState:
        """Process the batch's samples in time order, predict to t_s and return the estimate at t_s.

        `thrust` is the thrust commanded on the previous cycle (per thruster, newtons), used by the model-based
        prediction; None when the thrusters are not driven.
        """
