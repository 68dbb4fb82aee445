"""The navigation filter on a boat that is not its vessel file: drift-vs-glitch gating, model-error evidence
and learning, and the health it reports. The plant here is scaled away from the file the filter uses."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import ThrustCommand
from estimation.navekf.ekf import EkfTuning, NavigationEKF
from estimation.navekf.model import IX_CE, IX_CN
from estimation.navekf.model_consistency import DriftGate, InnovationMonitor
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.plant_spec import PlantSpec
from hil.sim.sensor_models import TypedSensorSuite
from tests.support.plant_flight import FRAME, SQUARE, _thrust, jumped_fix

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

CURRENT_MPS, CURRENT_TOWARD_DEG = 0.1, 30.0   # the water current every run here flies in
VAR = 1.7 ** 2          # a 2 m CEP receiver's variance per axis [m^2]
S = 3.0                 # a converged filter's innovation variance per axis [m^2]


def test_a_gradual_run_of_failing_fixes_is_model_drift():
    gate = DriftGate()
    verdicts = []
    for k in range(12):                     # the prediction walks away 0.8 m per fix
        y = 0.8 * k
        verdicts.append(gate.classify(float(k), y, 0.0, S, S, VAR, gated=y * y / S > 13.8))
    failing = [v for v in verdicts if v != "ok"]
    # the first failure alone could be a noise outlier: rejected; the run that follows is drift
    assert failing[0] == "outlier" and len(failing) >= 3 and set(failing[1:]) == {"drift"}


def test_a_lone_noise_outlier_is_rejected_and_forgotten():
    gate = DriftGate()
    for k in range(5):
        gate.classify(float(k), 0.3, 0.2, S, S, VAR, gated=False)
    assert gate.classify(5.0, 6.6, 0.0, S, S, VAR, gated=True) == "outlier"
    assert gate.classify(6.0, 0.4, 0.1, S, S, VAR, gated=False) == "ok"
    assert gate.classify(7.0, 6.8, 0.0, S, S, VAR, gated=True) == "outlier"


def test_a_single_20_m_jump_is_a_glitch_and_the_next_good_fix_clears_it():
    gate = DriftGate()
    for k in range(5):
        assert gate.classify(float(k), 0.5, -0.3, S, S, VAR, gated=False) == "ok"
    assert gate.classify(5.0, 20.0, 0.0, S, S, VAR, gated=True) == "glitch"
    assert gate.classify(6.0, 0.4, 0.1, S, S, VAR, gated=False) == "ok"


def test_a_lasting_offset_that_began_with_a_jump_stays_a_glitch():
    gate = DriftGate()
    gate.classify(0.0, 0.0, 0.0, S, S, VAR, gated=False)
    verdicts = [gate.classify(float(k), 20.0 + 0.1 * k, 0.0, S, S, VAR, gated=True) for k in range(1, 8)]
    assert set(verdicts) == {"glitch"}


def test_after_an_outage_there_is_nothing_to_compare_with():
    gate = DriftGate(max_gap_s=3.5)
    gate.classify(0.0, 0.0, 0.0, S, S, VAR, gated=False)
    assert gate.classify(30.0, 8.0, 0.0, S, S, VAR, gated=True) == "glitch"


def test_one_signed_innovations_start_learning_and_centred_ones_do_not():
    rng = np.random.default_rng(1)
    calm = InnovationMonitor()
    for _ in range(300):
        calm.add_velocity(*rng.normal(0.0, 1.0, 2))
        calm.add_position_surge(rng.normal(0.0, 1.0))
    assert calm.learning_starts == 0 and calm.process_noise_scale < 2.0 and 0.6 < calm.consistency < 1.6
    biased = InnovationMonitor()
    for _ in range(60):
        biased.add_velocity(rng.normal(-1.0, 1.0), rng.normal(0.0, 1.0))
        biased.add_position_surge(rng.normal(-1.0, 1.0))
    assert biased.learning_starts >= 1 and biased.worst_axis == "surge"


def _fly_mismatched(mismatch, tuning=None, seconds=120.0, jump_at=None, seed=1):
    """The filter with FOKA's file; the plant FOKA scaled by `mismatch`; a truth-fed controller flies a
    square at 0.8 m/s (this measures estimation, not control)."""
    vessel = load_vessel("foka")
    spec = PlantSpec.resolve(vessel, seed, mismatch=mismatch)
    water = EnvironmentConfig(current_speed_mps=CURRENT_MPS, current_toward_deg=CURRENT_TOWARD_DEG)
    plant = Plant(spec.vessel, water, seed, 0.0, 0.0, 0.0, surge_mps=0.8, extras=spec.extras,
                  thrust_scale=spec.thrust_scale())
    sensors = TypedSensorSuite(vessel, FRAME, seed, gps_noise="white", gps_rate_hz=1.0)
    ekf = NavigationEKF(vessel, FRAME, tuning=tuning)
    ends = np.cumsum([d for _, d in SQUARE])
    thrust = (0.0,) * len(vessel.thrusters)
    errs, gps_errs, moved_at_jump = [], [], None
    prev = None
    for k in range(1, int(seconds * 50) + 1):
        t = k / 50
        truth = plant.step_to(t, thrust)
        batch = sensors.sample(truth)
        jumped = False
        if batch.gps:
            gps_errs.extend(sensors.gps_truth_errors_m)
            if jump_at is not None and t >= jump_at:
                batch.gps[0] = jumped_fix(batch.gps[0], 20.0)
                jump_at, jumped = None, True
        nav = ekf.step(t, batch, ThrustCommand(thrust))
        if jumped and prev is not None:
            # how far the estimate moved beyond the boat's own motion over the cycle of the bad fix
            moved_at_jump = math.hypot(nav.north_m - prev[0] - (truth.north_m - prev[2]),
                                       nav.east_m - prev[1] - (truth.east_m - prev[3]))
        prev = (nav.north_m, nav.east_m, truth.north_m, truth.east_m)
        if t > 20.0:
            errs.append(math.hypot(nav.north_m - truth.north_m, nav.east_m - truth.east_m))
        leg = min(int(np.searchsorted(ends, t % ends[-1], side="right")), len(SQUARE) - 1)
        thrust = _thrust(spec.vessel, truth, math.radians(SQUARE[leg][0]), 0.8)
    return ekf, float(np.sqrt(np.mean(np.square(errs)))), float(np.sqrt(np.mean(np.square(gps_errs)))), moved_at_jump


def test_a_hull_with_far_more_drag_than_its_file_is_tracked_without_a_reacquisition():
    ekf, est_rms, gps_rms, _ = _fly_mismatched({"x_u": 2.5, "x_uu": 2.5, "iz": 0.43})
    h = ekf.health(120.0)
    assert h.gps_reacquisitions == 0                  # what the glitch failsafe reacts to
    assert est_rms < 0.6 * gps_rms
    assert h.surge_drag_error > 0.3                   # it learned the hull drags more than the file says


def test_without_the_mechanisms_the_same_hull_loses_gnss():
    """The regression this work fixes: the plain model-aided filter on that hull."""
    plain = EkfTuning(adaptive_noise=False, drift_gate=False, model_error_evidence_z=1e9, init_drag_error_std=0.01,
                      turn_yaw_rate_rps=math.inf)
    ekf, est_rms, gps_rms, _ = _fly_mismatched({"x_u": 2.5, "x_uu": 2.5, "iz": 0.43}, tuning=plain)
    h = ekf.health(120.0)
    assert h.gps_rejected > 5 or est_rms > gps_rms


def test_a_single_20_m_jump_moves_the_estimate_by_less_than_half_a_metre_on_a_mismatched_hull():
    ekf, _, _, moved = _fly_mismatched({"x_u": 2.5, "x_uu": 2.5}, seconds=90.0, jump_at=70.0)
    h = ekf.health(90.0)
    assert moved is not None and moved < 0.5
    assert h.gps_rejected >= 1 and h.gps_reacquisitions == 0


def test_a_matched_model_keeps_its_file_and_stays_consistent():
    ekf, est_rms, gps_rms, _ = _fly_mismatched({})
    h = ekf.health(120.0)
    assert abs(h.surge_drag_error) < 0.1 and h.model_drift_accepts == 0
    assert est_rms < 0.4 * gps_rms and h.model_consistency < 2.0


def test_health_names_the_model_fields():
    ekf = NavigationEKF(load_vessel("foka"), FRAME)
    h = dataclasses.asdict(ekf.health(0.0))
    for key in ("model_consistency", "model_worst_axis", "process_noise_scale", "surge_drag_error",
                "yaw_model_error_rps2", "model_drift_accepts", "gps_vel_rejected"):
        assert key in h


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_weak_thrust_is_learned_as_drag_not_taken_by_the_water_current(seed):
    """Thrust x0.4: on the first leg a drag error and a current look alike, and the turns tell them apart. A
    filter that held the file's drag until the innovations objected put the whole error into the current."""
    ekf, est_rms, _, _ = _fly_mismatched({"thrust": 0.4}, seed=seed)
    x = ekf.state
    toward = math.radians(CURRENT_TOWARD_DEG)
    true_n, true_e = CURRENT_MPS * math.cos(toward), CURRENT_MPS * math.sin(toward)
    assert math.hypot(x[IX_CN] - true_n, x[IX_CE] - true_e) < 0.1       # m/s
    assert ekf.health(120.0).surge_drag_error > 0.5
    held = EkfTuning(init_drag_error_std=0.01, model_error_evidence_z=2.5, turn_yaw_rate_rps=0.2)
    _, est_rms_held, _, _ = _fly_mismatched({"thrust": 0.4}, tuning=held, seed=seed)
    assert est_rms < est_rms_held
