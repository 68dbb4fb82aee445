"""The simulator's true boat apart from the autopilot's vessel file: mismatch factors, the extras a diagonal
model leaves out, and the PlantModel seam."""
import contextlib
import json
import math

import pytest

from autopilot.cli.main import main
from autopilot.vocab.config import load_vessel
from hil.sim.dynamics import HullDynamics
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant, PlantModel
from hil.sim.plant_spec import (
    PlantExtras,
    PlantSpec,
    apply_mismatch,
    parse_mismatch,
    parse_plant_extras,
    realistic_extras,
    resolve_mismatch,
)
from tests.support.paths import REPO

CALM = EnvironmentConfig()


@contextlib.contextmanager
def _no_exit():
    yield None


def _run(plant, seconds, thrust):
    t = 0.0
    while t < seconds:
        t += 0.02
        truth = plant.step_to(t, thrust)
    return truth


def test_mismatch_spec_is_parsed_and_bad_parts_are_named():
    assert parse_mismatch("x_u=0.4, iz=2.3,thrust=0.8") == {"x_u": 0.4, "iz": 2.3, "thrust": 0.8}
    for bad, word in (("x_q=2", "x_q"), ("x_u", "KEY=FACTOR"), ("x_u=abc", "not a number"), ("x_u=0", "factor"),
                      ("iz=inf", "finite"), ("random=-1", "random")):
        with pytest.raises(ValueError, match=word):
            parse_mismatch(bad)


def test_groups_expand_and_random_draws_are_reproducible_per_seed_and_draw():
    f = resolve_mismatch({"added_mass": 1.5, "x_u": 0.4}, seed=1)
    assert f == {"x_udot": 1.5, "y_vdot": 1.5, "n_rdot": 1.5, "x_u": 0.4}
    a, b = resolve_mismatch({"random": 1.0}, 3), resolve_mismatch({"random": 1.0}, 3)
    assert a == b and all(0.5 <= v <= 2.0 for v in a.values()) and len(set(a.values())) > 5
    assert resolve_mismatch({"random": 1.0}, 4) != a
    assert resolve_mismatch({"random": 1.0}, 3, draw=1) != a
    assert resolve_mismatch({"random": 1.0, "iz": 2.5}, 3)["iz"] == 2.5       # an explicit key wins


def test_apply_mismatch_scales_the_plant_not_the_autopilots_file():
    vessel = load_vessel("foka")
    plant = apply_mismatch(vessel, {"x_u": 0.4, "iz": 2.3, "tau": 2.0})
    assert plant.hull.x_u == pytest.approx(0.4 * vessel.hull.x_u)
    assert plant.hull.iz_kgm2 == pytest.approx(2.3 * vessel.hull.iz_kgm2)
    assert plant.thrusters[0].time_constant_s == pytest.approx(2.0 * vessel.thrusters[0].time_constant_s)
    assert vessel.hull.x_u == load_vessel("foka").hull.x_u


def test_more_surge_drag_makes_the_true_boat_slower():
    vessel = load_vessel("foka")
    fast = _run(Plant(vessel, CALM, 0, 0, 0, 0), 30.0, (20.0, 20.0)).surge_mps
    spec = PlantSpec.resolve(vessel, 0, mismatch={"x_u": 2.5, "x_uu": 2.5})
    slow = _run(Plant(spec.vessel, CALM, 0, 0, 0, 0), 30.0, (20.0, 20.0)).surge_mps
    assert slow < 0.75 * fast


def test_a_weak_thruster_turns_the_boat_toward_its_side():
    """Right thruster 10 % weak: equal demands push the boat to starboard (heading grows)."""
    vessel = load_vessel("foka")
    truth = _run(Plant(vessel, CALM, 0, 0, 0, 0, thrust_scale=(1.0, 0.9)), 20.0, (15.0, 15.0))
    assert truth.heading_rad > math.radians(5)
    straight = _run(Plant(vessel, CALM, 0, 0, 0, 0), 20.0, (15.0, 15.0))
    assert abs(straight.heading_rad) < 1e-9


def test_a_constant_external_force_pushes_the_boat_toward_its_direction():
    vessel = load_vessel("foka")
    truth = _run(Plant(vessel, CALM, 0, 0, 0, 0, extras=PlantExtras(force_n=10.0, force_toward_deg=90.0)),
                 20.0, (0.0, 0.0))
    assert truth.east_m > 2.0 and abs(truth.north_m) < 0.5 * truth.east_m


def test_sway_yaw_coupling_changes_the_turn_and_the_diagonal_model_is_the_default():
    d0 = HullDynamics(15, 2.2, -0.75, -5, -0.6, -5, -30, -3, -10, -40, -3)
    d1 = HullDynamics(15, 2.2, -0.75, -5, -0.6, -5, -30, -3, -10, -40, -3, x_g_m=-0.03, y_rdot=-0.4,
                      y_r=-0.6, n_v=-1.5)
    state = (0.0, 0.0, 0.0, 1.0, 0.1, 0.3)
    a = d0.rk4_step(state, 0.01, 10.0, 0.0, 2.0, 0.0, 0.0)
    b = d1.rk4_step(state, 0.01, 10.0, 0.0, 2.0, 0.0, 0.0)
    assert a[:3] == pytest.approx(b[:3], abs=1e-4) and abs(a[5] - b[5]) > 1e-4
    with pytest.raises(ValueError, match="positive definite"):
        HullDynamics(15, 2.2, -0.75, -5, -0.6, -5, -30, -3, -10, -40, -3, y_rdot=-20.0)


def test_roll_and_pitch_reach_the_truth_with_trim_and_waves():
    vessel = load_vessel("foka")
    trim = Plant(vessel, CALM, 0, 0, 0, 0, extras=PlantExtras(trim_roll_deg=2.0, trim_pitch_deg=-1.0)).truth
    assert math.degrees(trim.roll_rad) == pytest.approx(2.0) and math.degrees(trim.pitch_rad) == pytest.approx(-1.0)
    beam_sea = EnvironmentConfig(wave_hs_m=0.3, wave_tp_s=3.0, wave_from_deg=90.0)
    plant = Plant(vessel, beam_sea, 1, 0, 0, 0, extras=PlantExtras(wave_motion=True))
    rolls, pitches = [], []
    for k in range(1, 1500):
        tr = plant.step_to(0.02 * k, (0.0, 0.0))
        rolls.append(tr.roll_rad)
        pitches.append(tr.pitch_rad)
    rms = lambda xs: math.sqrt(sum(x * x for x in xs) / len(xs))   # noqa: E731
    assert math.radians(0.5) < rms(rolls) < math.radians(10)       # waves from the beam roll the boat...
    assert rms(pitches) < 0.5 * rms(rolls)                          # ...more than they pitch it


def test_plant_extras_parse_and_refuse_bad_values():
    ex = parse_plant_extras("y_r=-2,n_v=-1,thrust_scale=1:0.9,wave_motion=1,trim_roll_deg=2", 2)
    assert ex.y_r == -2 and ex.thrust_scale == (1.0, 0.9) and ex.wave_motion and ex.trim_roll_deg == 2
    for bad, word in (("thrust_scale=1", "2 factors"), ("foo=1", "KEY=VALUE"), ("y_r=x", "not a number"),
                      ("trim_roll_deg=60", "45")):
        with pytest.raises(ValueError, match=word):
            parse_plant_extras(bad, 2)
    assert not realistic_extras(load_vessel("wamv")).is_nominal


def test_plant_spec_refuses_a_plant_with_another_thruster_count():
    import dataclasses
    foka = load_vessel("foka")
    four = dataclasses.replace(foka, thrusters=foka.thrusters * 2)
    with pytest.raises(ValueError, match="thrusters"):
        PlantSpec.resolve(foka, 1, plant_vessel=four)


def test_the_built_in_plant_satisfies_the_plant_protocol():
    assert isinstance(Plant(load_vessel("foka"), CALM, 0, 0, 0, 0), PlantModel)


@pytest.mark.slow
def test_cli_sim_flies_a_mismatched_plant_and_reports_it(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc = main(["sim", str(REPO / "config/missions/straight_line.yaml"), "--vessel", "wamv",
               "--mismatch", "x_u=2.5,iz=0.4", "--plant-extra", "realistic", "--force", "20,90",
               "--devices", "typed", "--gps-noise", "white", "--report", str(report)])
    out = capsys.readouterr().out
    assert rc == 0 and "mismatch iz=0.4,x_u=2.5" in out and "COMPLETE" in out
    plant = json.loads(report.read_text())["plant"]
    assert plant["mismatch"] == {"iz": 0.4, "x_u": 2.5} and plant["extras"]["force_n"] == 20.0


@pytest.mark.parametrize("args, word", [(["--mismatch", "q=1"], "mismatch key"),
                                        (["--plant-extra", "thrust_scale=1"], "thrust_scale"),
                                        (["--force", "x"], "--force"),
                                        (["--plant-vessel", "/nonexistent.yaml"], "file not found")])
def test_cli_sim_refuses_a_bad_plant_description_clearly(args, word, capsys):
    with pytest.raises(SystemExit) if args[0] in ("--mismatch", "--force") else _no_exit() as exc:
        rc = main(["sim", str(REPO / "config/missions/straight_line.yaml"), *args])
    err = capsys.readouterr().err
    code = exc.value.code if isinstance(exc, pytest.ExceptionInfo) else rc
    assert code == 2 and word in err and "Traceback" not in err
