"""A steady turn flown with GNSS fixes that arrive late, for the EKF's late-fix tests."""
from __future__ import annotations

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import ThrustCommand
from estimation.navekf.ekf import NavigationEKF
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.sensor_models import TypedSensorSuite
from tests.support.plant_flight import FRAME

TURNING = (9.0, 5.0)               # FOKA's two thrusters [N]: about 1 m/s, turning at 0.38 rad/s


def fly_a_steady_turn(late_s: float, seed: int, seconds: float = 90.0, vessel=None) -> NavigationEKF:
    """FOKA's filter on FOKA's own model (the file is right; `vessel` replaces FOKA's file in both) in a
    steady turn, each fix handed to the filter late_s after its epoch, with its own time stamp."""
    vessel = vessel or load_vessel("foka")
    plant = Plant(vessel, EnvironmentConfig(), seed, 0.0, 0.0, 0.0, surge_mps=1.0)
    sensors = TypedSensorSuite(vessel, FRAME, seed, gps_noise="white", gps_rate_hz=1.0)
    ekf = NavigationEKF(vessel, FRAME)
    pending = []
    for k in range(1, int(seconds * 50) + 1):
        t = k / 50
        batch = sensors.sample(plant.step_to(t, TURNING))
        pending += batch.gps
        batch.gps = [f for f in pending if f.time_s <= t - late_s + 1e-9]
        pending = pending[len(batch.gps):]
        ekf.step(t, batch, ThrustCommand(TURNING))
    return ekf
