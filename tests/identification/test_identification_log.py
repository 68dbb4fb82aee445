"""What a run log gives an identification: the columns a fit reads, written by the simulator's run log through
the real drivers, and the thrust the ESCs actually output (their slew included), without which the yaw terms
come out wrong."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from autopilot.identification.runs import load_ident_run
from autopilot.runlog import read_run
from autopilot.runlog.sim_log import SimRunLog
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from estimation.identification.hull_least_squares import IdentificationError, fit_hull, smoothed, zeta_of_hull
from hil.sim.environment import EnvironmentConfig
from hil.sim.excitation import excitation
from hil.sim.runner import SimOptions, run_sim


@pytest.fixture(scope="module")
def foka_run(tmp_path_factory):
    """FOKA driven in MANUAL by a scripted operator through the identification excitation, logged at 50 Hz."""
    vessel = load_vessel("foka")
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    t_in, x_in, n_in = excitation(vessel, seed=1)
    t0 = 5.0

    def operator(t, ap, truth):
        k = int((t - t0) / (t_in[1] - t_in[0]))
        surge, yaw = (x_in[k], n_in[k]) if 0 <= k < len(t_in) else (0.0, 0.0)
        ap.operator_command(t, surge / ap.manual.max_surge_n, yaw / ap.manual.max_yaw_nm)

    log = SimRunLog(vessel, mission, tmp_path_factory.mktemp("logs"), 50.0)
    run_sim(vessel, mission, SimOptions(seed=1, env=EnvironmentConfig(), duration_s=t0 + t_in[-1],
                                        initial_mode="MANUAL", on_cycle=operator, on_result=log.on_result))
    log.close()
    return vessel, log.log.run_dir


@pytest.mark.slow
def test_the_log_has_the_imu_gnss_and_applied_thrust_columns(foka_run):
    vessel, run_dir = foka_run
    run = read_run(run_dir)
    c = run.columns
    assert len(run) > 50 * 200                                         # 50 Hz over the excitation
    armed = c["armed"] > 0.5
    gyro_err = np.nanstd(c["gyro_z_dps"][armed] - c["truth_yaw_rate_dps"][armed])
    assert gyro_err < 1.0                                              # deg/s: the gyro, not the estimate
    fixes = np.isfinite(c["gnss_north_m"])
    duration = c["time_s"][-1] - c["time_s"][0]
    assert abs(fixes.sum() - duration * vessel.sensors.gnss.rate_hz) < 5      # each fix in exactly one row
    assert np.sqrt(np.mean((c["gnss_north_m"][fixes] - c["truth_north_m"][fixes]) ** 2)) < 4.0
    assert np.nanmax(c["truth_surge_mps"]) > 0.5
    # the ESCs slew: at the excitation's steps the applied thrust lags the commanded one
    gap = np.abs(c["applied_thrust_n_0"] - c["thrust_n_0"])
    assert np.nanmax(gap) > 5.0 and np.nanmedian(gap[armed]) < 0.5


def test_true_velocities_and_the_applied_thrust_identify_the_hull(foka_run):
    vessel, run_dir = foka_run
    truth = zeta_of_hull(vessel.hull)
    run = load_ident_run(run_dir, vessel, velocities="truth")
    fit = fit_hull(smoothed(run.data, 1.0), require=())
    err = np.abs(fit.zeta - truth) / truth
    assert np.all(err[[0, 1, 2, 4]] < 0.03), np.round(100 * err, 1)    # the masses and surge drag
    # the commanded thrust (no slew) instead: the yaw inertia is off by far more
    cols = read_run(run_dir).columns
    commanded = dataclasses.replace(run.data, n_nm=_yaw_moment(vessel, cols, run.data.t_s))
    bad = fit_hull(smoothed(commanded, 1.0), require=())
    assert abs(bad.zeta[2] - truth[2]) / truth[2] > 3 * err[2]


def _yaw_moment(vessel, cols, t_rel):
    from autopilot.identification.runs import _lagged, _longest_armed_stretch
    rows = _longest_armed_stretch(cols)
    thrust = np.stack([cols[f"thrust_n_{i}"][rows] for i in range(len(vessel.thrusters))], axis=1)
    thrust = _lagged(thrust, cols["time_s"][rows], [th.time_constant_s for th in vessel.thrusters])
    return -(thrust * np.array([th.y_m for th in vessel.thrusters])).sum(axis=1)


@pytest.mark.slow
def test_the_smoother_beats_the_model_aided_estimate_on_the_surge_mass(foka_run):
    """The EKF predicts with the vessel file's hull, so its velocities hide the hull's own dynamics; the
    kinematic smoother (GNSS + accelerometer + heading) does not lean on the file."""
    vessel, run_dir = foka_run
    truth = zeta_of_hull(vessel.hull)
    errs = {}
    for source in ("smoother", "estimate"):
        fit = fit_hull(smoothed(load_ident_run(run_dir, vessel, velocities=source).data, 1.0), require=())
        errs[source] = abs(fit.zeta[0] - truth[0]) / truth[0]
    assert errs["smoother"] < 0.5 * errs["estimate"], errs


def test_logs_that_cannot_identify_are_refused_with_the_reason(foka_run, tmp_path):
    vessel, run_dir = foka_run
    with pytest.raises(IdentificationError, match="not a run directory"):
        load_ident_run(tmp_path, vessel)
    slow = tmp_path / "slow"
    slow.mkdir()
    lines = (run_dir / "state.csv").read_text().splitlines()
    (slow / "state.csv").write_text("\n".join([lines[0]] + lines[1::25]) + "\n")       # 2 Hz
    with pytest.raises(IdentificationError, match="logged at 2.0 Hz"):
        load_ident_run(slow, vessel)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "state.csv").write_text(lines[0] + "\n" + "\n".join(
        ",".join("garbage" for _ in lines[0].split(",")) for _ in range(300)) + "\n")
    os.mkfifo(damaged / "events.jsonl")                                                # would block a reader
    with pytest.raises(IdentificationError, match="0 rows \\(300 damaged lines skipped\\)"):
        load_ident_run(damaged, vessel)
    wamv = load_vessel("wamv")
    other = dataclasses.replace(wamv, thrusters=wamv.thrusters * 2)                       # 4 thrusters
    with pytest.raises(IdentificationError, match="4 thrusters"):
        load_ident_run(run_dir, other)


def test_a_run_of_three_sets_fits_the_first_two_and_validates_on_the_third():
    """`sets: 3`: the fit gets both first sets (their segments, times from its own start), the validation only
    the last, cut where its first segment starts."""
    from autopilot.identification.runs import IdentRun, split_last_set
    from estimation.identification.hull_least_squares import RunData
    t = np.arange(0.0, 30.0, 0.5)
    z = np.zeros_like(t)
    run = IdentRun("r", RunData(t, t.copy(), z, z, z, z, z), t.copy(), z, z, "truth", 2.0,
                   segment_starts_s=((1.0, 1), (5.0, 1), (11.0, 2), (21.0, 3), (25.0, 3)),
                   segment_ends_s=(4.0, 9.0, 19.0, 24.0, 29.0))
    fit, val = split_last_set(run)
    assert fit.name == "r (sets 1-2)" and val.name == "r (set 3)"
    assert [k for _, k in fit.segment_starts_s] == [1, 1, 2] and fit.data.t_s[-1] == 20.5
    assert val.segment_starts_s == ((0.0, 3), (4.0, 3)) and val.segment_ends_s == (3.0, 8.0)
    assert val.north_m[0] == 21.0 and len(fit.data.t_s) + len(val.data.t_s) == len(t)
    assert split_last_set(dataclasses.replace(run, segment_starts_s=((1.0, 1), (5.0, 1)))) is None
