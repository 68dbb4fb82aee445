"""A GNSS antenna away from the reference point: its velocity is the boat's plus r x lever arm.

On a kayak the antenna often sits on the stern deck, a metre behind the point the model describes. In a turn
at 0.38 rad/s that antenna moves sideways at 0.4 m/s more than the reference point does: compared with the
reference point's velocity, the receiver's course reads as sway the model did not predict. The position was
always taken at the antenna; the velocity now is too.
"""
from __future__ import annotations

import dataclasses

import pytest

from autopilot.config import load_vessel
from autopilot.types import ThrustCommand
from estimation.ekf import NavigationEKF
from hil.environment import EnvironmentConfig
from hil.plant import Plant
from hil.sensor_models import TypedSensorSuite
from tests.test_ekf_plant import FRAME

TURNING = (9.0, 5.0)               # FOKA's two thrusters [N]: about 1 m/s, turning at 0.38 rad/s


def _foka_with_antenna(x_m: float, y_m: float):
    vessel = load_vessel("foka")
    gnss = dataclasses.replace(vessel.sensors.gnss, antenna_x_m=x_m, antenna_y_m=y_m)
    return dataclasses.replace(vessel, sensors=dataclasses.replace(vessel.sensors, gnss=gnss))


def _fly_a_steady_turn(x_m: float, y_m: float, seed: int, seconds: float = 90.0) -> NavigationEKF:
    """FOKA's filter on FOKA's own model in a steady turn, the antenna at (x_m, y_m) body FRD in both the
    simulated receiver and the file the filter reads."""
    vessel = _foka_with_antenna(x_m, y_m)
    plant = Plant(vessel, EnvironmentConfig(), seed, 0.0, 0.0, 0.0, surge_mps=1.0)
    sensors = TypedSensorSuite(vessel, FRAME, seed, gps_noise="white", gps_rate_hz=1.0)
    ekf = NavigationEKF(vessel, FRAME)
    for k in range(1, int(seconds * 50) + 1):
        t = k / 50
        ekf.step(t, sensors.sample(plant.step_to(t, TURNING)), ThrustCommand(TURNING))
    return ekf


@pytest.mark.parametrize("seed", [1, 2])
def test_an_antenna_on_the_stern_does_not_make_a_right_model_look_wrong(seed):
    stern = _fly_a_steady_turn(-1.2, 0.3, seed)
    centre = _fly_a_steady_turn(0.0, 0.0, seed)
    h = stern.health(90.0)
    assert stern.counters["gps_accepted"] >= 85 and h.gps_vel_rejected == 0
    assert h.process_noise_scale < 1.1
    assert stern.consistency.nis["sway"] < 1.2
    assert h.model_consistency < centre.health(90.0).model_consistency + 0.2
