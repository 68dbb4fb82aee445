"""VELOCITY in the simulator, closed through the real drivers and the EKF, on a hull unlike its vessel file,
in wind and waves: a speed and turn-rate operator gets the speed and the turn rate asked for."""
from __future__ import annotations

import math

import numpy as np
import pytest

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant_spec import PlantSpec
from hil.sim.runner import SimOptions, run_sim

SEA = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, wave_hs_m=0.15, wave_tp_s=3.0, wave_from_deg=90.0)


def _fly(vessel_name, mismatch, commands, duration_s, seed=1, env=SEA):
    """commands(t) -> (surge_mps, yaw_rate_dps) or None (no command); returns truth samples (t, u, r_dps)."""
    vessel = load_vessel(vessel_name)
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")     # its start point and frame only
    seen = []

    def operator(t, ap, truth):
        if ap.armed and ap.mode.name == "VELOCITY":
            cmd = commands(t)
            if cmd is not None:
                ap.velocity_command(t, cmd[0], math.radians(cmd[1]))
        if truth is not None:
            seen.append((t, truth.surge_mps, math.degrees(truth.yaw_rate_rps), ap.mode.name, ap.armed))

    spec = PlantSpec.resolve(vessel, seed, mismatch=mismatch)
    res = run_sim(vessel, mission, SimOptions(seed=seed, env=env, duration_s=duration_s, initial_mode="VELOCITY",
                                              on_cycle=operator, plant_spec=spec, devices="typed"))
    return res, seen


@pytest.mark.parametrize("vessel_name,mismatch,u_mps,r_dps", [
    ("foka", {"damping": 0.6, "iz": 1.4, "thrust": 0.85}, 0.8, 8.0),
    ("wamv", {"added_mass": 1.8, "n_r": 1.5}, 1.5, 10.0),
])
def test_velocity_mode_holds_speed_and_turn_rate_on_a_foreign_hull(vessel_name, mismatch, u_mps, r_dps):
    res, seen = _fly(vessel_name, mismatch, lambda t: (u_mps, 0.0 if t < 40.0 else r_dps), 70.0)
    arr = np.array([(t, u, r) for t, u, r, mode, armed in seen if armed and mode == "VELOCITY"])
    assert len(arr) > 0, "never armed in VELOCITY"
    t, u, r = arr.T
    straight = (t > 30.0) & (t < 40.0)
    turning = t > 60.0
    assert abs(np.mean(u[straight]) - u_mps) < 0.1 * u_mps       # the estimate feeds back: 10 % of the speed
    assert abs(np.mean(r[straight])) < 1.0
    assert abs(np.mean(r[turning]) - r_dps) < 0.1 * r_dps
    assert abs(np.mean(u[turning]) - u_mps) < 0.15 * u_mps


def test_velocity_mode_goes_neutral_when_the_operator_stops_and_the_boat_slows():
    res, seen = _fly("foka", {"damping": 0.6}, lambda t: (0.8, 0.0) if t < 30.0 else None, 45.0,
                     env=EnvironmentConfig())
    after = [u for t, u, r, mode, armed in seen if t > 44.0]
    during = [u for t, u, r, mode, armed in seen if 25.0 < t < 30.0]
    assert np.mean(during) > 0.6 and np.mean(after) < 0.5 * np.mean(during)


@pytest.mark.slow
def test_heading_cascade_around_the_yaw_rate_loop_flies_the_survey_like_the_pid_on_a_foreign_hull():
    """control.heading.structure cascade (a heading P loop asking the velocity controller for a turn rate) is a
    working alternative to the heading PID: on FOKA's survey (its first 150 s: three legs, two turns), on a plant
    drawn within x/÷1.5 of the file, the cross-track error is within 10 % of the PID's (measured on the whole
    survey: 1.696 vs 1.695 m)."""
    import dataclasses
    vessel = load_vessel("foka")
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    xte = {}
    for structure in ("pid", "cascade"):
        h = dataclasses.replace(vessel.control.heading, structure=structure)
        v = dataclasses.replace(vessel, control=dataclasses.replace(vessel.control, heading=h))
        rep = run_sim(v, mission, SimOptions(seed=1, devices="typed", duration_s=150.0,
                                             plant_spec=PlantSpec.resolve(v, 1, mismatch={"random": 0.5}))).report
        assert rep["waypoints_reached"] >= 3 and not rep["failsafe_events"], (structure, rep["waypoints_reached"])
        xte[structure] = rep["xte_rms_m"]
    assert xte["cascade"] < 1.1 * xte["pid"], xte
