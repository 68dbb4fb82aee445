"""A board's true motion for the emulated LSM9DS1: attitude, rates and acceleration the tests set."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Motion:
    """Plant-truth fields (hil.sim.plant.Truth) plus optional roll/pitch, as the emulator accepts."""
    heading_rad: float = 0.0
    surge_mps: float = 0.0
    sway_mps: float = 0.0
    yaw_rate_rps: float = 0.0
    surge_accel_mps2: float = 0.0
    sway_accel_mps2: float = 0.0
    roll_rad: float = 0.0
    pitch_rad: float = 0.0
    roll_rate_rps: float = 0.0
    pitch_rate_rps: float = 0.0
    time_s: float = 0.0
    north_m: float = 0.0
    east_m: float = 0.0
