"""The surge-drag error's prior follows the vessel file's validation (estimation.ekf.initial_drag_error_std):
a file never checked against data has its drag learned from the first fixes, a validated one is believed."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from autopilot.config import load_mission, load_vessel
from estimation.ekf import EkfTuning, NavigationEKF, initial_drag_error_std
from estimation.ekf_model import IX_KD
from hil.environment import EnvironmentConfig
from hil.plant_spec import PlantSpec
from hil.sim_runner import SimOptions, run_sim
from tests.test_ekf_plant import FRAME

# an L-shaped survey: 40 m east, 15 m north, 40 m back west (two 90 degree turns)
L_MISSION = """name: l-survey
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start: {point: {north_m: 0.0, east_m: -5.0}, heading_deg: 90}
waypoints:
  - {north_m: 0.0, east_m: 0.0}
  - {north_m: 0.0, east_m: 40.0}
  - {north_m: 15.0, east_m: 40.0}
  - {north_m: 15.0, east_m: 0.0}
guidance: {law: ilos, lookahead_m: 3.0, sigma: 0.3}
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
on_complete: loiter
loiter_radius_m: 2.0
"""


def test_an_unvalidated_file_starts_with_a_wide_drag_prior_and_a_validated_one_with_a_narrow_one():
    foka = load_vessel("foka")
    assert not foka.validated_against
    tn = EkfTuning()
    assert initial_drag_error_std(foka, tn) == tn.unvalidated_drag_error_std == 0.5
    validated = dataclasses.replace(foka, validated_against="logs/2026-05-01 zig-zag")
    assert initial_drag_error_std(validated, tn) == tn.init_drag_error_std == 0.01
    for vessel, std in ((foka, 0.5), (validated, 0.01)):
        ekf = NavigationEKF(vessel, FRAME)
        assert math.isclose(math.sqrt(ekf.kf.P[IX_KD, IX_KD]), std)


def _fly(tmp_path, validated_against: str):
    """FOKA's autopilot on a FOKA hull with 2.5x its file's linear surge drag, the L survey, 1 Hz white GNSS."""
    vessel = dataclasses.replace(load_vessel("foka"), validated_against=validated_against)
    path = tmp_path / "l.yaml"
    path.write_text(L_MISSION)
    spec = PlantSpec.resolve(vessel, 1, mismatch={"x_u": 2.5})
    drag = []

    def on_result(t, autopilot, batch, res, truth):
        drag.append(autopilot.estimator.kf.x[IX_KD, 0])
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0)
    res = run_sim(vessel, load_mission(path), SimOptions(seed=1, env=env, gps_noise="white", devices="typed",
                                                         plant_spec=spec, on_result=on_result))
    return res.report, np.array(drag)


def test_a_hull_dragging_more_than_its_unvalidated_file_is_learned_on_the_first_leg_and_tracked_closer(tmp_path):
    r, kd = _fly(tmp_path, "")
    believed, kd_believed = _fly(tmp_path, "a trial that did not catch it")
    assert r["mission_complete"] and not r["failsafe_events"]
    # true drag at 0.8 m/s is (2.5*5*0.8 + 10*0.64) / (5*0.8 + 10*0.64) = 1.58 x the file's: k_d ~ 0.58
    assert kd[len(kd) // 3] > 0.3                    # learned within the first leg (50 Hz samples)
    assert abs(kd_believed[len(kd) // 3]) < 0.1      # the believed file has not started learning yet
    assert r["pos_err_rms_m"] < believed["pos_err_rms_m"]
    assert r["xte_rms_m"] < believed["xte_rms_m"]
