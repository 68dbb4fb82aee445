"""The contracts between the vehicle core and what surrounds it, as the backends implement them.

A backend (hw, sim, gazebo) is a SensorSource and a ThrusterOutput in one object (`Backend`); the vehicle reads
only `ThrusterOutput` of it, the runner drives the rest. The estimator is a NavigationFilter. Everything is
called with the runner's time [s]; nothing may block for long (a control cycle is 20 ms) and nothing raises on
a hardware fault: a fault shows as `connected` False, or as samples that stop coming.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Protocol, Sequence

from autopilot.vocab.types import NavState, SensorBatch, ThrustCommand

if TYPE_CHECKING:
    import numpy as np

    from estimation.navekf.health import EstimatorHealth


class SensorSource(Protocol):
    def poll(self, t_s: float) -> SensorBatch:
        """Every sample that arrived since the previous poll, each with its own time stamp (<= t_s)."""
        ...


class ThrusterOutput(Protocol):
    """What the vehicle reads of the thruster output: the pre-arm checks and the ESC-disconnect failsafe."""

    @property
    def connected(self) -> bool:
        """False when the output cannot be vouched for (pigpiod gone, ESC signal lost, no Gazebo subscriber)."""
        ...

    def ready(self, t_s: float) -> bool:
        """True once the ESCs have held neutral for their arming time (outputs that arm nothing: always)."""
        ...

    # Optional: `outages: int`, how many times the output stopped being vouched for since start, counted when
    # it happens. The failsafe treats any increase as a disconnect, so an outage that ended before the next
    # failsafe check (a reconnect within 0.1 s) still disarms. Outputs without it: only `connected` is read.


class Backend(SensorSource, ThrusterOutput, Protocol):
    """The runner's side of a backend. `consumes` is "pulses" (ESCs) or "thrust" (Gazebo, newtons)."""

    consumes: str
    hardware_ids: Dict[str, str]            # component ("gnss", "imu", "esc") -> what it is, for diagnostics
    last_input_wall_s: Optional[float]      # perf_counter() when the newest polled sample arrived; None: unknown

    def write(self, t_s: float, thrust_n: Sequence[float], pulses_us: Sequence[float],
              angle_rad: Optional[Sequence[float]] = None) -> None:
        """The cycle's output: thrust per thruster [N] and pulse per ESC [us] (vessel order; each backend uses
        the one its actuators take), and the pods' angles [rad] where it steers pods."""
        ...

    def neutral(self) -> None:
        """Every output to neutral now (shutdown, failsafe, exception)."""
        ...

    def close(self) -> None:
        """Neutral, then release the devices; idempotent."""
        ...


class NavigationFilter(Protocol):
    def step(self, t_s: float, batch: SensorBatch, thrust: Optional[ThrustCommand]) -> NavState:
        """Process the batch's samples in time order, predict to t_s and return the estimate at t_s.

        `thrust` is the thrust commanded on the previous cycle (per thruster, newtons), used by the model-based
        prediction; None when the thrusters are not driven.
        """
        ...

    def health(self, t_s: float) -> EstimatorHealth:
        """What the filter says about itself at t_s: an estimation.navekf.health.EstimatorHealth."""
        ...

    @property
    def state(self) -> np.ndarray:
        """The filter's own state vector (estimation.navekf.model's order), before the output's smoothing."""
        ...
