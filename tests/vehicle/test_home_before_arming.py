"""Before arming, the autopilot keeps the estimator's health fresh and sets home at the first good estimate (what
a ground station shows, autopilot/mavlink/), as ArduPilot does from power-on; arming moves home to where it
armed unless an operator set it (set_home, MAV_CMD_DO_SET_HOME), and the pre-arm checks still decide."""
import dataclasses

from autopilot.vehicle import Autopilot
from autopilot.vocab.config import load_mission, load_vessel
from autopilot.vocab.types import SensorBatch
from estimation.heading.mag_calibration import MagCalibration
from tests.support.prearm_rig import MISSION, Esc, FakeEstimator, fix


def _make(tmp_path):
    path = tmp_path / "mission.yaml"
    path.write_text(MISSION)
    est = FakeEstimator()
    ap = Autopilot(load_vessel("foka"), load_mission(path), estimator=est, mag_calibration=MagCalibration(),
                   actuator=Esc())
    return ap, est


def _step(ap, t):
    return ap.step(t, SensorBatch(gps=[fix(t)]))


def test_disarmed_the_health_is_refreshed_and_home_is_the_first_good_estimate_without_events(tmp_path):
    ap, est = _make(tmp_path)
    est.h = dataclasses.replace(est.h, converged=False, since_gps_s=0.2)
    est.nav = dataclasses.replace(est.nav, north_m=3.0, east_m=-1.0)
    events = len(ap.events)
    _step(ap, 1.0)
    assert ap.health is not None and not ap.health.converged and ap.health.since_gps_s == 0.2
    assert ap.home_ned is None                           # valid but not converged: not yet a good estimate
    est.h = dataclasses.replace(est.h, converged=True)
    for k in range(1, 10):
        _step(ap, 1.0 + 0.02 * k)
    assert ap.health.converged and ap.health.time_s > 1.0       # refreshed at the failsafe rate
    assert ap.home_ned == (3.0, -1.0)
    est.nav = dataclasses.replace(est.nav, north_m=4.0)
    for k in range(10, 20):
        _step(ap, 1.0 + 0.02 * k)
    assert ap.home_ned == (3.0, -1.0)                    # the first one; it moves only on arming
    assert len(ap.events) == events and not ap.armed     # no failsafe, warning or mode change while disarmed


def test_arming_moves_home_to_where_it_armed_unless_an_operator_set_it(tmp_path):
    ap, est = _make(tmp_path)
    _step(ap, 1.0)
    assert ap.home_ned == (0.0, 0.0)
    est.nav = dataclasses.replace(est.nav, north_m=6.0, east_m=2.0)     # it drifted before arming
    _step(ap, 1.02)
    assert ap.home_ned == (0.0, 0.0)
    assert ap.arm(1.02)
    assert ap.home_ned == (6.0, 2.0)
    ap.disarm(1.04, "test")
    est.nav = dataclasses.replace(est.nav, north_m=10.0, east_m=2.0)
    _step(ap, 1.06)
    assert ap.home_ned == (6.0, 2.0)                     # disarming leaves it
    ap.set_home(-5.0, 4.0)
    assert ap.arm(1.08)
    assert ap.home_ned == (-5.0, 4.0)                    # the operator's home stays (ArduPilot locks it)
    assert [e for e in ap.events if e.kind == "arm"][-1].message.endswith("home -5.0 m N, 4.0 m E")


def test_arming_still_goes_through_the_prearm_checks(tmp_path):
    ap, est = _make(tmp_path)
    est.h = dataclasses.replace(est.h, since_imu_s=5.0)
    _step(ap, 1.0)
    assert ap.home_ned == (0.0, 0.0)                     # a good position: home is known
    ap.set_mode("AUTO", "test")
    _step(ap, 1.02)
    res = ap.arm(1.04)
    assert not res and not ap.armed and any("IMU" in r or "imu" in r for r in res.reasons), res.reasons
