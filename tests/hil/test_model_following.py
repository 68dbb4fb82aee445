"""Model following (hil/sim/model_following.py, paper 001): the plant hull made to behave like the autopilot's model."""
from __future__ import annotations

import json

import pytest

from autopilot.cli.main import main
from autopilot.control.allocation import Allocator
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_maps
from hil.sim.environment import EnvironmentConfig
from hil.sim.excitation import excitation
from hil.sim.model_following import ModelFollowingPlant, reduction_pct
from hil.sim.plant import Plant
from hil.sim.plant_spec import PlantExtras, PlantSpec

FOKA, WAMV = load_vessel("foka"), load_vessel("wamv")


def _fly_excitation(plant, seconds):
    """Drive `plant` (a ModelFollowingPlant) with the first `seconds` of FOKA's identification inputs."""
    t_in, x_in, n_in = excitation(FOKA, seed=1)
    alloc = Allocator(FOKA, make_thrust_maps(FOKA))
    for k in range(int(seconds / (t_in[1] - t_in[0]))):
        plant.step_to(t_in[k] + 0.02, alloc.allocate(Wrench(x_in[k], n_in[k])).thrust_n)
    return plant.figures()


def test_a_plant_equal_to_the_reference_follows_it_exactly():
    # reference == plant model: inverse dynamics cancel everything, the error stays at integration round-off
    fig = _fly_excitation(ModelFollowingPlant(Plant(FOKA, EnvironmentConfig(), 1, 0, 0, 0), FOKA), 90.0)
    assert fig["u"]["rmse"] < 2e-3 and fig["r"]["rmse"] < 2e-3 and fig["psi"]["rmse"] < 2e-3
    assert fig["x"]["rmse"] < 0.02 and fig["y"]["rmse"] < 0.02
    assert fig["u"]["r2"] > 0.999 and fig["r"]["r2"] > 0.999


@pytest.mark.slow
def test_a_wamv_that_differs_from_its_file_follows_foka_in_current_and_wind():
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90.0, wind_speed_mps=6.0, wind_from_deg=45.0)
    spec = PlantSpec.resolve(FOKA, 3, plant_vessel=WAMV, mismatch={"damping": 1.4, "iz": 0.8, "tau": 1.3},
                             extras=PlantExtras(y_r=-20.0, n_v=-30.0, thrust_scale=(1.0, 0.9)))

    def plant():
        return Plant(spec.vessel, env, 3, 0, 0, 0, extras=spec.extras, thrust_scale=spec.thrust_scale())
    seconds = 75.0                      # surge steps, a coast down and the start of the turns
    with_ = _fly_excitation(ModelFollowingPlant(plant(), FOKA, follower_vessel=WAMV, thrust_limit_scale=10.0),
                            seconds)
    without = _fly_excitation(ModelFollowingPlant(plant(), FOKA, follow=False), seconds)
    cut = reduction_pct(with_, without)
    for state in ("u", "r", "psi"):
        assert cut[state]["rmse"] > 95.0 and cut[state]["mae"] > 95.0, (state, with_[state], without[state])
    assert not with_["sway_force"] and with_["sway_force_rms_n"] is None

    # the WAM-V slides more than FOKA in a turn: only a sway force brings its position onto the reference's
    sway = _fly_excitation(ModelFollowingPlant(plant(), FOKA, follower_vessel=WAMV, thrust_limit_scale=10.0,
                                               sway_force=True), seconds)
    cut_sway = reduction_pct(sway, without)
    for state in ("x", "y", "v"):
        assert cut_sway[state]["rmse"] > 95.0, (state, sway[state], without[state])
        assert sway[state]["rmse"] < 0.5 * with_[state]["rmse"]
    assert 0.0 < sway["sway_force_rms_n"] <= sway["sway_force_max_n"] <= 5000.0


def test_the_wamvs_own_thrusters_are_reported_as_limiting_foka_turns():
    # FOKA turns at up to 80 deg/s under its identification inputs: 500 N per WAM-V thruster cannot follow
    fig = _fly_excitation(ModelFollowingPlant(Plant(WAMV, EnvironmentConfig(), 1, 0, 0, 0), FOKA), 90.0)
    assert fig["thrust_limited_frac"] > 0.2
    assert fig["r"]["r2"] < 0.9


def test_the_cli_flies_with_and_without_following_and_reports_every_state(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc = main(["sim", "config/missions/demo.yaml", "--vessel", "foka", "--plant-vessel", "wamv", "--follow-model",
               "--devices", "typed", "--duration", "12", "--report", str(report)])
    assert rc == 0
    mf = json.loads(report.read_text())["model_following"]
    assert mf["with"]["following"] is True and mf["without"]["following"] is False
    assert mf["with"]["reference_vessel"] == "foka" and mf["with"]["plant_vessel"] == "wamv"
    for state in ("u", "v", "r", "x", "y", "psi"):
        assert set(mf["with"][state]) == {"rmse", "mae", "r2"} and set(mf["reduction_pct"][state]) == {"rmse", "mae"}
    assert mf["with"]["u"]["rmse"] < 0.2 * mf["without"]["u"]["rmse"]
    assert "model following: wamv made to follow foka" in capsys.readouterr().out


@pytest.mark.parametrize("extra, words", [
    ([], "--follow-model needs --plant-vessel"),
    (["--plant-vessel", "wamv", "--transport", "ros"], "in-process simulator only"),
    (["--plant-vessel", "wamv", "--mavlink", "udpout:127.0.0.1:14999"], "in-process simulator only"),
    (["--plant-vessel", "wamv", "--follow-thrust-scale", "1000"], "--follow-thrust-scale: at most 100"),
    (["--plant-vessel", "iacquabot"], "has 4 thrusters but the autopilot's 'foka' has 2"),
])
def test_bad_follow_model_combinations_are_refused_clearly(extra, words, capsys):
    rc = main(["sim", "config/missions/demo.yaml", "--vessel", "foka", "--follow-model", "--duration", "1", *extra])
    assert rc == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--follow-thrust-scale", "5"], ["--follow-sway"]])
def test_follower_options_without_following_are_refused(flag, capsys):
    rc = main(["sim", "config/missions/demo.yaml", "--plant-vessel", "wamv", *flag, "--duration", "1"])
    assert rc == 2
    assert f"{flag[0]} needs --follow-model" in capsys.readouterr().err
