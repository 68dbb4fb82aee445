"""A thruster that stops pushing: the simulator's thruster faults, the effectiveness detector on synthetic yaw
data, the allocator leaving a thruster out, and what a boat does about it in a simulated mission."""
import dataclasses
import math

import numpy as np
import pytest

from autopilot.control.allocation import Allocator
from autopilot.safety.thruster_health import DEAD, WEAK, ThrusterHealth
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from autopilot.vocab.failsafe_config import ThrusterFailsafeConfig
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_maps
from hil.sim.environment import EnvironmentConfig
from hil.sim.faults import check_thrusters, parse_fault, thrust_factors
from hil.sim.plant_spec import PlantSpec, parse_mismatch
from hil.sim.runner import SimOptions, run_sim

DEMO = CONFIG_DIR / "missions/demo.yaml"
WINDY = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2, current_toward_deg=0.0,
                          wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)


# ---------------------------------------------------------------------------------------------- the fault parser
def test_thruster_faults_parse_with_name_factor_and_end():
    weak = parse_fault("thruster-weak@60:left=0.5")
    assert (weak.kind, weak.start_s, weak.end_s, weak.thruster, weak.thrust_factor) == \
        ("thruster-weak", 60.0, math.inf, "left", 0.5)
    dead = parse_fault("thruster-dead@60:120:right")
    assert (dead.start_s, dead.end_s, dead.thruster, dead.thrust_factor) == (60.0, 180.0, "right", 0.0)
    assert parse_fault(dead.label) == dead


@pytest.mark.parametrize("text, words", [
    ("thruster-weak@60:left=1.2", "(0, 1)"),
    ("thruster-weak@60:left=0", "(0, 1)"),
    ("thruster-weak@60:left", "(0, 1)"),
    ("thruster-dead@60", "NAME"),
    ("thruster-dead@60:left=0.5", "no factor"),
])
def test_bad_thruster_faults_say_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=f"fault {text!r}") as e:
        parse_fault(text)
    assert words in str(e.value)


def test_an_unknown_thruster_name_lists_the_vessels_thrusters():
    with pytest.raises(ValueError, match="no thruster 'port'.*left, right"):
        check_thrusters([parse_fault("thruster-dead@10:port")], load_vessel("foka"))


def test_the_factors_reach_only_the_named_thruster_while_the_fault_lasts():
    vessel = load_vessel("iacquabot")
    faults = [parse_fault("thruster-weak@10:20:aft_left=0.5"), parse_fault("thruster-dead@20:fore_right")]
    assert thrust_factors(faults, vessel, 5.0) is None
    assert thrust_factors(faults, vessel, 15.0) == [1.0, 1.0, 0.5, 1.0]
    assert thrust_factors(faults, vessel, 25.0) == [1.0, 0.0, 0.5, 1.0]
    assert thrust_factors(faults, vessel, 35.0) == [1.0, 0.0, 1.0, 1.0]


@pytest.mark.slow
def test_a_dead_thruster_in_the_simulator_pushes_nothing_though_the_autopilot_commands_it():
    """The truth loses the thrust, the autopilot's command does not: the boat on one side cannot hold a line."""
    vessel = load_vessel("foka")
    fs = dataclasses.replace(vessel.failsafe, thruster=dataclasses.replace(vessel.failsafe.thruster, enabled=False))
    opts = SimOptions(seed=1, gps_noise="white", duration_s=90.0, devices="typed",
                      faults=(parse_fault("thruster-dead@40:left"),))
    res = run_sim(dataclasses.replace(vessel, failsafe=fs), load_mission(DEMO), opts)
    t = res.trace["t"]
    late = t > 70.0
    assert np.mean(res.thrust_n[late, 0]) > 2.0 * abs(np.mean(res.thrust_n[late, 1]))   # left driven hard
    assert np.mean(res.trace["truth_u"][late]) < 0.3        # and yet the boat barely moves (cruise ~0.8 m/s)


# ---------------------------------------------------------------------------------- the detector, synthetic data
M33, N_R = 6.0, -4.0
YS = (-0.25, 0.25)


def _detector(**kw):
    c = ThrusterFailsafeConfig()          # the vessel files' defaults
    args = dict(m11=30.0, m22=40.0, m33=M33, n_r=N_R, n_rr=0.0, max_yaw_nm=17.0, weak_below=c.weak_below,
                dead_below=c.dead_below, hold_s=c.hold_s, memory_s=c.memory_s)
    args.update(kw)
    return ThrusterHealth(["left", "right"], [-0.45, -0.45], YS, [0.0, 0.0], **args)


def _fly(det, effectiveness, seconds, *, gust_nm=0.0, gust_s=(0.0, 0.0), reverse=False, bias_nm=0.0, seed=0):
    """A straight run: the heading loop drives the thrusters until the delivered yaw moment balances the
    environment's (bias_nm, a gust): returns the verdicts. The thrust level steps every 10 s (speed changes)."""
    rng = np.random.default_rng(seed)
    e = np.asarray(effectiveness, dtype=float)
    verdicts = []
    dt = 0.1
    for k in range(int(seconds / dt)):
        t = k * dt
        level = (4.0 if (t // 10) % 2 == 0 else 12.0) * (-1.0 if reverse else 1.0)
        env = bias_nm + (gust_nm if gust_s[0] <= t < gust_s[1] else 0.0)
        # thrust split so that sum_i e_i (-y_i) T_i + env = 0 with sum T = 2 level
        # (-y_l) = 0.25, (-y_r) = -0.25: 0.25 (e_l T_l - e_r T_r) = -env
        t_l = (2.0 * level * e[1] - 4.0 * env) / (e[0] + e[1])
        t_r = 2.0 * level - t_l
        r = rng.normal(0.0, 0.003)
        verdicts += det.update(t, r, 1.0, 0.0, (t_l, t_r))
    return verdicts


def test_a_healthy_boat_in_a_steady_cross_wind_raises_nothing():
    det = _detector()
    assert _fly(det, (1.0, 1.0), 300.0, bias_nm=0.5) == []
    assert min(det.relative) > 0.8


def test_a_dead_thruster_is_found_and_named():
    det = _detector()
    verdicts = _fly(det, (1.0, 0.0), 300.0)
    assert [(v.name, v.state) for v in verdicts][-1] == ("right", DEAD)
    assert det.relative[0] == pytest.approx(1.0, abs=0.05)


def test_a_weak_thruster_is_reported_weak_not_dead():
    det = _detector()
    verdicts = _fly(det, (0.45, 1.0), 300.0)
    assert [(v.name, v.state) for v in verdicts] == [("left", WEAK)]
    assert 0.3 < det.relative[0] < 0.7


def test_astern_thrust_is_judged_too():
    det = _detector()
    verdicts = _fly(det, (1.0, 0.0), 300.0, reverse=True)
    assert ("right", DEAD) in [(v.name, v.state) for v in verdicts]


@pytest.mark.parametrize("seconds", [2.0, 10.0])
def test_one_gust_is_not_evidence(seconds):
    """A yaw gust of half a dead thruster's moment at this thrust (6 % of the largest yaw moment), balanced by
    the heading loop, is not sustained evidence (one of 2 N*m for 5 s is: docs/design-notes/thruster-health.md)."""
    det = _detector()
    assert _fly(det, (1.0, 1.0), 120.0, gust_nm=1.0, gust_s=(50.0, 50.0 + seconds)) == []


def test_turning_rows_are_not_taken():
    """In turns a hull unlike its file loads the outer thruster: such rows must leave the estimate alone."""
    det = _detector()
    for k in range(2000):
        det.update(k * 0.1, 0.3, 1.0, 0.0, (12.0, 1.0))      # hard turn, moment far from the file's
    assert det.effectiveness == (1.0, 1.0)


def test_thresholds_out_of_order_are_refused():
    with pytest.raises(ValueError, match="dead_below .* must be below weak_below"):
        _detector(weak_below=0.3, dead_below=0.4)


def test_thrusters_on_the_same_arm_form_a_group():
    det = ThrusterHealth(["fl", "fr", "al", "ar"], [0.4, 0.4, -0.45, -0.45], [-0.25, 0.25, -0.25, 0.25],
                         [0.1] * 4, m11=30, m22=40, m33=6, n_r=-4, n_rr=0, max_yaw_nm=30, weak_below=0.6,
                         dead_below=0.2, hold_s=5, memory_s=30)
    assert det.group_of(0) == (0, 2) and det.group_of(3) == (1, 3)


# -------------------------------------------------------------------------------------- the allocator, one out
def _four():
    vessel = load_vessel("iacquabot")
    return Allocator(vessel, list(make_thrust_maps(vessel, vessel.battery.voltage_v)))


def test_a_thruster_left_out_gets_no_thrust_and_the_others_deliver_the_wrench():
    alloc = _four()
    full = alloc.max_surge_n
    alloc.set_out({2})
    cmd = alloc.allocate(Wrench(20.0, 3.0))
    assert cmd.thrust_n[2] == 0.0
    assert alloc.wrench_of(cmd.thrust_n).surge_n == pytest.approx(20.0)
    assert alloc.wrench_of(cmd.thrust_n).yaw_nm == pytest.approx(3.0)
    assert alloc.max_surge_n < full


def test_leaving_out_a_whole_side_is_refused_and_changes_nothing():
    alloc = _four()
    before = alloc.allocate(Wrench(20.0, 3.0))
    with pytest.raises(ValueError, match="cannot make a yaw moment"):
        alloc.set_out({0, 2})
    assert alloc.allocate(Wrench(20.0, 3.0)) == before


# ------------------------------------------------------------------------------------------ simulated missions
def _mission_run(fault=None, mismatch=None, duration=300.0, preset="foka", seed=1):
    vessel = load_vessel(preset)
    vessel = dataclasses.replace(vessel, failsafe=dataclasses.replace(      # the watch is opt-in
        vessel.failsafe, thruster=dataclasses.replace(vessel.failsafe.thruster, enabled=True)))
    spec = PlantSpec.resolve(vessel, seed, mismatch=parse_mismatch(mismatch)) if mismatch else None
    opts = SimOptions(seed=seed, env=WINDY, gps_noise="white", duration_s=duration, devices="typed",
                      faults=(parse_fault(fault),) if fault else (), plant_spec=spec)
    return run_sim(vessel, load_mission(DEMO), opts)


def _thruster_events(res):
    return [e for e in res.events if "thruster" in e.message and e.kind in ("warning", "failsafe")]


@pytest.mark.slow
def test_foka_with_a_dead_port_thruster_goes_neutral_with_a_clear_reason():
    res = _mission_run("thruster-dead@60:left", duration=200.0)
    fs = [e for e in res.events if e.kind == "failsafe"]
    assert fs and fs[0].failsafe == "thruster-dead" and fs[0].action == "hold"
    assert "thruster left dead: cannot steer" in fs[0].message
    assert 60.0 < fs[0].time_s < 130.0
    assert res.report["final_mode"] == "HOLD"
    after = res.trace["t"] > fs[0].time_s + 0.5
    assert np.all(res.thrust_n[after] == 0.0)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="since rows need a steady thrusters' moment FOKA's demo gives too few to "
                   "judge a 0.5 thruster (docs/design-notes/thruster-health.md, Not done)")
def test_foka_with_a_weak_thruster_warns_and_flies_on():
    res = _mission_run("thruster-weak@60:left=0.5", duration=None)
    warned = [e for e in _thruster_events(res) if e.kind == "warning"]
    assert warned and warned[0].message.startswith("thruster left weak")
    assert not [e for e in res.events if e.kind == "failsafe"]
    assert res.report["mission_complete"]


@pytest.mark.slow
def test_wamv_with_a_weak_thruster_warns_and_flies_on():
    res = _mission_run("thruster-weak@60:left=0.5", duration=260.0, preset="wamv")
    warned = [e for e in _thruster_events(res) if e.kind == "warning"]
    assert warned and warned[0].message.startswith("thruster left weak")
    assert not [e for e in res.events if e.kind == "failsafe"]
    assert res.report["final_mode"] == "AUTO"


@pytest.mark.slow
def test_a_healthy_mismatched_boat_in_wind_raises_no_thruster_alarm():
    res = _mission_run(mismatch="damping=0.7,thrust=0.85,iz=1.3", duration=None)
    assert _thruster_events(res) == []
    assert res.report["mission_complete"]


def test_the_cli_names_an_unknown_thruster_without_a_traceback(capsys):
    from autopilot.cli.main import main as cli_main
    rc = cli_main(["sim", str(DEMO), "--duration", "5", "--fault", "thruster-dead@2:port"])
    err = capsys.readouterr().err
    assert rc != 0 and "no thruster 'port'" in err and "left, right" in err and "Traceback" not in err


def test_the_cli_refuses_a_weak_factor_out_of_range(capsys):
    from autopilot.cli.main import main as cli_main
    with pytest.raises(SystemExit):
        cli_main(["sim", str(DEMO), "--duration", "5", "--fault", "thruster-weak@2:left=1.5"])
    assert "(0, 1)" in capsys.readouterr().err
