"""The MMG catamaran plant (hil/sim/mmg_plant.py, hil/sim/plant_models.py, `autopilot sim --plant-model`): what a
user flying the autopilot on it would notice if its physics or its wiring were wrong."""

import math
from pathlib import Path

import pytest

from autopilot.cli.main import main
from autopilot.vocab.config import load_mission, load_vessel
from autopilot.vocab.schema import ConfigError
from drivers.thrust_map import make_thrust_maps
from hil.sim.environment import EnvironmentConfig
from hil.sim.mmg_params import load_mmg_params, plant_file
from hil.sim.mmg_plant import MmgCatamaranPlant
from hil.sim.plant import PlantModel
from hil.sim.plant_models import build_plant_model
from hil.sim.runner import SimOptions, run_sim

REPO = Path(__file__).resolve().parents[2]
GUESS = REPO / "tests/data/foreign_plant/catamaran_guess.yaml"
PARAMS = load_mmg_params(plant_file("mmg-catamaran"))
CALM = EnvironmentConfig()
FULL, NEUTRAL, REVERSE = 1900, 1500, 1100


def plant(env=CALM, surge_mps=0.0, heading_rad=0.0):
    return MmgCatamaranPlant(PARAMS, make_thrust_maps(load_vessel(str(GUESS))), env, 1, 0.0, 0.0, heading_rad,
                             surge_mps=surge_mps)


def fly(p, seconds, pulses, rate_hz=50.0):
    start, truth = p.time_s, p.truth
    for i in range(1, int(round(seconds * rate_hz)) + 1):
        truth = p.step_pulses(start + i / rate_hz, pulses)
    return truth


def test_it_is_a_plant_the_runner_can_fly():
    assert isinstance(plant(), PlantModel)


@pytest.mark.parametrize("pulse", [1700, FULL])
def test_symmetric_thrust_goes_straight_to_the_speed_where_thrust_meets_resistance(pulse):
    p = plant()
    truth = fly(p, 60.0, [pulse, pulse])
    later = fly(p, 5.0, [pulse, pulse])
    u = later.surge_mps
    assert u == pytest.approx(truth.surge_mps, rel=1e-3)                  # steady
    assert later.sway_mps == 0.0 and later.yaw_rate_rps == 0.0 and later.heading_rad == 0.0
    push = (1.0 - PARAMS.propellers.thrust_deduction) * sum(later.thrust_n)
    assert push == pytest.approx(-p.hull_force(u, 0.0, 0.0)[0], rel=1e-3)
    if pulse == FULL:
        assert 1.8 < u < 2.1                                                # the spec's ~2 m/s top speed


def test_thrust_falls_with_speed_as_a_propeller_does():
    p = plant()
    starting = fly(p, 0.6, [FULL, FULL])
    at_speed = fly(p, 60.0, [FULL, FULL])
    assert starting.surge_mps < 0.5 * at_speed.surge_mps
    assert at_speed.thrust_n[0] < 0.6 * starting.thrust_n[0]


@pytest.mark.parametrize("pulses, sign", [([FULL, 1600], 1.0), ([1600, FULL], -1.0)])
def test_differential_thrust_turns_at_a_steady_rate_with_a_drift_angle(pulses, sign):
    p = plant()
    a = fly(p, 60.0, pulses)
    b = fly(p, 10.0, pulses)
    assert sign * b.yaw_rate_rps > math.radians(3.0)                     # more port thrust: to starboard
    assert b.yaw_rate_rps == pytest.approx(a.yaw_rate_rps, rel=0.01)
    assert b.speed_mps == pytest.approx(a.speed_mps, rel=0.01)
    drift_deg = math.degrees(math.atan2(-b.sway_mps, b.surge_mps))
    assert sign * drift_deg > 0.5                                        # the stern skids out of the turn


def test_sway_at_speed_yaws_the_hull_and_a_turn_pushes_it_sideways():
    """The coupling the vessel files' diagonal model lacks (N_v, Y_r)."""
    p = plant()
    x0, y0, n0 = p.hull_force(1.5, 0.0, 0.0)
    _, y_v, n_v = p.hull_force(1.5, 0.1, 0.0)
    _, y_r, n_r = p.hull_force(1.5, 0.0, 0.1)
    assert y_v < 0.0 and n_v < 0.0                     # sway to starboard: damped, and the bow yaws to port
    assert n_r < 0.0 and y_r > 0.0                     # yaw to starboard: damped, and a sway force to starboard
    assert abs(n_v) > 0.2 * abs(n_r)


def test_it_stops_when_the_thrust_stops():
    p = plant(surge_mps=2.0)
    fly(p, 2.0, [FULL, 1700])
    truth = fly(p, 60.0, [NEUTRAL, NEUTRAL])
    assert truth.speed_mps < 0.05 and abs(truth.yaw_rate_rps) < 1e-3
    assert p.shaft_rps == (0.0, 0.0) and truth.thrust_n == (0.0, 0.0)


def test_at_rest_it_stays_at_rest_without_nan():
    p = plant()
    truth = fly(p, 10.0, [NEUTRAL, NEUTRAL])
    assert (truth.north_m, truth.east_m, truth.surge_mps, truth.sway_mps, truth.yaw_rate_rps) == (0, 0, 0, 0, 0)


def test_full_reverse_and_a_spin_on_the_spot_stay_bounded():
    p = plant(surge_mps=2.0)
    back = fly(p, 120.0, [REVERSE, REVERSE])
    ahead = fly(plant(), 60.0, [FULL, FULL])
    assert all(math.isfinite(x) for x in (back.north_m, back.surge_mps, back.sway_mps, back.yaw_rate_rps))
    assert -ahead.surge_mps < back.surge_mps < -0.3                      # backs up, slower than it goes ahead
    spin = fly(plant(), 60.0, [FULL, REVERSE])
    again = fly(plant(), 70.0, [FULL, REVERSE])
    assert math.radians(10.0) < spin.yaw_rate_rps < math.radians(90.0)
    assert again.yaw_rate_rps == pytest.approx(spin.yaw_rate_rps, rel=0.02)
    assert spin.speed_mps < 0.6


def test_current_carries_the_drifting_boat_and_wind_pushes_it_downwind():
    current = plant(EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90.0))
    truth = fly(current, 120.0, [NEUTRAL, NEUTRAL])
    vn, ve = truth.velocity_ned_mps
    assert vn == pytest.approx(0.0, abs=0.01) and ve == pytest.approx(0.3, abs=0.01)
    windy = plant(EnvironmentConfig(wind_speed_mps=8.0, wind_from_deg=0.0))
    truth = fly(windy, 60.0, [NEUTRAL, NEUTRAL])
    assert truth.north_m < -2.0                                         # blown south, from the north


def test_waves_move_it_and_keep_it_finite():
    p = plant(EnvironmentConfig(wave_hs_m=0.3, wave_tp_s=3.0, wave_from_deg=90.0), surge_mps=1.0)
    truth = fly(p, 60.0, [1700, 1700])
    assert all(math.isfinite(x) for x in (truth.north_m, truth.east_m, truth.heading_rad, truth.yaw_rate_rps))
    assert truth.heading_rad != 0.0 and truth.north_m > 20.0


def test_the_boat_reacts_to_the_pulse_the_vessel_files_thrust_map_made():
    vessel = load_vessel(str(GUESS))
    a, b = plant(), plant()
    full, back = vessel.thrusters[0].max_forward_n, vessel.thrusters[1].max_reverse_n
    ta = [a.step_to(k * 0.02, [full, -back]) for k in range(1, 501)][-1]
    tb = fly(b, 10.0, [FULL, REVERSE])
    assert ta == tb


def test_bad_commands_are_refused_with_the_reason():
    p = plant()
    with pytest.raises(ValueError, match="thrust_n: expected 2"):
        p.step_to(0.1, [1.0])
    with pytest.raises(ValueError, match="finite"):
        p.step_to(0.1, [1.0, math.nan])
    with pytest.raises(ValueError, match="no pods"):
        p.step_to(0.1, [1.0, 1.0], angle_rad=[0.0, 0.0])
    fly(p, 1.0, [NEUTRAL, NEUTRAL])
    with pytest.raises(ValueError, match="before the plant's time"):
        p.step_to(0.5, [0.0, 0.0])


def test_a_wrong_parameter_file_names_the_key(tmp_path):
    text = plant_file("mmg-catamaran").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("  y_v: -0.504", "  y_v: fast"))
    with pytest.raises(ConfigError, match=r"bad.yaml: hull.y_v: must be a finite number"):
        load_mmg_params(bad)
    bad.write_text(text.replace("  diameter_m: 0.10\n", ""))
    with pytest.raises(ConfigError, match=r"propellers.diameter_m: missing"):
        load_mmg_params(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_mmg_params(tmp_path / "none.yaml")


def test_a_vessel_file_that_cannot_drive_it_is_refused():
    with pytest.raises(ValueError, match="2 fixed propellers"):
        build_plant_model("mmg-catamaran", load_vessel("wamv_pods"), CALM, 1, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="use one of mmg-catamaran"):
        build_plant_model("otter", load_vessel("foka"), CALM, 1, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("extra, said", [(["--mismatch", "x_u=0.5"], "--mismatch"),
                                         (["--plant-vessel", "foka"], "--plant-vessel"),
                                         (["--plant-model", "otter"], "use one of mmg-catamaran")])
def test_the_cli_refuses_what_makes_no_sense_with_the_foreign_plant(extra, said, capsys):
    argv = ["sim", str(REPO / "autopilot/presets/missions/demo.yaml"), "--vessel", str(GUESS)]
    if "--plant-model" not in extra:
        argv += ["--plant-model", "mmg-catamaran"]
    assert main(argv + extra) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.slow
def test_the_demo_survey_flown_with_the_guessed_file_completes_on_it():
    vessel = load_vessel(str(GUESS))
    mission = load_mission(REPO / "autopilot/presets/missions/demo.yaml")
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    r = run_sim(vessel, mission, SimOptions(seed=1, env=env, plant_model="mmg-catamaran")).report
    assert r["plant"]["model"] == "mmg-catamaran"
    assert r["mission_complete"] and not r["failsafe_events"]
    assert r["xte_rms_m"] < 2.0


@pytest.mark.slow
def test_the_cli_flies_the_foreign_plant_and_says_so(capsys):
    argv = ["sim", str(REPO / "autopilot/presets/missions/demo.yaml"), "--vessel", str(GUESS), "--plant-model",
            "mmg-catamaran", "--duration", "20", "--devices", "typed"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "plant: mmg-catamaran (hil/sim/plants/mmg_catamaran.yaml), not the vessel file's model" in out
