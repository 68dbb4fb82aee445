"""The identification mission: AUTO flies open-loop excitation segments inside a box, returns between them,
aborts like any mission on a failsafe, and its log identifies the hull with the last set held back."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from autopilot.cli.main import main
from autopilot.modes.identification import IdentificationMode, plan
from autopilot.vocab.config import CONFIG_DIR, ConfigError, ExcitationSegmentConfig, load_mission, load_vessel
from autopilot.vocab.types import NavState
from hil.sim.faults import parse_fault
from hil.sim.identification_flight import fly_identification_mission
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

IDENTIFY = CONFIG_DIR / "missions" / "identify.yaml"


def short_mission(box_m=40.0):
    """identify.yaml with short segments: two sets of surge steps, turns, a sine and a PRBS (about 8 min)."""
    m = load_mission(IDENTIFY)
    segs = (ExcitationSegmentConfig(type="surge_steps", duration_s=10.0, levels=(0.5, 1.0)),
            ExcitationSegmentConfig(type="turns", duration_s=8.0, surge=0.5, yaw=0.6),
            ExcitationSegmentConfig(type="sine", duration_s=20.0, surge=0.6, yaw=1.0, period_s=8.0),
            ExcitationSegmentConfig(type="prbs", duration_s=24.0, surge=1.0, yaw=1.0, bit_s=1.5))
    return dataclasses.replace(m, identification=dataclasses.replace(m.identification, segments=segs,
                                                                      box_m=box_m, settle_s=3.0))


def test_the_default_mission_flies_two_sets_of_every_kind_of_segment():
    m = load_mission(IDENTIFY)
    segs = plan(m.identification)
    assert len(segs) == 2 * (3 + 2 + 1 + 1 + 1)
    assert [s.name.split()[3] for s in segs[:8]] == ["surge_steps"] * 3 + ["turns"] * 2 + ["sine", "square", "prbs"]
    prbs1, prbs2 = segs[7], segs[15]
    t = np.arange(0.0, 59.0, 0.5)
    assert [prbs1.yaw(x) for x in t] != [prbs2.yaw(x) for x in t]          # each set its own draw
    for s in segs:
        vals = [(s.surge(x), s.yaw(x)) for x in np.linspace(0.0, s.duration_s - 1e-6, 200)]
        assert all(0.0 <= a <= 1.0 and -1.0 <= b <= 1.0 for a, b in vals), s.name


def test_a_bad_segment_is_refused_with_the_file_and_key(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text(IDENTIFY.read_text().replace("  sets: 2\n", "  sets: 2\n  segments:\n    - {type: wiggle}\n"))
    with pytest.raises(ConfigError) as e:
        load_mission(p)
    assert "m.yaml" in str(e.value) and "type" in str(e.value) and "wiggle" in str(e.value)


def test_check_refuses_a_box_that_reaches_outside_the_geofence(tmp_path):
    from autopilot.files.check import check_config
    fence = ("geofence:\n  - {lat_deg: 51.1097, lon_deg: 17.0595}\n  - {lat_deg: 51.1103, lon_deg: 17.0595}\n"
             "  - {lat_deg: 51.1103, lon_deg: 17.0605}\n  - {lat_deg: 51.1097, lon_deg: 17.0605}\n")
    p = tmp_path / "m.yaml"
    p.write_text(IDENTIFY.read_text() + fence)                  # a fence about 67 m x 70 m around the centre
    assert check_config(CONFIG_DIR / "vessels/foka.yaml", p).ok
    p.write_text(IDENTIFY.read_text().replace("box_m: 60", "box_m: 100") + fence)
    report = check_config(CONFIG_DIR / "vessels/foka.yaml", p)
    assert not report.ok and "identification.box_m" in "\n".join(str(x) for x in report.problems)


def _nav(t, n, e, heading_deg):
    return NavState(time_s=t, north_m=n, east_m=e, heading_rad=math.radians(heading_deg), surge_mps=0.0,
                    sway_mps=0.0, yaw_rate_rps=0.0, valid=True)


def test_a_segment_reaching_the_box_edge_is_cut_short_and_the_boat_sent_back():
    cfg = dataclasses.replace(load_mission(IDENTIFY).identification, box_m=20.0, sets=1, settle_s=1.0,
                              segments=(ExcitationSegmentConfig(type="surge_steps", duration_s=100.0,
                                                                levels=(1.0,)),))
    mode = IdentificationMode(cfg, (0.0, 0.0), max_surge_n=100.0, max_yaw_nm=20.0, return_speed_mps=1.0)
    mode.enter(0.0, _nav(0.0, 0.0, 0.0, 0.0))
    out = mode.update(0.0, _nav(0.0, 0.0, 0.0, 0.0))             # heads back to the start line, 8 m south
    assert out.wrench is None and abs(math.degrees(out.setpoint.heading_rad)) == pytest.approx(180.0)
    mode.update(10.0, _nav(10.0, -8.0, 0.0, 0.0))                # there, facing north: settles
    out = mode.update(11.5, _nav(11.5, -8.0, 0.0, 0.0))
    assert out.wrench is not None and out.wrench.surge_n == pytest.approx(100.0) and mode.progress
    out = mode.update(20.0, _nav(20.0, 10.5, 0.0, 0.0))          # past the box's north edge
    assert out.wrench is None and out.setpoint is not None
    assert mode.cut_short == 1 and "cut short at the box edge" in mode.notice and mode.finished


@pytest.fixture(scope="module")
def flight(tmp_path_factory):
    vessel = load_vessel("foka")
    mission = short_mission()
    run_dir, report = fly_identification_mission(vessel, mission, tmp_path_factory.mktemp("id"), seed=4,
                                                 gps_noise="white")
    return vessel, mission, run_dir, report


def test_the_mission_flies_every_segment_inside_its_box(flight):
    vessel, mission, run_dir, report = flight
    ident = report["identification"]
    assert report["mission_complete"] and ident["segments_flown"] == ident["segments_total"] == 12
    assert report["failsafe_events"] == []
    from autopilot.runlog import read_run
    c = read_run(run_dir).columns
    half = mission.identification.box_m / 2
    # the box is checked on the estimate; a segment cut at the edge carries the boat a few metres on
    assert np.nanmax(np.abs(c["truth_north_m"])) < half + 8.0 and np.nanmax(np.abs(c["truth_east_m"])) < half + 8.0
    assert report["final_mode"] == "HOLD"                                     # on_complete: hold


def test_identify_holds_the_last_set_back_and_recovers_the_hull(flight, tmp_path, capsys):
    vessel, mission, run_dir, report = flight
    rep = tmp_path / "r.json"
    assert main(["identify", "hull", str(run_dir), "--vessel", str(CONFIG_DIR / "vessels/foka.yaml"),
                 "--velocities", "truth", "--report", str(rep)]) == 0
    import json
    r = json.loads(rep.read_text())
    assert r["runs_fit"][0].endswith("(set 1)") and r["runs_validate"][0].endswith("(set 2)")
    from estimation.identification.hull_least_squares import zeta_of_hull
    truth = zeta_of_hull(vessel.hull)
    fitted = np.array([r["parameters"][f"z{i}"]["value"] for i in range(1, 10)])
    assert np.all(np.abs(fitted[:5] - truth[:5]) / truth[:5] < 0.05), fitted
    for k in ("u", "v", "r", "x", "y", "psi"):
        assert r["validation"][r["runs_validate"][0]][k]["r2"] >= 0.99, k


def test_a_failsafe_during_identification_holds_the_boat():
    mission = short_mission()
    res = run_sim(load_vessel("foka"), mission, SimOptions(seed=1, gps_noise="white", duration_s=70.0,
                                                          faults=(parse_fault("imu-zero@60"),)))
    holds = [e for e in res.events if e.kind == "failsafe" and e.action == "hold"]
    assert holds and holds[0].failsafe == "imu-loss"
    assert res.report["final_mode"] == "HOLD"
    assert any("identification segment" in e.message for e in res.events if e.time_s < 60.0)


def test_two_motors_that_differ_are_found(tmp_path):
    """The port motor 10 % weaker and the starboard one 10 % stronger than their table: identify reports a
    20 % imbalance toward starboard and the hull stays right (the imbalance has its own regressor)."""
    from hil.sim.plant_spec import PlantExtras, PlantSpec
    vessel = load_vessel("foka")
    spec = PlantSpec.resolve(vessel, 5, extras=PlantExtras(thrust_scale=(0.9, 1.1)))
    run_dir, report = fly_identification_mission(vessel, short_mission(), tmp_path, seed=5, plant_spec=spec,
                                                 gps_noise="white")
    assert report["mission_complete"]
    from autopilot.identification.hull import identify
    from autopilot.identification.runs import load_ident_run, split_last_set
    from estimation.identification.hull_least_squares import zeta_of_hull
    fit_run, val_run = split_last_set(load_ident_run(run_dir, vessel, "truth"))
    r = identify([fit_run], [val_run], vessel)
    delta, _, lo, hi = r.fit.imbalance
    assert delta == pytest.approx(0.2, abs=0.03) and lo < 0.2 < hi + 0.03
    truth = zeta_of_hull(vessel.hull)
    assert np.all(np.abs(r.fit.zeta[:5] - truth[:5]) / truth[:5] < 0.05)
    # the file it writes carries the motors' scales, and the thrust maps follow them
    from autopilot.identification.hull import vessel_text
    from drivers.thrust_map import make_thrust_maps
    out = tmp_path / "foka_identified.yaml"
    out.write_text(vessel_text((CONFIG_DIR / "vessels/foka.yaml").read_text(), r))
    new = load_vessel(str(out))
    assert [t.thrust_scale for t in new.thrusters] == pytest.approx([0.9, 1.1], abs=0.015)
    before, after = make_thrust_maps(vessel), make_thrust_maps(new)
    assert after[0].max_forward_n / before[0].max_forward_n == pytest.approx(new.thrusters[0].thrust_scale)
