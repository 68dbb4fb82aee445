"""Turning before the waypoint (wheel-over): where guidance leaves a leg, and what it buys a slow-turning boat."""
import dataclasses

import pytest

from autopilot.guidance.path_following import MissionGuidance
from autopilot.guidance.turning import max_yaw_moment_nm
from autopilot.vocab.config import (
    CONFIG_DIR,
    AnchorConfig,
    GuidanceConfig,
    MissionConfig,
    PointConfig,
    load_mission,
    load_vessel,
)
from autopilot.vocab.types import NavState
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant_spec import PlantSpec
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

IACQ = load_vessel("iacquabot")
ACCEPTANCE_M = 2.0


def guidance(points_ne, turn_scale=1.0, drift_ne=(0.0, 0.0), **guidance_kw):
    """Guidance for the IAcquaBot on a mission launched at (0, 0), told its turn ratio and the drift."""
    m = MissionConfig(name="t", anchor=AnchorConfig(lat_deg=51.0, lon_deg=17.0),
                      waypoints=tuple(PointConfig(north_m=n, east_m=e) for n, e in points_ne),
                      guidance=GuidanceConfig(law="ilos", lookahead_m=4.0, **guidance_kw),
                      cruise_speed_mps=1.0, acceptance_radius_m=ACCEPTANCE_M)
    g = MissionGuidance(m, IACQ, max_yaw_nm=max_yaw_moment_nm(IACQ))
    g.turn_scale, g.drift_ne = turn_scale, drift_ne
    g.start(0.0, 0.0)
    return g


def left_leg_at_m(g, leg_end_n=100.0, step_m=0.05):
    """Drive north along the first leg (0, 0) -> (leg_end_n, 0) until guidance switches to the next waypoint;
    the distance [m] short of the waypoint where it did."""
    n = 0.0
    while g.index == 0 and n < leg_end_n + 5.0:
        g.update(n, NavState(time_s=n, north_m=n, east_m=0.0, heading_rad=0.0, surge_mps=1.0, sway_mps=0.0,
                             yaw_rate_rps=0.0))
        n += step_m
    return leg_end_n - n


L_TURN = [(100.0, 0.0), (100.0, 100.0)]          # north, then a 90 deg turn east


def test_a_right_angle_turn_begins_before_the_waypoint_and_sooner_when_the_current_carries_the_boat_on():
    matched = left_leg_at_m(guidance(L_TURN))
    carried = left_leg_at_m(guidance(L_TURN, drift_ne=(0.2, 0.0)))       # 0.2 m/s toward the next leg's line
    held_back = left_leg_at_m(guidance(L_TURN, drift_ne=(-0.2, 0.0)))    # 0.2 m/s away from it
    assert matched > ACCEPTANCE_M + 1.0
    assert held_back == pytest.approx(matched, abs=0.1)          # drift away from the line never delays the turn
    assert carried > matched + 1.5                               # about 10 s of turning at 0.2 m/s


def test_a_boat_measured_turning_at_half_its_file_rate_starts_its_turn_further_out_in_a_current():
    fast = left_leg_at_m(guidance(L_TURN, drift_ne=(0.2, 0.0)))
    slow = left_leg_at_m(guidance(L_TURN, turn_scale=0.5, drift_ne=(0.2, 0.0)))
    assert slow > fast + 1.5                                     # twice as long in the turn, drifting on


def test_gentle_turns_u_turns_the_last_waypoint_and_the_switched_off_key_keep_the_acceptance_circle():
    gentle = [(100.0, 0.0), (200.0, 20.0)]                       # 11 deg
    u_turn = [(100.0, 0.0), (0.0, 10.0)]                         # 174 deg
    last = [(100.0, 0.0)]
    for points, kw in ((gentle, {}), (u_turn, {}), (last, {}), (L_TURN, {"wheel_over": False})):
        at = left_leg_at_m(guidance(points, drift_ne=(0.2, 0.0), **kw))
        assert at == pytest.approx(ACCEPTANCE_M, abs=0.1), (points, kw)


def test_never_before_half_the_leg_however_slow_the_boat_and_strong_the_current():
    at = left_leg_at_m(guidance([(10.0, 0.0), (10.0, 100.0)], turn_scale=0.25, drift_ne=(1.0, 0.0)), leg_end_n=10.0)
    assert at == pytest.approx(5.0, abs=0.1)


DEMO_WEATHER = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2,
                                 current_toward_deg=0.0, wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)


def path_rms_m(wheel_over: bool) -> float:
    """The demo survey on an IAcquaBot with 2.5x its filed yaw damping, in a 0.2 m/s current across its long
    legs: RMS distance [m] of the true position from the mission's path, corners included."""
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    mission = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance, wheel_over=wheel_over))
    spec = PlantSpec.resolve(IACQ, 1, mismatch={"n_r": 2.5})
    r = run_sim(IACQ, mission, SimOptions(seed=1, env=DEMO_WEATHER, gps_noise="white", plant_spec=spec)).report
    assert r["mission_complete"] and r["failsafe_events"] == []
    return r["path_rms_m"]


def test_a_slow_turning_boat_in_a_current_stays_near_the_survey_lines_when_it_turns_early():
    """Turning at its waypoints, this boat drifted ~6 m past each long line before it came round onto it: 2.00 m
    RMS from the path (2026-11-27). Turning early, 0.85 m."""
    late, early = path_rms_m(False), path_rms_m(True)
    assert early < 0.7 * late


def test_check_says_where_a_slow_turners_corners_begin_and_not_for_a_fast_one():
    from autopilot.files.check import check_config
    demo = CONFIG_DIR / "missions" / "demo.yaml"
    said = [n for n in check_config(CONFIG_DIR / "vessels" / "iacquabot.yaml", demo).notes if "wheel_over" in n]
    assert len(said) == 1 and "begins 4 of its turns before their waypoint, up to" in said[0]
    metres = float(said[0].split("up to ")[1].split(" m")[0])
    assert ACCEPTANCE_M < metres < 5.0                        # the 90 deg corners of 20 m legs, no drift
    assert not [n for n in check_config(CONFIG_DIR / "vessels" / "foka.yaml", demo).notes if "wheel_over" in n]
    off = load_mission(demo)
    g = MissionGuidance(dataclasses.replace(off, guidance=dataclasses.replace(off.guidance, wheel_over=False)),
                        IACQ, max_yaw_nm=max_yaw_moment_nm(IACQ))
    assert g.planned_wheel_over_m() == []
    on = MissionGuidance(off, IACQ, max_yaw_nm=max_yaw_moment_nm(IACQ))
    before = (on.index, on.leg, on.turn_scale)
    assert [i for i, _ in on.planned_wheel_over_m()] == [1, 2, 3, 4] and (on.index, on.leg, on.turn_scale) == before
