"""The EKF on the built-in plant and typed sensor models (thrust known, model-based prediction).

A truth-fed heading/speed controller steers (this measures estimation, not control). Shorter versions of the
benchmark scenarios in benchmarks/bench_ekf.py, with margins for seed-to-seed spread.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import ThrustCommand
from estimation.navekf.ekf import NavigationEKF
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.sensor_models import TypedSensorSuite
from tests.support.plant_flight import FRAME, SQUARE, _thrust, jumped_fix

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def fly(vessel_name, speed, legs, gps_rate_hz, env=None, seed=1, outage=None, jump_at=None, noise="white"):
    vessel = load_vessel(vessel_name)
    plant = Plant(vessel, env or EnvironmentConfig(), seed, 0.0, 0.0, math.radians(legs[0][0]), surge_mps=speed)
    sensors = TypedSensorSuite(vessel, FRAME, seed, gps_noise=noise, gps_rate_hz=gps_rate_hz)
    ekf = NavigationEKF(vessel, FRAME)
    ends = np.cumsum([d for _, d in legs])
    thrust = (0.0,) * len(vessel.thrusters)
    rows, gps_err = [], []
    k = 0
    while k / 50 < ends[-1]:
        k += 1
        t = k / 50
        truth = plant.step_to(t, thrust)
        batch = sensors.sample(truth)
        if outage and outage[0] <= t < outage[1]:
            batch.gps = []
        elif batch.gps:
            gps_err.extend(sensors.gps_truth_errors_m)
            if jump_at is not None and t >= jump_at:
                batch.gps[0] = jumped_fix(batch.gps[0], 20.0)
                jump_at = None
        nav = ekf.step(t, batch, ThrustCommand(thrust))
        leg = min(int(np.searchsorted(ends, t, side="right")), len(legs) - 1)
        thrust = _thrust(vessel, truth, math.radians(legs[leg][0]), speed)
        rows.append((t, nav.north_m - truth.north_m, nav.east_m - truth.east_m, nav.north_m, nav.east_m,
                     truth.north_m, truth.east_m, nav.valid))
    return np.array(rows), np.array(gps_err), ekf


CURRENT = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=0.0)


def test_10_hz_straight_line_beats_raw_gnss_many_times():
    rows, gps, _ = fly("wamv", 1.5, [(8, 120)], 10.0)
    ratio = gps.mean() / np.hypot(rows[:, 1], rows[:, 2]).mean()
    assert ratio >= 7.0, ratio


@pytest.mark.parametrize("seed", [1, 3])
def test_1_hz_turns_in_current_beat_raw_gnss(seed):
    rows, gps, ekf = fly("foka", 0.8, SQUARE * 2, 1.0, env=CURRENT, seed=seed)
    ratio = gps.mean() / np.hypot(rows[:, 1], rows[:, 2]).mean()
    assert ratio >= 3.5, ratio
    h = ekf.health(rows[-1, 0])
    assert math.hypot(h.current_north_mps - 0.2, h.current_east_mps) < 0.08, "current estimated"


def test_realistic_noise_never_worse_than_raw_and_smooth():
    rows, gps, _ = fly("foka", 0.8, SQUARE * 2, 1.0, env=CURRENT, noise="realistic")
    assert np.sqrt(np.mean(rows[:, 1] ** 2 + rows[:, 2] ** 2)) < np.sqrt(np.mean(gps ** 2))
    valid = rows[rows[:, 7] > 0]
    assert len(valid) > len(rows) - 60, "valid within the first second"
    est_steps = np.hypot(*np.diff(valid[:, 3:5], axis=0).T)
    assert est_steps.max() < 0.3


def test_30_s_outage_at_cruise_and_return():
    rows, _, _ = fly("foka", 0.8, SQUARE * 2, 1.0, env=CURRENT, outage=(100.0, 130.0))
    end = rows[np.searchsorted(rows[:, 0], 130.0) - 1]
    assert math.hypot(end[1], end[2]) <= 3.0
    after = rows[(rows[:, 0] >= 129.9) & (rows[:, 0] < 150.0)]
    rel_steps = np.hypot(*np.diff(after[:, 1:3], axis=0).T)      # steps beyond the boat's own motion
    assert rel_steps.max() < 0.5


def test_single_20_m_jump_barely_moves_the_estimate():
    rows, _, ekf = fly("foka", 0.8, SQUARE, 1.0, env=CURRENT, jump_at=60.0)
    around = rows[(rows[:, 0] >= 59.0) & (rows[:, 0] < 62.0)]
    rel_steps = np.hypot(*np.diff(around[:, 1:3], axis=0).T)
    assert rel_steps.sum() < 0.5
    assert ekf.health(rows[-1, 0]).gps_rejected >= 1
