"""`autopilot log replay`: a logged run's filter re-run on its recorded inputs, exactly, or with another tuning."""
from __future__ import annotations

import math
import shutil
import types
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from autopilot.cli.main import main
from autopilot.replay.navigation import ReplayError, replay_run
from autopilot.runlog import read_run
from autopilot.runlog.estimator_inputs import FILE_NAME, read_estimator_inputs
from tests.support.paths import REPO
from tests.support.replay_helpers import logged_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

EST = ("north_m", "east_m", "heading_deg", "surge_mps", "pos_std_m")


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    run_dir, sim = logged_sim(tmp_path_factory.mktemp("runs"), duration_s=20.0, seed=5)
    return run_dir, sim


def test_a_logged_sim_run_replays_to_its_own_estimate(sim_run, tmp_path):
    run_dir, sim = sim_run
    r = replay_run(run_dir, out_base=tmp_path)
    assert r.steps == len(sim.trace["t"]) and r.compared > 900 and r.notes == []
    assert r.pos_diff_max_m < 1e-3                       # the requirement; in fact bit for bit
    assert r.heading_diff_max_deg < 1e-6
    assert r.tuning_changes == {}
    orig, rep = read_run(run_dir), read_run(r.run_dir)
    assert r.run_dir.parent == tmp_path and r.run_dir != run_dir
    assert len(rep) == len(orig) == r.rows
    assert rep.columns.keys() == orig.columns.keys()        # the same state.csv format
    for c in orig.columns:
        if c == "mode":
            assert list(rep[c]) == list(orig[c])
        else:
            assert np.allclose(rep[c], orig[c], equal_nan=True, rtol=0, atol=1e-9), c
    assert rep.meta["replay_of"] == str(run_dir.resolve())
    assert (r.run_dir / "foka.yaml").is_file() and (r.run_dir / "demo.yaml").is_file()
    # the replay keeps its own inputs: it can be replayed (or tuned) again
    assert read_estimator_inputs(r.run_dir).steps[-1].nav == read_estimator_inputs(run_dir).steps[-1].nav
    assert math.isfinite(r.original_pos_err_rms_m) and r.original_pos_err_rms_m == r.replay_pos_err_rms_m


def test_another_tuning_gives_another_estimate_and_plot_draws_both(sim_run, tmp_path, capsys):
    run_dir, _sim = sim_run
    tuning = tmp_path / "loose.yaml"
    tuning.write_text("# trust the model less, GNSS speed and the compass less\n"
                      "pos_noise_mps: 0.05\nspeed_noise_floor_mps: 0.5\nheading_floor_rad: 0.05\n")
    assert main(["log", "replay", str(run_dir), "--ekf-tuning", str(tuning), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "pos_noise_mps 0.005 -> 0.05" in out and "replay vs original estimate" in out
    assert "estimate error vs the simulation's truth" in out
    (replay_dir,) = list((tmp_path / "out").iterdir())
    orig, rep = read_run(run_dir), read_run(replay_dir)
    both = np.isfinite(orig["north_m"]) & np.isfinite(rep["north_m"])
    d = np.hypot(orig["north_m"] - rep["north_m"], orig["east_m"] - rep["east_m"])[both]
    assert d.max() > 0.05                                   # it is a different filter...
    assert d.max() < 5.0                                    # ...on the same data
    assert list(rep["mode"]) == list(orig["mode"]) and np.array_equal(rep["thrust_n_0"], orig["thrust_n_0"])
    assert rep.meta["replay_tuning_changes"]["pos_noise_mps"] == [0.005, 0.05]
    assert (replay_dir / "loose.yaml").is_file()
    # autopilot plot takes the replay and draws the original over it
    alone, pair = tmp_path / "alone.png", tmp_path / "pair.png"
    assert main(["plot", str(replay_dir), "-o", str(alone)]) == 0
    assert main(["plot", str(replay_dir), str(run_dir), "-o", str(pair)]) == 0
    a, b = mpimg.imread(alone), mpimg.imread(pair)
    assert a.shape == b.shape and (np.abs(a - b).max(axis=2) > 0.1).mean() > 0.002    # the overlay is drawn


def test_a_tighter_gate_shows_in_what_the_filter_refused(sim_run, tmp_path, capsys):
    run_dir, _sim = sim_run
    tight = tmp_path / "tight.yaml"
    tight.write_text("gps_gate: 2.0\n")
    r = replay_run(run_dir, out_base=tmp_path / "out", tuning_file=tight)
    own = replay_run(run_dir, out_base=tmp_path / "own")
    assert r.original_counters == own.counters == own.original_counters      # the run's filter, run alongside
    assert r.counters["gps_rejected"] > r.original_counters["gps_rejected"]
    assert r.counters["gps_accepted"] < r.original_counters["gps_accepted"]
    assert main(["log", "replay", str(run_dir), "--ekf-tuning", str(tight), "--out", str(tmp_path / "cli")]) == 0
    out = capsys.readouterr().out
    o, n = r.original_counters["gps_rejected"], r.counters["gps_rejected"]
    assert f"gps_rejected {o} -> {n}" in out


def test_a_run_through_sensor_faults_replays_exactly(tmp_path):
    """Rejected glitches, frozen (stale) IMU samples, a magnetometer and a GNSS outage: all in the record."""
    from hil.sim.faults import parse_fault
    faults = tuple(parse_fault(f) for f in ("gps-glitch@10:4=20", "imu-frozen@14:2", "mag-loss@17:3",
                                            "gps-loss@21:4"))
    run_dir, _sim = logged_sim(tmp_path / "runs", duration_s=28.0, seed=4, faults=faults)
    steps = read_estimator_inputs(run_dir).steps
    assert sum(x.stale for s in steps for x in s.batch.imu) > 20
    assert sum(not s.batch.mag for s in steps) > 100
    r = replay_run(run_dir, out_base=tmp_path / "out")
    assert r.counters["gps_rejected"] + r.counters["gps_invalid"] > 0
    assert r.compared > 1000 and r.pos_diff_max_m < 1e-3 and r.heading_diff_max_deg < 1e-6


def test_the_cli_prints_the_comparison_of_an_exact_replay(sim_run, tmp_path, capsys):
    run_dir, _sim = sim_run
    assert main(["log", "replay", str(run_dir), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tuning: the run's own" in out and "(bit for bit)" in out and "x real time" in out


@pytest.mark.parametrize("text, key, reason", [
    ("gps_gate: 9.2\npos_noise: 0.1\n", "pos_noise", "not an EKF tuning field"),
    ("gps_gate: fast\n", "gps_gate", "must be a number"),
    ("gps_gate: -1\n", "gps_gate", "must be greater than 0"),
    ("pos_noise_mps: -0.1\n", "pos_noise_mps", "must be at least 0"),
    ("pos_noise_mps: .nan\n", "pos_noise_mps", "must be a finite number"),
    ("adaptive_noise: 1\n", "adaptive_noise", "must be true or false"),
    ("gps_vel_reaccept_run: 0\n", "gps_vel_reaccept_run", "whole number of at least 1"),
    ("tilt_reference: sideways\n", "tilt_reference", "must be one of auto, absolute, dynamic"),
    ("gps_gate: 9\ngps_gate: 10\n", "gps_gate", "given twice"),
    ("- gps_gate\n", "<top level>", "must be a YAML mapping"),
    ("gps_gate: [1\n", "<top level>", "invalid YAML"),
])
def test_a_malformed_tuning_file_is_named_with_its_key_and_reason(sim_run, tmp_path, capsys, text, key, reason):
    run_dir, _sim = sim_run
    bad = tmp_path / "tuning.yaml"
    bad.write_text(text)
    assert main(["log", "replay", str(run_dir), "--ekf-tuning", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: {key}: " in err and reason in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()                     # nothing written for a refused replay


def test_a_missing_tuning_file_is_named(sim_run, tmp_path, capsys):
    run_dir, _sim = sim_run
    assert main(["log", "replay", str(run_dir), "--ekf-tuning", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and "file not found" in err


def _copy_run(run_dir: Path, dst: Path) -> Path:
    shutil.copytree(run_dir, dst)
    return dst


def test_absent_or_damaged_inputs_are_clear_errors(sim_run, tmp_path, capsys):
    run_dir, _sim = sim_run
    old = _copy_run(run_dir, tmp_path / "old")
    (old / FILE_NAME).unlink()
    assert main(["log", "replay", str(old)]) == 1
    err = capsys.readouterr().err
    assert "error: cannot replay" in err and "no record of the estimator's inputs" in err and "Traceback" not in err

    broken = _copy_run(run_dir, tmp_path / "broken")
    data = bytearray((broken / FILE_NAME).read_bytes())
    data[20] ^= 0xFF                                          # inside the header record
    (broken / FILE_NAME).write_bytes(bytes(data))
    assert main(["log", "replay", str(broken)]) == 1
    assert "no readable header" in capsys.readouterr().err

    assert main(["log", "replay", str(tmp_path / "no-such-run")]) == 1
    assert "not a run directory" in capsys.readouterr().err

    novessel = _copy_run(run_dir, tmp_path / "novessel")
    (novessel / "foka.yaml").unlink()
    assert main(["log", "replay", str(novessel)]) == 1
    assert "--vessel" in capsys.readouterr().err
    with pytest.raises(ReplayError, match="4 thrusters, but the run had 2"):
        replay_run(run_dir, out_base=tmp_path / "x", vessel_file=REPO / "config/vessels/iacquabot.yaml")


def test_a_step_the_filter_refuses_is_a_clear_error(sim_run, tmp_path, capsys):
    """A record (crafted: CRC-valid) giving 3 thrusters to a 2-thruster filter: named, not a traceback."""
    from autopilot.runlog import estimator_inputs as ei
    from autopilot.vocab.types import ThrustCommand
    run_dir, _sim = sim_run
    bad = _copy_run(run_dir, tmp_path / "bad")
    rec = read_estimator_inputs(run_dir)
    parts = [ei.file_head(), ei.header_record(rec.header)]
    for s in rec.steps:
        thrust = ThrustCommand((1.0, 2.0, 3.0)) if s.step == 300 else s.thrust
        parts.append(ei.step_record(s.t_s, s.batch, types.SimpleNamespace(estimator_step=s.step,
                                                                          estimator_thrust=thrust, nav=s.nav)))
    (bad / FILE_NAME).write_bytes(b"".join(parts))
    assert main(["log", "replay", str(bad), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "the filter failed at step 300 (t=6.020 s)" in err and "3 values" in err and "Traceback" not in err


@pytest.mark.parametrize("change, reason", [
    ({"estimator": "KalmanNet"}, "only NavigationEKF replays"),
    ({"tuning": [1, 2]}, "has no tuning"),
    ({"frame": {"origin_lat_deg": "north"}}, "header cannot be used"),
    ({"mag_calibration": {"offset_t": [1.0]}}, "header cannot be used"),
    ({"tuning": {"tilt_reference": "sideways"}}, "header cannot be used"),
])
def test_a_header_that_is_not_ours_is_a_clear_error(sim_run, tmp_path, capsys, change, reason):
    from autopilot.runlog import estimator_inputs as ei
    run_dir, _sim = sim_run
    odd = _copy_run(run_dir, tmp_path / "odd")
    rec = read_estimator_inputs(run_dir)
    first = ei.step_record(rec.steps[0].t_s, rec.steps[0].batch, types.SimpleNamespace(
        estimator_step=0, estimator_thrust=rec.steps[0].thrust, nav=rec.steps[0].nav))
    (odd / FILE_NAME).write_bytes(ei.file_head() + ei.header_record(dict(rec.header, **change)) + first)
    assert main(["log", "replay", str(odd), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert reason in err and "Traceback" not in err


def test_a_cut_record_replays_exactly_as_far_as_it_goes_and_says_so(sim_run, tmp_path):
    run_dir, _sim = sim_run
    cut = _copy_run(run_dir, tmp_path / "cut")
    data = (cut / FILE_NAME).read_bytes()
    (cut / FILE_NAME).write_bytes(data[: int(len(data) * 0.6)])
    r = replay_run(cut, out_base=tmp_path / "out")
    assert any("cut short" in n for n in r.notes)
    assert 0 < r.steps < len(read_estimator_inputs(run_dir).steps)
    assert r.pos_diff_max_m < 1e-3 and 0 < r.rows < len(read_run(run_dir))


def test_a_run_without_its_state_csv_still_replays_to_rows_of_the_estimate(sim_run, tmp_path):
    run_dir, _sim = sim_run
    bare = _copy_run(run_dir, tmp_path / "bare")
    (bare / "state.csv").unlink()
    r = replay_run(bare, out_base=tmp_path / "out")
    rep, orig = read_run(r.run_dir), read_run(run_dir)
    assert len(rep) == len(orig) and np.array_equal(rep["time_s"], orig["time_s"])     # at the run's log rate
    assert np.allclose(rep["north_m"], orig["north_m"], equal_nan=True, rtol=0, atol=1e-9)
    assert "thrust_n_0" not in rep.columns and set(rep["mode"]) == {""}       # nothing made up for the rest


def test_events_that_are_not_ours_are_left_out_not_fatal(sim_run, tmp_path):
    run_dir, _sim = sim_run
    odd = _copy_run(run_dir, tmp_path / "odd")
    with open(odd / "events.jsonl", "a") as f:
        f.write('[1, 2]\n{"time_s": "noon", "kind": "x"}\n{"time_s": 3.0, "t_s": 1, "self": 2, "kind": "note", '
                '"message": "kept"}\n')
    r = replay_run(odd, out_base=tmp_path / "out")
    events = read_run(r.run_dir).events
    assert [e["message"] for e in events if e["kind"] == "note"] == ["kept"]
    assert len(events) == len(read_run(run_dir).events) + 2            # the replay's own event and the kept one


def test_a_meta_json_and_state_csv_that_are_not_ours_do_not_make_a_traceback(sim_run, tmp_path, capsys):
    import json
    run_dir, _sim = sim_run
    odd = _copy_run(run_dir, tmp_path / "odd")
    meta = json.loads((odd / "meta.json").read_text())
    meta.update(rate_hz="fast", mission_name=7, files={"vessel": 5, "mission": ["x"]})
    (odd / "meta.json").write_text(json.dumps(meta))
    lines = (odd / "state.csv").read_text().splitlines()
    (odd / "state.csv").write_text("\n".join([lines[0] + ",wind_gust_mps"] + [ln + ",1.5" for ln in lines[1:]]) + "\n")
    assert main(["log", "replay", str(odd), "--out", str(tmp_path / "o1")]) == 1
    err = capsys.readouterr().err
    assert "no vessel file kept in the run directory; give one with --vessel" in err and "Traceback" not in err
    assert main(["log", "replay", str(odd), "--vessel", str(REPO / "config/vessels/foka.yaml"),
                 "--out", str(tmp_path / "o2")]) == 0
    (replay_dir,) = list((tmp_path / "o2").iterdir())
    rep = read_run(replay_dir)
    assert rep.meta["rate_hz"] == 10.0 and replay_dir.name.endswith("_odd-replay")
    assert "wind_gust_mps" not in rep.columns and len(rep) == len(read_run(run_dir))
    (odd / "meta.json").write_text("[]")
    assert main(["log", "replay", str(odd), "--out", str(tmp_path / "o3")]) == 1
    assert "--vessel" in capsys.readouterr().err


def test_another_vessel_file_is_flagged(sim_run, tmp_path):
    run_dir, _sim = sim_run
    heavier = tmp_path / "foka_heavy.yaml"
    heavier.write_text((REPO / "config/vessels/foka.yaml").read_text().replace("mass_kg: ", "mass_kg: 1", 1))
    r = replay_run(run_dir, out_base=tmp_path / "out", vessel_file=heavier)
    assert any("not the vessel configuration the run used" in n for n in r.notes)
    assert r.pos_diff_max_m > 0.0


def test_a_filter_that_applies_a_magnetometer_calibration_replays_exactly(tmp_path):
    """The typed-sensor simulation hands the filter the calibration of a distorted magnetometer: the replay
    rebuilds it from the record's header."""
    text = (REPO / "config/vessels/foka.yaml").read_text()
    distorted = tmp_path / "foka_iron.yaml"
    distorted.write_text(
        text.replace(
            "    rate_hz: 40\n",
            "    rate_hz: 40\n    hard_iron_t: [8.0e-6, -5.0e-6, 2.0e-6]\n"
            "    soft_iron: [1.1, 0.05, 0, 0.05, 0.92, 0, 0, 0, 1.0]\n",
            1,
        )
    )
    run_dir, _sim = logged_sim(tmp_path / "runs", duration_s=12.0, devices="typed", vessel_file=distorted)
    header = read_estimator_inputs(run_dir).header
    assert header["mag_calibration"] is not None and header["mag_calibration"]["offset_t"][0] != 0.0
    r = replay_run(run_dir, out_base=tmp_path / "out")
    assert r.notes == [] and r.compared > 400
    assert r.pos_diff_max_m < 1e-3 and r.heading_diff_max_deg < 1e-6
    assert replay_run(run_dir, out_base=tmp_path / "out2", vessel_file=REPO / "config/vessels/foka.yaml").notes


def test_control_replay_recomputes_the_commands_and_a_new_tuning_changes_them(sim_run, tmp_path, capsys):
    """--control runs guidance and control on the replayed estimate, open loop. On the run's own estimate it
    asks for what the boat asked for (the same code on the same inputs; it starts its mission at the first
    logged AUTO row, a few cycles after the boat did); with a looser filter the commands move with the
    estimate."""
    run_dir, _sim = sim_run
    assert main(["log", "replay", str(run_dir), "--control", "--out", str(tmp_path / "own")]) == 0
    assert "guidance and control re-run open loop" in capsys.readouterr().out
    (own,) = list((tmp_path / "own").iterdir())
    orig, rep = read_run(run_dir), read_run(own)
    auto = np.array([m == "AUTO" for m in orig["mode"]]) & np.isfinite(orig["heading_ref_deg"])
    assert auto.sum() > 100
    dpsi = np.abs((rep["heading_ref_deg"] - orig["heading_ref_deg"] + 180.0) % 360.0 - 180.0)[auto]
    assert np.median(dpsi) < 0.5 and np.all(np.isfinite(dpsi)), np.max(dpsi)
    yaw_span = np.ptp(orig["yaw_moment_nm"][auto])
    assert np.median(np.abs(rep["yaw_moment_nm"] - orig["yaw_moment_nm"])[auto]) < 0.05 * yaw_span
    tuning = tmp_path / "loose.yaml"
    tuning.write_text("pos_noise_mps: 0.05\nspeed_noise_floor_mps: 0.5\nheading_floor_rad: 0.05\n")
    assert main(["log", "replay", str(run_dir), "--control", "--ekf-tuning", str(tuning),
                 "--out", str(tmp_path / "loose")]) == 0
    (loose,) = list((tmp_path / "loose").iterdir())
    other = read_run(loose)
    moved = np.abs((other["heading_ref_deg"] - orig["heading_ref_deg"] + 180.0) % 360.0 - 180.0)[auto]
    assert np.max(moved) > np.max(dpsi) and np.array_equal(other["thrust_n_0"], orig["thrust_n_0"])


def test_control_replay_turns_where_the_boat_did_on_a_hull_that_turns_slower_than_its_file(tmp_path):
    """Guidance begins its corners by the turn rate it measured and the drift it estimated: the open-loop
    replay measures the same from the recorded yaw moment and the replayed filter, so it switches waypoints
    when the boat did (planned on the file's rate with no drift, its third switch came 14 s late)."""
    from autopilot.vocab.config import load_vessel
    from hil.sim.environment import EnvironmentConfig
    from hil.sim.plant_spec import PlantSpec
    spec = PlantSpec.resolve(load_vessel("iacquabot"), 1, mismatch={"n_r": 2.5})
    weather = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2,
                                current_toward_deg=0.0, wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)
    run_dir, _sim = logged_sim(tmp_path / "runs", duration_s=200.0, seed=1, vessel_file="iacquabot",
                               plant_spec=spec, env=weather, gps_noise="white")
    assert main(["log", "replay", str(run_dir), "--control", "--out", str(tmp_path / "rep")]) == 0
    (rep,) = list((tmp_path / "rep").iterdir())
    orig, again = read_run(run_dir), read_run(rep)
    auto = np.array([m == "AUTO" for m in orig["mode"]])
    t = orig["time_s"][auto]

    def switches(wp):
        return {int(wp[i]): t[i] for i in range(1, len(wp)) if wp[i] != wp[i - 1]}

    flown, replayed = switches(orig["waypoint_index"][auto]), switches(again["waypoint_index"][auto])
    assert set(flown) == set(replayed) and len(flown) >= 3, (flown, replayed)
    for wp, t_s in flown.items():
        assert abs(replayed[wp] - t_s) < 1.0, (wp, t_s, replayed[wp])
