"""Arming: the pre-arm checks refuse with one named reason per failed check, pass when everything holds, and
the simulator arms only once they pass."""
import dataclasses
import math

import pytest

from autopilot.vehicle import Autopilot
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from autopilot.vocab.types import SensorBatch
from estimation.heading.mag_calibration import MagCalibration
from hil.sim.faults import parse_fault
from hil.sim.runner import SimArmingError, SimOptions, run_sim
from tests.support.prearm_rig import MISSION, Esc, FakeEstimator, fix

FENCE = """geofence:
  - {north_m: -20.0, east_m: -20.0}
  - {north_m: 60.0, east_m: -20.0}
  - {north_m: 60.0, east_m: 50.0}
  - {north_m: -20.0, east_m: 50.0}
"""


def make(tmp_path, mission_text=MISSION, vessel=None, calibration=MagCalibration(), actuator="ok"):
    path = tmp_path / "mission.yaml"
    path.write_text(mission_text)
    est = FakeEstimator()
    ap = Autopilot(vessel or load_vessel("foka"), load_mission(path), estimator=est, mag_calibration=calibration,
                   actuator=Esc() if actuator == "ok" else actuator)
    ap.set_mode("AUTO", "test")
    return ap, est


def step(ap, t, gps=None):
    return ap.step(t, SensorBatch(gps=[gps] if gps is not None else []))


def refused(ap, t, expect):
    res = ap.arm(t)
    assert not res and not ap.armed
    assert any(expect in r for r in res.reasons), res.reasons
    assert ap.events[-1].kind == "warning" and "arming refused in AUTO" in ap.events[-1].message
    return res.reasons


def test_arms_in_auto_when_every_check_passes_and_sets_home(tmp_path):
    ap, est = make(tmp_path)
    step(ap, 1.0, fix(1.0))
    assert ap.prearm_failures(1.0) == []
    res = ap.arm(1.0)
    assert res and res.armed and res.message == "armed" and ap.armed
    armed = [e for e in ap.events if e.kind == "arm"]
    assert ap.home_ned == (0.0, 0.0) and armed[-1].message.startswith("armed in AUTO; home")
    # the presets were never validated against data from a boat: arming says so
    assert ap.events[-1].kind == "warning" and "never validated" in ap.events[-1].message
    out = step(ap, 1.02, fix(1.02))
    assert out.armed and out.mode == "AUTO" and out.setpoint is not None


@pytest.mark.parametrize("gps, expect", [
    (None, "GNSS: no fix received yet"),
    (fix(1.0, valid=False, fix_quality=0), "GNSS: the receiver reports no position fix"),
    (fix(1.0, hdop=3.4), "GNSS: HDOP 3.4 is above the allowed 2.5"),
    (fix(1.0, sats=4), "GNSS: 4 satellites, 6 required"),
    (fix(-5.0), "GNSS: no fix for 6.0 s"),
])
def test_gnss_refusals_name_the_problem(tmp_path, gps, expect):
    ap, _ = make(tmp_path)
    step(ap, 1.0, gps)
    refused(ap, 1.0, expect)


def test_dgps_can_be_required(tmp_path):
    v = load_vessel("foka")
    v = dataclasses.replace(v, failsafe=dataclasses.replace(
        v.failsafe, arming=dataclasses.replace(v.failsafe.arming, min_fix_quality=2)))
    ap, _ = make(tmp_path, vessel=v)
    step(ap, 1.0, fix(1.0))
    refused(ap, 1.0, "GNSS: fix quality 1 is below the required 2")
    step(ap, 2.0, fix(2.0, fix_quality=2))
    assert ap.arm(2.0)


@pytest.mark.parametrize("change, expect", [
    (dict(converged=False, pos_std_m=4.2), "EKF: not converged (position std 4.2 m"),
    (dict(valid=False), "EKF: no position and heading estimate yet"),
    (dict(since_imu_s=2.0), "IMU: no gyro data reaching the filter for 2.0 s"),
    (dict(since_imu_s=math.inf), "IMU: no gyro data reaching the filter yet"),
    (dict(since_mag_s=9.5), "magnetometer: no accepted heading for 9.5 s"),
])
def test_estimator_and_imu_refusals(tmp_path, change, expect):
    ap, est = make(tmp_path)
    est.h = dataclasses.replace(est.h, **change)
    step(ap, 1.0, fix(1.0))
    refused(ap, 1.0, expect)


def test_esc_output_must_be_attached_connected_and_done_arming(tmp_path):
    for actuator, expect in ((None, "ESC output: no actuator attached"), (Esc(connected=False), "not connected"),
                             (Esc(ready=False), "still in their arming sequence")):
        ap, _ = make(tmp_path, actuator=actuator)
        step(ap, 1.0, fix(1.0))
        refused(ap, 1.0, expect)


def test_magnetometer_calibration_present_and_readable(tmp_path, repo_root):
    ap, _ = make(tmp_path, calibration=None)          # foka's config names no calibration file
    step(ap, 1.0, fix(1.0))
    refused(ap, 1.0, "run `autopilot calibrate mag`")
    base = (repo_root / "config/vessels/foka.yaml").read_text()
    vfile = tmp_path / "foka_cal.yaml"
    vfile.write_text(base.replace("    inclination_deg: 67.0\n",
                                  "    inclination_deg: 67.0\n    calibration_file: mag_cal.yaml\n"))
    (tmp_path / "mag_cal.yaml").write_text("method: 2d\noffset_t: [1.0e-6, -2.0e-6, 0.0]\n"
                                           "matrix: [[1.02, 0, 0], [0, 0.98, 0], [0, 0, 1]]\n")
    ap, _ = make(tmp_path, vessel=load_vessel(str(vfile)), calibration=None)
    step(ap, 1.0, fix(1.0))
    assert ap.arm(1.0)
    (tmp_path / "mag_cal.yaml").write_text(
        "method: 2d\noffset_t: [1.0, 2.0]\nmatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n"
    )
    ap, _ = make(tmp_path, vessel=load_vessel(str(vfile)), calibration=None)
    step(ap, 1.0, fix(1.0))
    reasons = refused(ap, 1.0, "magnetometer calibration:")
    assert any("mag_cal.yaml" in r and "offset_t" in r for r in reasons), reasons


def test_invalid_mission_and_launch_outside_the_fence_are_refused(tmp_path):
    bad = MISSION.replace("{north_m: 40.0, east_m: 30.0}", "{north_m: 40.0, east_m: 80.0}") + FENCE
    ap, _ = make(tmp_path, mission_text=bad)
    step(ap, 1.0, fix(1.0))
    refused(ap, 1.0, "config: ")
    assert any("waypoints[1]: outside the geofence by 30.0 m" in r for r in ap.prearm_failures(1.0))
    ap, est = make(tmp_path, mission_text=MISSION + FENCE)
    est.nav = dataclasses.replace(est.nav, north_m=-25.0)
    step(ap, 1.0, fix(1.0))
    refused(ap, 1.0, "launch point: outside the geofence by 5.0 m")
    est.nav = dataclasses.replace(est.nav, north_m=-15.0)
    step(ap, 2.0, fix(2.0))
    assert ap.arm(2.0)


def test_every_failing_check_is_listed_at_once(tmp_path):
    ap, est = make(tmp_path, calibration=None, actuator=Esc(connected=False))
    est.h = dataclasses.replace(est.h, converged=False, since_imu_s=3.0)
    step(ap, 1.0, None)
    reasons = ap.prearm_failures(1.0)
    assert [r.split(":")[0] for r in reasons] == ["ESC output", "GNSS", "EKF", "IMU", "magnetometer calibration"]


def test_hold_arms_without_navigation_and_a_navigating_mode_waits_for_its_checks(tmp_path):
    ap, est = make(tmp_path)
    ap.set_mode("HOLD", "test")
    est.h = dataclasses.replace(est.h, converged=False, pos_std_m=3.0)
    step(ap, 1.0, None)
    assert ap.arm(1.0) and ap.mode.name == "HOLD"
    ap.set_mode("AUTO", "operator")
    for k in range(20):                               # no fix, filter not converged: AUTO waits, neutral
        out = step(ap, 1.1 + 0.02 * k, None)
        assert out.mode == "AUTO" and out.setpoint is None and out.thrust.thrust_n == (0.0, 0.0)
    waiting = [e for e in ap.events if "waiting for navigation" in e.message]
    assert len(waiting) == 1 and "GNSS: no fix received yet" in waiting[0].message
    est.h = dataclasses.replace(est.h, converged=True, pos_std_m=0.6)
    for k in range(10):
        out = step(ap, 1.6 + 0.02 * k, fix(1.6 + 0.02 * k))
    assert out.setpoint is not None
    assert any("navigation checks passed" in e.message for e in ap.events)


def test_the_simulator_arms_once_the_checks_pass():
    res = run_sim(load_vessel("foka"), load_mission(CONFIG_DIR / "missions/demo.yaml"),
                  SimOptions(seed=1, gps_noise="white", duration_s=15))
    arm = [e for e in res.events if e.kind == "arm"]
    assert len(arm) == 1 and arm[0].time_s >= 3.0       # not before the ESCs' 3 s arming sequence
    assert res.report["armed_at_s"] == pytest.approx(arm[0].time_s)
    k_arm = int(round(arm[0].time_s * 50)) - 1
    assert not res.thrust_n[:k_arm].any() and res.thrust_n[k_arm + 50:].any()


def test_a_simulation_that_cannot_arm_fails_with_the_reason():
    with pytest.raises(SimArmingError) as e:
        run_sim(load_vessel("foka"), load_mission(CONFIG_DIR / "missions/demo.yaml"),
                SimOptions(seed=1, gps_noise="white", duration_s=30, arm_timeout_s=10.0,
                           faults=(parse_fault("gps-loss@0"),)))
    assert "not armed within 10 s" in str(e.value) and "GNSS: the receiver reports no position fix" in str(e.value)


def test_a_named_calibration_not_written_yet_refuses_the_navigating_modes_only(tmp_path):
    """The first day: the vessel names its calibration file, which does not exist. Arming is refused in exactly
    the modes `modes_refused_without_mag_calibration` lists (what `autopilot check` and docs/first-day.md say), and
    allowed in the others; a refused mode chosen after arming in MANUAL waits at neutral."""
    from autopilot.safety.prearm import modes_refused_without_mag_calibration
    from autopilot.vocab.modes import ModeName
    from tests.support.boat_files import boat_files
    _, vfile, cal = boat_files(tmp_path)
    vessel = load_vessel(str(vfile))
    refused_modes = set(modes_refused_without_mag_calibration())
    assert refused_modes == {ModeName.AUTO, ModeName.LOITER, ModeName.RTL, ModeName.VELOCITY, ModeName.GUIDED}
    first_day = (f"magnetometer calibration: {cal} does not exist yet (sensors.mag.calibration_file of {vfile}): "
                 f"running on raw readings; arm in CALIBRATE_ON_WATER to fly two circles and write it, or run "
                 f"`autopilot calibrate mag`")
    for mode in (m for m in ModeName if m.needs.selectable):
        ap, _ = make(tmp_path, vessel=vessel, calibration=None)
        step(ap, 1.0, fix(1.0))
        reasons = ap.prearm_failures(1.0, mode)       # RTL cannot be chosen before arming (no home yet)
        if mode in refused_modes:
            assert reasons == [first_day], mode
        else:
            assert reasons == [], (mode, reasons)
            ap.set_mode(mode, "test")
            assert ap.arm(1.0), mode
    ap, _ = make(tmp_path, vessel=vessel, calibration=None)
    step(ap, 1.0, fix(1.0))
    assert not ap.arm(1.0)                            # make() asks for AUTO
    ap.set_mode("MANUAL", "test")
    assert ap.arm(1.0)
    ap.set_mode("AUTO", "operator")
    for k in range(10):
        out = step(ap, 1.02 + 0.02 * k, fix(1.02 + 0.02 * k))
        assert out.mode == "AUTO" and out.setpoint is None and out.thrust.thrust_n == (0.0, 0.0)
    assert any("AUTO waiting for navigation: magnetometer calibration: " in e.message for e in ap.events)
