"""The turn rule (EkfTuning.turn_yaw_rate_rps): while the boat turns, gyro and heading updates leave position,
water current and drag error to GNSS.

A turn is where a wrong vessel file mispredicts most: the gyro keeps disagreeing with the model's yaw rate, one
sign for seconds, and each 50 Hz update moved the position through its covariance with the yaw rate, metres
across the next leg in a FOKA with thrust x2.5 (benchmarks/bench_robustness_breakdown.py --velocity-split). A
hull whose yaw damping is off weaves on its legs, and the same coupling taught the drag error a wrong value;
the threshold (0.05 rad/s) is below the weave. On straight running the update is the full one.
Here the filter is given a thrust with no yaw moment while the boat turns at 0.6 rad/s, so it mispredicts
the turn the same way; the effect of one gyro update is isolated by stepping a copy of the filter without it.
"""
from __future__ import annotations

import math

import pytest

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import ImuSample, SensorBatch, ThrustCommand
from estimation.navekf.ekf import EkfTuning, NavigationEKF
from estimation.navekf.model import IX_CE, IX_CN, IX_E, IX_KD, IX_N, IX_R
from tests.support.kinematic_boat import FRAME, G, KinematicBoat, run

CRUISE = ThrustCommand((7.5, 7.5))       # FOKA's file: 15 N holds 1 m/s; no yaw moment, ever
TURN_FROM_S, TURN_RATE_RPS = 30.0, 0.6


def _moved_by_one_gyro_update(tuning: EkfTuning, t_s: float) -> tuple:
    """Fly to t_s (straight until TURN_FROM_S, then turning), then give a copy one gyro sample reading the true
    rate at the filter's own time (no prediction in between): (state with it - state without, estimated yaw
    rate before it [rad/s])."""
    vessel = load_vessel("foka")
    boat = KinematicBoat(vessel, seed=3, speed_mps=1.0, gyro_bias_rps=0.0,
                         yaw_rate=lambda t: TURN_RATE_RPS if t >= TURN_FROM_S else 0.0)
    ekf = NavigationEKF(vessel, FRAME, tuning=tuning)
    run(boat, ekf, t_s, thrust=CRUISE)
    r_est = ekf.state[IX_R]
    without = ekf.state
    gyro = ImuSample(t_s, (0.0, boat.speed * boat.r, -G), (0.0, 0.0, boat.yaw_rate(t_s)))
    ekf.step(t_s, SensorBatch(imu=[gyro]), CRUISE)
    return ekf.state - without, r_est


@pytest.mark.parametrize("rule", [True, False])
def test_in_a_mispredicted_turn_the_gyro_leaves_position_current_and_drag_to_gnss(rule):
    tuning = EkfTuning() if rule else EkfTuning(turn_yaw_rate_rps=math.inf)
    moved, r_est = _moved_by_one_gyro_update(tuning, TURN_FROM_S + 2.0)
    assert r_est > tuning.turn_yaw_rate_rps or not rule          # the filter knows it is turning
    assert moved[IX_R] > 1e-4                                     # the gyro still corrects the yaw rate
    slow = [abs(moved[i]) for i in (IX_N, IX_E, IX_CN, IX_CE, IX_KD)]
    if rule:
        assert max(slow) == 0.0, slow
    else:           # without the rule the same sample drags the position along (0.6 mm at 50 Hz: 3 cm/s)
        assert math.hypot(moved[IX_N], moved[IX_E]) > 2e-4, slow


def test_on_a_straight_leg_the_gyro_update_is_the_full_kalman_update():
    moved, r_est = _moved_by_one_gyro_update(EkfTuning(), TURN_FROM_S - 5.0)
    assert abs(r_est) < EkfTuning().turn_yaw_rate_rps
    assert math.hypot(moved[IX_N], moved[IX_E]) > 0.0 and moved[IX_R] != 0.0
