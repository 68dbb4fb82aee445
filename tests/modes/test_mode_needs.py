"""What each mode needs is declared once (autopilot/vocab/modes.py) and honoured everywhere: VELOCITY needs the
estimate and an operator but no position, so the failsafes leave it alone when GNSS goes and stop it when the
IMU goes, and arming in it waits for the estimate's checks; MANUAL needs none of them."""
import dataclasses

import pytest

from autopilot.safety.actions import Action
from autopilot.safety.failsafe import DRIVEN, ESTIMATED, NAVIGATING, FailsafeManager
from autopilot.vehicle import Autopilot
from autopilot.vocab.config import load_vessel
from autopilot.vocab.modes import ModeName, Needs, modes_that
from estimation.heading.mag_calibration import MagCalibration
from tests.support.failsafe_rig import CFG, health, run
from tests.support.prearm_rig import MISSION, Esc, FakeEstimator


def test_velocity_needs_the_estimate_and_an_operator_but_no_position():
    assert ModeName.VELOCITY.needs == Needs(estimate=True, operator=True)
    assert ModeName.VELOCITY not in NAVIGATING and ModeName.VELOCITY in ESTIMATED and ModeName.VELOCITY in DRIVEN
    assert ModeName.MANUAL.needs == Needs(operator=True) and ModeName.HOLD.needs == Needs(drives=False)
    # the failsafe's sets are read from the declarations, not written again
    assert NAVIGATING == modes_that(position=True) and ESTIMATED == modes_that(estimate=True)


def test_a_mode_that_needs_a_position_but_no_estimate_cannot_be_declared():
    with pytest.raises(ValueError):
        Needs(position=True)
    with pytest.raises(ValueError):
        Needs(operator=True, drives=False)


def _gnss_lost_at(t_lost):
    def h(t):
        return health(t) if t < t_lost else health(t, since_gps=t - t_lost, invalid=int(t - t_lost),
                                                    accepted=int(t_lost))
    return h


@pytest.mark.parametrize("mode, acts", [(ModeName.VELOCITY, False), (ModeName.MANUAL, False),
                                        (ModeName.AUTO, True)])
def test_a_gnss_loss_acts_only_in_the_modes_that_need_a_position(mode, acts):
    out = run(FailsafeManager(CFG), 0.0, 90.0, mode, _gnss_lost_at(10.0))
    actions = {tr.action for _, tr in out if tr.kind == "gps-loss"}
    assert actions, out
    assert (actions != {Action.NONE}) == acts, actions


@pytest.mark.parametrize("mode, expect", [(ModeName.VELOCITY, Action.HOLD), (ModeName.MANUAL, Action.NONE)])
def test_an_imu_loss_stops_the_modes_that_steer_on_the_estimate(mode, expect):
    def h(t):
        return health(t) if t < 5.0 else health(t, since_imu=t - 5.0)
    out = run(FailsafeManager(CFG), 0.0, 10.0, mode, h)
    assert [tr.action for _, tr in out if tr.kind == "imu-loss"][:1] == [expect], out


def _autopilot(tmp_path):
    path = tmp_path / "mission.yaml"
    path.write_text(MISSION)
    est = FakeEstimator()
    from autopilot.vocab.config import load_mission
    ap = Autopilot(load_vessel("foka"), load_mission(path), estimator=est, mag_calibration=MagCalibration(),
                   actuator=Esc())
    return ap, est


def test_arming_in_velocity_waits_for_the_estimate_and_in_manual_does_not(tmp_path):
    ap, est = _autopilot(tmp_path)
    est.h = dataclasses.replace(est.h, converged=False, pos_std_m=3.0)
    assert ap.prearm_failures(1.0, ModeName.VELOCITY), "VELOCITY needs the estimate's checks"
    assert ap.prearm_failures(1.0, ModeName.MANUAL) == []
    assert ap.prearm_failures(1.0, "MANUAL") == []                 # a name as text is the same mode


def test_every_mode_the_vehicle_has_is_a_declared_mode(tmp_path):
    ap, _ = _autopilot(tmp_path)
    assert set(ap.modes) == set(ModeName)
    for name, mode in ap.modes.items():
        assert mode.name is ModeName(name)
    with pytest.raises(ValueError, match="unknown mode 'BRAKE'"):
        ap.set_mode("BRAKE", "an operator")                      # a failsafe stage: not selectable
