"""Trajectory tracking: the references, the control-point law's signs and singularity, the clock that waits for a
boat that cannot keep up, and closed-loop tracking in the simulator on a hull unlike its vessel file."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from autopilot.guidance.trajectory import (
    ControlPointTracker,
    ReferenceClock,
    circle,
    make_reference,
    read_csv_reference,
    sinusoid,
    timed_points,
)
from autopilot.vocab.config import CONFIG_DIR, ConfigError, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant_spec import PlantExtras, PlantSpec
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def test_reference_derivatives_match_the_analytic_ones():
    ref = circle(10.0, 0.055, 200.0)
    p, v, a = ref.state(30.0)
    w, th = 0.055, 0.055 * 30.0
    assert p == pytest.approx([10 * math.cos(th), 10 * math.sin(th)])
    assert v == pytest.approx([-10 * w * math.sin(th), 10 * w * math.cos(th)], rel=1e-3)
    assert a == pytest.approx([-10 * w * w * math.cos(th), -10 * w * w * math.sin(th)], rel=1e-3)
    # paper 000 Table 6's sinusoid peaks at about 0.94 m/s
    sin_ref = sinusoid(10.0, 0.06, 0.0, 6.0, 0.12, 0.0, 105.0)
    assert max(np.hypot(*sin_ref.state(t)[1]) for t in np.arange(0, 105, 0.5)) == pytest.approx(0.94, abs=0.02)


def test_control_point_law_signs_and_singularity():
    tr = ControlPointTracker(1.0, 0.5, 2.0, 1.0)
    still = np.zeros(2)
    # the boat heads north; a reference ahead asks for forward speed, one to the east (starboard) for a right turn
    u, r = tr.command(0.0, 0.0, 0.0, np.array([5.0, 0.0]), still, still)
    assert u > 0 and r == pytest.approx(0.0, abs=1e-12)
    u, r = tr.command(0.0, 0.0, 0.0, np.array([0.0, 5.0]), still, still)
    assert r > 0
    u, r = tr.command(0.0, 0.0, 0.0, np.array([-5.0, 0.0]), still, still)
    assert u < 0                                           # behind: back up (or turn, once the error is sideways)
    # on the reference, moving with it: exactly the reference's speed and turn rate
    ref = circle(10.0, 0.1, 100.0)
    p, v, a = ref.state(5.0)
    psi = math.atan2(v[1], v[0])
    u, r = tr.command(p[0], p[1], psi, p, v, a)
    assert u == pytest.approx(1.0, rel=1e-3) and r == pytest.approx(0.1, rel=1e-3)
    with pytest.raises(ValueError, match="singular at a = 0"):
        ControlPointTracker(0.0, 0.5, 2.0, 1.0)


def _kinematic_track(ref, start, heading, a=1.0, k=0.6, seconds=None, dt=0.05, vmax=2.0):
    """A unicycle (no dynamics) flown by the law; returns the CG's distance to the reference over time."""
    tr = ControlPointTracker(a, k, vmax, 1.0)
    n, e, psi = start[0], start[1], heading
    out = []
    for i in range(int((seconds or ref.duration_s) / dt)):
        p, v, acc = ref.state(i * dt)
        u, r = tr.command(n, e, psi, p, v, acc)
        n, e, psi = n + u * math.cos(psi) * dt, e + u * math.sin(psi) * dt, psi + r * dt
        out.append(math.hypot(p[0] - n, p[1] - e))
    return np.array(out)


def test_the_cg_converges_onto_the_reference_even_from_behind_and_through_a_cusp():
    ref = circle(10.0, 0.055, 200.0)
    err = _kinematic_track(ref, (12.0, -4.0), math.pi)        # off the circle, facing away from its motion
    assert err[0] > 4.0 and err[-1] < 0.05
    # a path that reverses (a cusp at t = 20 s): the boat goes out, then backs along the way back with its
    # CG 2a from the reference (the control point stays ahead of the bow); nothing blows up
    cusp = timed_points([[0, 0, 0], [20, 10, 0], [40, 0, 0]])
    err = _kinematic_track(cusp, (0.0, 0.0), 0.0, a=1.0)
    assert np.all(np.isfinite(err)) and np.max(err[:int(19.5 / 0.05)]) < 0.05 and np.max(err) < 2.0 * 1.0 + 0.1


def test_the_clock_waits_for_a_boat_that_falls_behind():
    clock = ReferenceClock(2.0)
    clock.advance(0.0, 0.0)
    clock.advance(0.4, 1.0)                 # keeping up
    assert clock.tau_s == pytest.approx(0.4)
    clock.advance(0.8, 3.0)                 # 3 m behind: half speed
    assert clock.tau_s == pytest.approx(0.6)
    clock.advance(1.2, 5.0)                 # beyond twice the lag: stopped
    assert clock.tau_s == pytest.approx(0.6) and clock.time_behind_s == pytest.approx(0.6)
    clock.advance(10.0, 0.0)                # a stalled loop's gap counts as at most 0.5 s
    assert clock.tau_s == pytest.approx(1.1)


def test_timed_points_and_csv_refusals_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="times must increase"):
        timed_points([[0, 0, 0], [0, 1, 1]])
    bad = tmp_path / "track.csv"
    bad.write_text("t,north,east\n0,0,0\n5,1,x\n")
    with pytest.raises(ValueError, match=r"track.csv: line 3"):
        read_csv_reference(bad)
    good = tmp_path / "good.csv"
    good.write_text("t,north,east\n10,0,0\n20,5,0\n")
    ref = read_csv_reference(good)
    assert ref.duration_s == 10.0 and ref.position(5.0) == pytest.approx((2.5, 0.0))
    mission = tmp_path / "m.yaml"
    text = (CONFIG_DIR / "missions" / "trajectory_circle.yaml").read_text()
    mission.write_text(text.replace("kind: circle", "kind: csv\n  csv_file: missing.csv"))
    m = load_mission(mission)
    with pytest.raises(ValueError, match="missing.csv"):
        make_reference(m.trajectory, m.source_file)
    mission.write_text(text.replace("kind: circle", "kind: points\n  points: [[0, 0, 0]]"))
    with pytest.raises(ConfigError, match="trajectory.points"):
        load_mission(mission)


def _fly(kind, vessel_name="iacquabot", mismatch=None, env=None, extras=None, duration_s=None, seed=1):
    vessel = load_vessel(vessel_name)
    mission = load_mission(CONFIG_DIR / "missions" / f"trajectory_{kind}.yaml")
    if duration_s is not None:
        mission = dataclasses.replace(mission, trajectory=dataclasses.replace(mission.trajectory,
                                                                              duration_s=duration_s))
    spec = PlantSpec.resolve(vessel, seed, mismatch=mismatch, extras=extras)
    return run_sim(vessel, mission, SimOptions(seed=seed, env=env or EnvironmentConfig(), plant_spec=spec,
                                               gps_noise="white", devices="typed")).report


def test_circle_is_tracked_on_its_own_hull_and_on_a_foreign_one_in_wind_waves_and_a_constant_force():
    """1 Hz GNSS of the paper's noise, the estimate in the loop. Measured: 0.62 m on the preset's own plant;
    1.41 m on a plant drawn within x/÷1.5 in 3 m/s wind, 0.2 m waves and a 10 N push (the IAcquaBot turns at
    9 deg/s at most, and the start of tracking, before the integral has taken the push, dominates)."""
    own = _fly("circle", duration_s=80.0)["trajectory"]
    assert own["complete"] and own["pos_rmse_m"] < 0.8, own
    rep = _fly("circle", mismatch={"random": 0.5}, duration_s=80.0,
               env=EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, wave_hs_m=0.2, wave_tp_s=3.0,
                                     wave_from_deg=90.0),
               extras=PlantExtras(force_n=10.0, force_toward_deg=45.0))
    t = rep["trajectory"]
    assert t["complete"] and not rep["failsafe_events"]
    assert t["pos_rmse_m"] < 1.8 and t["time_behind_s"] < 2.0, t


def test_a_reference_the_boat_cannot_keep_up_with_is_followed_late_not_chased():
    """Half the thrust the file says: the spiral's end (1.45 m/s) is out of reach. The clock waits; the boat
    stays near the path instead of cutting across to a point it cannot reach."""
    rep = _fly("spiral", mismatch={"thrust": 0.3}, duration_s=190.0)
    t = rep["trajectory"]
    assert t["time_behind_s"] > 5.0, t
    assert t["pos_max_m"] < 3.0 * load_vessel("iacquabot").hull.length_m + 2.0, t


# ------------------------------------------------------------------------------------------ path following
def test_path_projection_cross_track_sign_and_speed_profile():
    from autopilot.guidance.trajectory import PathReference
    line = PathReference([[0, 0], [10, 10]], 0.7)
    i = line.project(5.0, 3.0)                       # north-west of the north-east line: to its port side
    assert line.s[i] == pytest.approx(4.0 * math.sqrt(2), abs=0.1)
    assert line.cross_track_m(i, 5.0, 3.0) == pytest.approx(-math.sqrt(2), abs=0.1)
    # a right-hand bend: curvature positive (to starboard), and the speed drops before it, not only in it
    bend = PathReference([[0, 0], [20, 0], [20, 20]], 1.0, max_lateral_mps2=0.05)
    k = int(np.argmax(np.abs(bend.kappa)))           # radius 4.7 m at its tightest
    assert bend.kappa[k] > 0
    assert bend.profile_mps[k] == pytest.approx(math.sqrt(0.05 / bend.kappa[k]), rel=0.01)
    assert bend.profile_mps[k] < 0.6 and bend.profile_mps[0] == pytest.approx(1.0)
    before = int(np.searchsorted(bend.s, bend.s[k] - 2.0))
    assert bend.profile_mps[before] < 1.0
    with pytest.raises(ValueError, match="the same"):
        PathReference([[0, 0], [0, 0], [5, 5]], 0.7)


def test_table8_run_converges_onto_the_diagonal_path_and_holds_its_speed_against_the_push():
    """Paper 000 Table 8, run 2 (start [15, 10] heading 30, 12.5 N toward 45 deg), on a plant drawn within
    x/÷1.5 of the file: it leans into the push and keeps the path and the speed."""
    vessel = load_vessel("iacquabot")
    mission = load_mission(CONFIG_DIR / "missions" / "path_diagonal.yaml")
    from autopilot.vocab.config import PointConfig
    mission = dataclasses.replace(mission, start=dataclasses.replace(
        mission.start, point=PointConfig(north_m=15.0, east_m=10.0), heading_deg=30.0))
    spec = PlantSpec.resolve(vessel, 1, mismatch={"random": 0.5},
                             extras=PlantExtras(force_n=12.5, force_toward_deg=45.0))
    rep = run_sim(vessel, mission, SimOptions(seed=1, plant_spec=spec, gps_noise="white", devices="typed")).report
    p = rep["path"]
    assert p["complete"] and not rep["failsafe_events"], p
    assert p["path_err_last_quarter_rms_m"] < 0.6 and p["speed_err_last_quarter_rms_mps"] < 0.1, p


@pytest.mark.parametrize("vessel_name", ["foka", "wamv"])
def test_circle_on_the_other_presets_own_and_foreign_hulls(vessel_name):
    """Measured (60 s of the circle, 1 Hz GNSS): FOKA 0.43 / 0.85 m, WAM-V 0.73 / 1.09 m on its own / a
    x/÷1.5-drawn plant; the estimate's own error is 0.6-0.85 m there."""
    for mismatch, bound in ((None, 1.0), ({"random": 0.5}, 1.5)):
        t = _fly("circle", vessel_name=vessel_name, mismatch=mismatch, duration_s=60.0)["trajectory"]
        assert t["complete"] and t["pos_rmse_m"] < bound and t["time_behind_s"] < 1.0, (mismatch, t)


@pytest.mark.parametrize("law", ["los", "ilos"])
def test_a_curved_path_is_followed_with_line_of_sight_on_its_local_tangent(law):
    """path_law los / ilos: the guidance laws of straight legs on the spline's local tangent, through the
    heading and speed loops. Measured on this S-bend (calm, own plant, last quarter): control point 0.30 m,
    LOS 0.38 m, ILOS 0.66 m of path error."""
    from autopilot.vocab.config import PointConfig
    vessel = load_vessel("iacquabot")
    mission = load_mission(CONFIG_DIR / "missions" / "path_diagonal.yaml")
    curve = ((0.0, 0.0), (20.0, 10.0), (30.0, 30.0), (20.0, 50.0), (0.0, 60.0))
    mission = dataclasses.replace(
        mission, trajectory=dataclasses.replace(mission.trajectory, path_law=law, path_points=curve),
        start=dataclasses.replace(mission.start, point=PointConfig(north_m=0.0, east_m=-5.0), heading_deg=30.0))
    rep = run_sim(vessel, mission, SimOptions(seed=1, gps_noise="white", devices="typed")).report
    p = rep["path"]
    assert p["complete"] and p["path_err_last_quarter_rms_m"] < 1.0, p
