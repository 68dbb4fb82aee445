"""Modes: MANUAL from operator commands with a time-out, LOITER's law, RTL, BRAKE, mode requests and their
log, and what AUTO does at the end of a mission."""
import dataclasses
import math

import numpy as np
import pytest

from autopilot.modes.heading_hold import HeadingHoldMode
from autopilot.modes.loiter import LoiterMode
from autopilot.modes.rtl import RtlMode
from autopilot.vehicle import Autopilot
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import load_mission, load_vessel
from autopilot.vocab.types import NavState, SensorBatch
from estimation.heading.mag_calibration import MagCalibration
from hil.sim.runner import SimOptions, run_sim
from tests.support.prearm_rig import MISSION, Esc, FakeEstimator, fix

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def nav(n=0.0, e=0.0, psi=0.0, u=0.0, t=0.0):
    return NavState(t, n, e, psi, u, 0.0, 0.0)


def autopilot(tmp_path, mission_text=MISSION):
    path = tmp_path / "mission.yaml"
    path.write_text(mission_text)
    est = FakeEstimator()
    return Autopilot(load_vessel("foka"), load_mission(path), estimator=est, mag_calibration=MagCalibration(),
                     actuator=Esc()), est


# ------------------------------------------------------------------------------------------ MANUAL
def test_manual_drives_from_operator_commands_and_goes_neutral_when_they_stop(tmp_path):
    ap, _ = autopilot(tmp_path)
    ap.set_mode("manual", "operator takes the helm")
    ap.step(0.02, SensorBatch())
    assert ap.arm(0.02) and ap.mode.name == "MANUAL"
    ap.operator_command(0.1, 0.5, 0.0)
    out = ap.step(0.12, SensorBatch())
    assert out.wrench.surge_n == pytest.approx(0.5 * ap.allocator.max_surge_n) and out.wrench.yaw_nm == 0.0
    assert all(f > 0 for f in out.thrust.thrust_n)
    ap.operator_command(0.2, -1.0, 0.0)
    assert ap.step(0.22, SensorBatch()).wrench.surge_n == pytest.approx(ap.allocator.min_surge_n)
    ap.operator_command(0.3, 0.0, 3.0)                       # clamped to full starboard
    out = ap.step(0.32, SensorBatch())
    assert out.wrench.yaw_nm == pytest.approx(ap.allocator.max_yaw_nm)
    assert out.thrust.thrust_n[0] > out.thrust.thrust_n[1]   # port thruster pushes: turn to starboard
    # no command for the 1 s time-out: neutral, reported once
    for k in range(80):
        out = ap.step(0.34 + 0.02 * k, SensorBatch())
    assert out.thrust.thrust_n == (0.0, 0.0) and out.armed
    timeouts = [e for e in ap.events if "no operator command for 1 s" in e.message]
    assert len(timeouts) == 1 and timeouts[0].kind == "warning" and timeouts[0].time_s == pytest.approx(1.32, abs=0.03)
    with pytest.raises(ValueError, match="finite"):
        ap.operator_command(2.0, math.nan, 0.0)


def test_mode_requests_are_checked_and_each_change_is_logged_with_its_reason(tmp_path):
    ap, _ = autopilot(tmp_path)
    with pytest.raises(ValueError, match="unknown mode 'DRIFT'; known: MANUAL, HOLD, LOITER, AUTO, RTL"):
        ap.set_mode("DRIFT", "x")
    with pytest.raises(ValueError, match="unknown mode 'BRAKE'"):      # a failsafe stage, not a mode to pick
        ap.set_mode("BRAKE", "x")
    with pytest.raises(ValueError, match="RTL refused: no home yet"):
        ap.set_mode("RTL", "x")
    ap.set_mode("LOITER", "operator: wait here")
    ap.step(0.02, SensorBatch())
    assert ap.events[-1].kind == "mode" and ap.events[-1].message == "HOLD -> LOITER: operator: wait here"


def test_a_navigating_mode_chosen_while_armed_is_refused_during_an_imu_failsafe(tmp_path):
    ap, est = autopilot(tmp_path)
    ap.set_mode("HOLD", "x")
    ap.step(0.02, SensorBatch())
    assert ap.arm(0.02)
    est.h = dataclasses.replace(est.h, since_imu_s=1.0)
    for k in range(10):
        ap.step(0.04 + 0.02 * k, SensorBatch())
    with pytest.raises(ValueError, match="mode AUTO refused: imu-loss failsafe active"):
        ap.set_mode("AUTO", "operator")
    ap.set_mode("MANUAL", "operator")                       # driving by hand needs no heading estimate
    ap.step(0.3, SensorBatch())
    assert ap.mode.name == "MANUAL"


# ------------------------------------------------------------------------------------------ LOITER law
def loiter(drift=(0.0, 0.0)):
    m = LoiterMode(radius_m=2.0, max_speed_mps=0.4, drift_fn=lambda: drift)
    m.set_center(0.0, 0.0)
    m.enter(0.0, nav(psi=1.0))
    return m


def test_loiter_points_into_the_drift_and_stands_still_at_the_centre():
    sp = loiter(drift=(0.0, 0.3)).update(0.0, nav(psi=-math.pi / 2))    # drift toward east
    assert sp.setpoint.heading_rad == pytest.approx(-math.pi / 2, abs=1e-6)   # bow west, into it
    assert sp.setpoint.speed_mps == pytest.approx(0.0, abs=1e-9)              # still over ground


def test_loiter_corrects_along_the_heading_without_turning_round():
    m = loiter(drift=(0.0, 0.3))
    down = m.update(0.0, nav(e=1.5, psi=-math.pi / 2))        # pushed downstream: drive ahead
    up = m.update(0.0, nav(e=-1.5, psi=-math.pi / 2))         # overshot upstream: back off
    assert down.setpoint.speed_mps > 0.1 and up.setpoint.speed_mps < -0.1
    for sp in (down, up):                                     # still facing the drift either way
        assert abs(sp.setpoint.heading_rad + math.pi / 2) < math.radians(30)
    side = m.update(0.0, nav(n=-1.5, psi=-math.pi / 2))       # south of the centre: crab north
    assert 0.0 < math.degrees(side.setpoint.heading_rad + math.pi / 2) < 60


def test_loiter_in_calm_water_holds_heading_near_the_centre_and_heads_for_it_from_afar():
    m = loiter()
    near = m.update(0.0, nav(n=0.3, e=0.2, psi=1.0))
    assert near.setpoint.heading_rad == pytest.approx(1.0) and near.setpoint.speed_mps == 0.0
    far = m.update(0.0, nav(n=-8.0, e=0.0, psi=0.0))
    assert far.setpoint.heading_rad == pytest.approx(0.0, abs=1e-6) and far.setpoint.speed_mps == pytest.approx(0.4)


def test_loiter_backs_into_the_drift_near_the_centre_and_turns_round_from_afar():
    m = LoiterMode(radius_m=2.0, max_speed_mps=0.4, drift_fn=lambda: (0.3, 0.0), astern=True)   # drift north
    m.set_center(0.0, 0.0)
    m.enter(0.0, nav(psi=0.0))
    at = m.update(0.0, nav(n=1.0, psi=0.0))                 # bow downstream, pushed 1 m past the point
    assert at.setpoint.heading_rad == pytest.approx(0.0, abs=1e-6) and at.setpoint.speed_mps < -0.1
    # hysteresis: turned 80 deg off downstream (the bow 100 deg off into-the-drift, short of the 110 that starts
    # it) it still backs ...
    assert abs(m.update(0.0, nav(n=1.0, psi=math.radians(80))).setpoint.heading_rad) < 1e-6
    # ... and within 70 deg of into-the-drift it turns bow-first
    assert abs(m.update(0.0, nav(n=1.0, psi=math.radians(115))).setpoint.heading_rad) == pytest.approx(math.pi)
    far = LoiterMode(radius_m=2.0, max_speed_mps=0.4, drift_fn=lambda: (0.3, 0.0), astern=True)
    far.set_center(0.0, 0.0)
    far.enter(0.0, nav(n=20.0, psi=0.0))
    sp = far.update(0.0, nav(n=20.0, psi=0.0))              # 10 radii out, pointing away: turn round and drive
    assert abs(sp.setpoint.heading_rad) == pytest.approx(math.pi)
    bow_first = loiter(drift=(0.3, 0.0)).update(0.0, nav(n=1.0, psi=0.0))   # astern off (the class default)
    assert abs(bow_first.setpoint.heading_rad) == pytest.approx(math.pi)     # bow into the drift


def test_loiter_does_not_steer_by_a_drift_the_estimator_does_not_know_yet():
    std, drift = [0.2], [(0.05, -0.27)]
    m = LoiterMode(radius_m=8.0, max_speed_mps=0.4, drift_fn=lambda: drift[0], drift_std_fn=lambda: std[0],
                   astern=True)
    m.set_center(0.0, 0.0)
    m.enter(0.0, nav(psi=0.0))
    # just launched: a few GNSS velocities say the drift runs west, +-0.2 m/s. Near the point the law holds the
    # heading as in calm water instead of turning the bow east against a drift that may not be there
    early = m.update(0.0, nav(n=1.0, psi=0.0))
    assert early.setpoint.heading_rad == pytest.approx(0.0) and early.setpoint.speed_mps == 0.0
    std[0] = 0.1                                              # within half its size: known, the bow into it
    known = m.update(0.0, nav(n=1.0, psi=0.0))
    assert known.setpoint.heading_rad == pytest.approx(math.atan2(0.27, -0.05))
    std[0] = 0.25                                             # a little worse again: still used (hysteresis)
    assert m.update(0.0, nav(n=1.0, psi=0.0)).setpoint.heading_rad == pytest.approx(known.setpoint.heading_rad)
    std[0], drift[0] = 0.6, (0.3, 0.0)                        # lost (GNSS gone for long) and swung north: the
    lost = m.update(0.0, nav(n=1.0, psi=0.3))                 # heading asked for is held, not turned after it
    assert lost.setpoint.heading_rad == pytest.approx(known.setpoint.heading_rad) and lost.setpoint.speed_mps == 0.0


def test_loiter_centre_is_where_the_boat_is_unless_one_was_set():
    m = LoiterMode(2.0, 0.4)
    m.enter(0.0, nav(n=5.0, e=-3.0))
    assert m.center_ned == (5.0, -3.0)
    m.set_center(1.0, 2.0)
    m.enter(1.0, nav(n=5.0, e=-3.0))
    assert m.center_ned == (1.0, 2.0)
    m.enter(2.0, nav(n=7.0, e=7.0))               # a staged centre is used once
    assert m.center_ned == (7.0, 7.0)


# ------------------------------------------------------------------------------------------ RTL, BRAKE
def test_rtl_follows_the_line_home_slows_near_it_and_finishes_there():
    home = (0.0, 0.0)
    m = RtlMode(lambda: home, speed_mps=1.0, lookahead_m=3.0, arrive_m=2.0)
    m.enter(0.0, nav(n=50.0, e=0.0))
    sp = m.update(0.0, nav(n=50.0, e=0.0)).setpoint
    assert abs(abs(sp.heading_rad) - math.pi) < 1e-6 and sp.speed_mps == 1.0 and not m.finished
    off = m.update(0.0, nav(n=30.0, e=2.0)).setpoint           # 2 m east of the line going south: steer SSW
    assert -math.pi < off.heading_rad < -math.pi / 2 and off.xte_m == pytest.approx(-2.0)
    near = m.update(0.0, nav(n=3.0, e=0.0)).setpoint
    assert near.speed_mps < 1.0
    m.update(0.0, nav(n=1.5, e=0.0))
    assert m.finished
    m2 = RtlMode(lambda: None, 1.0, 3.0, 2.0)
    m2.enter(0.0, nav(n=10.0))
    assert m2.update(0.0, nav(n=10.0)).setpoint is None and m2.finished


def test_rtl_takes_the_crab_at_the_speed_the_boat_has_been_running_at():
    """Going home due south across a drift to the east, running at 1 m/s: a dip to 0.4 m/s (a hard correction on a
    yaw-first allocator takes the thrust that made way) does not raise the crab angle to the dip's."""
    m = RtlMode(lambda: (0.0, 0.0), speed_mps=1.0, lookahead_m=3.0, arrive_m=2.0)
    m.drift_ne = (0.0, 0.2)
    m.enter(0.0, nav(n=500.0, psi=math.pi, u=1.0))

    def crab(t, u):                            # the bow's offset from due south, + toward the west (into the drift)
        return wrap_pi(m.update(t, nav(n=500.0, psi=math.pi, u=u)).setpoint.heading_rad - math.pi)

    t = 0.0
    while t < 30.0:
        running = crab(t, 1.0)
        t += 0.1
    assert running == pytest.approx(math.atan2(0.2, 1.0), abs=2e-3)
    while t < 33.0:
        dip = crab(t, 0.4)
        t += 0.1
    assert running < dip < math.atan2(0.2, 0.75)           # not the 26.6 deg of 0.4 m/s


def test_brake_holds_the_heading_at_zero_speed_and_finishes_once_stopped():
    m = HeadingHoldMode("BRAKE", 0.0)
    m.enter(0.0, nav(psi=0.7, u=1.0))
    sp = m.update(0.5, nav(psi=0.6, u=0.8)).setpoint
    assert sp.heading_rad == 0.7 and sp.speed_mps == 0.0 and not m.finished
    m.update(3.0, nav(psi=0.7, u=0.3))
    assert not m.finished
    m.update(4.0, nav(psi=0.7, u=0.05))
    assert m.finished


# ------------------------------------------------------------------------------------------ mission end
SHORT = """name: short
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start:
  point: {north_m: 0.0, east_m: 0.0}
  heading_deg: 0
waypoints:
  - {north_m: 30.0, east_m: 0.0}
  - {north_m: 30.0, east_m: 20.0}
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
loiter_radius_m: 2.0
"""


@pytest.mark.parametrize("action", ["rtl", "hold"])
def test_what_auto_does_at_the_end_of_the_mission(tmp_path, action):
    path = tmp_path / "short.yaml"
    path.write_text(SHORT + f"on_complete: {action}\n")
    res = run_sim(load_vessel("foka"), load_mission(path), SimOptions(seed=1, gps_noise="white", duration_s=220))
    modes = [e.message for e in res.events if e.kind == "mode"]
    tr = res.trace
    if action == "hold":
        assert modes[-1] == "AUTO -> HOLD: mission complete"
        t_end = [e.time_s for e in res.events if e.kind == "mode"][-1]
        assert not res.thrust_n[tr["t"] > t_end + 0.1].any()
        return
    assert modes[-2:] == ["AUTO -> RTL: mission complete", "RTL -> LOITER: home reached"]
    t_home = [e.time_s for e in res.events if e.message == "RTL -> LOITER: home reached"][0]
    assert t_home < 200.0
    late = tr["t"] > t_home + 10.0
    dist = np.hypot(tr["truth_n"][late], tr["truth_e"][late])       # home is the launch point (0, 0)
    assert np.mean(dist <= 2.0 + 0.5) > 0.95 and dist.max() < 4.0


# ------------------------------------------------------------------------------------------ VELOCITY
def test_velocity_mode_flies_speed_and_turn_rate_commands_and_goes_neutral_when_they_stop(tmp_path):
    ap, est = autopilot(tmp_path)
    ap.set_mode("velocity", "operator drives by turn rate")
    assert any("GNSS" in r for r in ap.prearm_failures(0.0))      # it feeds back the estimate: a fix is needed
    ap.step(0.02, SensorBatch(gps=[fix(0.02)]))
    assert ap.arm(0.02) and ap.mode.name == "VELOCITY"
    out = ap.step(0.04, SensorBatch())
    assert out.thrust.thrust_n == (0.0, 0.0)                 # no command yet: neutral
    for k in range(10):      # the reference model starts at the measured speed and rises smoothly
        ap.velocity_command(0.05 + 0.02 * k, 1.0, math.radians(10))
        out = ap.step(0.06 + 0.02 * k, SensorBatch())
    assert out.wrench.surge_n > 0 and out.wrench.yaw_nm > 0   # ahead, turning to starboard
    assert out.thrust.thrust_n[0] > out.thrust.thrust_n[1]
    # the gamepad's sticks in VELOCITY are a speed and a turn rate: full port steering asks to turn to port
    for k in range(20):
        ap.operator_command(0.3 + 0.02 * k, 0.5, -1.0)
        out = ap.step(0.31 + 0.02 * k, SensorBatch())
    assert out.wrench.yaw_nm < 0
    assert ap.velocity.max_yaw_rate_rps == pytest.approx(math.radians(ap.vessel.control.velocity.max_yaw_rate_dps))
    for k in range(80):                                       # 1 s without a command: neutral, said once
        out = ap.step(0.72 + 0.02 * k, SensorBatch())
    assert out.thrust.thrust_n == (0.0, 0.0) and out.armed
    assert len([e for e in ap.events if "no velocity command for 1 s" in e.message]) == 1
    with pytest.raises(ValueError, match="finite"):
        ap.velocity_command(2.0, math.nan, 0.0)


def test_velocity_command_is_refused_outside_velocity_mode(tmp_path):
    ap, _ = autopilot(tmp_path)
    ap.set_mode("manual", "operator takes the helm")
    ap.step(0.02, SensorBatch())
    with pytest.raises(ValueError, match="not VELOCITY"):
        ap.velocity_command(0.03, 1.0, 0.0)
