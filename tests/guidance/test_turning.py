"""The turning radius from a vessel file, and guidance keeping its LOS lookahead at least that radius."""
import dataclasses
import math

import pytest

from autopilot.files.check import check_config
from autopilot.guidance.path_following import HEADING_SLOWDOWN_FLOOR, MissionGuidance, heading_speed_factor
from autopilot.guidance.turning import (
    TURN_MOMENT_SHARE,
    guidance_lookahead_m,
    heading_loop_lookahead_m,
    heading_zeta_at_speed,
    max_yaw_moment_nm,
    munk_yaw_undamping_nm_s,
    steady_yaw_rate_rps,
    turning_radius_m,
)
from autopilot.vocab.config import (
    CONFIG_DIR,
    AnchorConfig,
    GuidanceConfig,
    HullConfig,
    MissionConfig,
    PointConfig,
    load_mission,
    load_vessel,
)
from autopilot.vocab.types import NavState

DEMO = CONFIG_DIR / "missions" / "demo.yaml"


def hull(n_r, n_rr):
    return HullConfig(length_m=1, beam_m=0.5, mass_kg=10, iz_kgm2=1, x_udot=0, y_vdot=0, n_rdot=0, x_u=-1,
                      x_uu=0, y_v=-1, y_vv=0, n_r=n_r, n_rr=n_rr, max_speed_mps=2)


def test_steady_turn_balances_the_yaw_damping():
    # 2 r + 1 r^2 = 8 N*m  ->  r = 2 rad/s; at 1 m/s that is a 0.5 m radius
    assert steady_yaw_rate_rps(2.0, 1.0, 8.0) == pytest.approx(2.0)
    assert turning_radius_m(hull(-2.0, -1.0), 1.0, -8.0) == pytest.approx(0.5)     # either way
    assert turning_radius_m(hull(-4.0, 0.0), 1.0, 2.0) == pytest.approx(2.0)       # linear damping only: 0.5 rad/s
    assert steady_yaw_rate_rps(0.0, 0.0, 2.0) == math.inf                          # undamped: no radius
    assert turning_radius_m(hull(0.0, 0.0), 1.0, 2.0) == 0.0


def test_a_slow_turner_gets_a_lookahead_of_its_turning_radius_and_the_others_keep_theirs():
    mission = load_mission(DEMO)                 # lookahead_m 3.0, 0.8 m/s
    for name in ("foka", "wamv"):
        vessel = load_vessel(name)
        g = MissionGuidance(mission, vessel, max_yaw_nm=max_yaw_moment_nm(vessel))
        assert g.lookahead_m == pytest.approx(3.0)
    slow = load_vessel("iacquabot")              # paper 000's hull: about 9 deg/s at full differential thrust
    n_max = max_yaw_moment_nm(slow)
    a, b = -slow.hull.n_rr, -slow.hull.n_r
    r = (-b + math.sqrt(b * b + 4 * a * TURN_MOMENT_SHARE * n_max)) / (2 * a)
    g = MissionGuidance(mission, slow, max_yaw_nm=n_max)
    assert g.lookahead_m == pytest.approx(0.8 / r)
    assert 8.0 < g.lookahead_m < 12.0
    # without the allocator's moment (a guidance used for bookkeeping) and when the mission opts out: as filed
    assert MissionGuidance(mission, slow).lookahead_m == pytest.approx(3.0)
    as_filed = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance,
                                                                         lookahead_min_turn_radii=0.0))
    assert guidance_lookahead_m(slow, as_filed, n_max) == pytest.approx(3.0)


@pytest.mark.slow
def test_check_says_when_the_lookahead_is_raised():
    notes = check_config(CONFIG_DIR / "vessels" / "iacquabot.yaml", DEMO).notes
    said = [n for n in notes if "lookahead" in n]
    assert len(said) == 1 and "demo.yaml: guidance.lookahead_m: 3.0 m is shorter than" in said[0]
    assert not [n for n in check_config(CONFIG_DIR / "vessels" / "foka.yaml", DEMO).notes if "lookahead" in n]


def test_the_munk_moment_takes_yaw_damping_in_proportion_to_the_speed_squared():
    # (X_udot - Y_vdot)(m - X_udot) u^2 / -Y_v = (-1 + 5)(10 + 1) 2^2 / 4 = 44 N*m*s
    munky = dataclasses.replace(hull(-2.0, 0.0), x_udot=-1.0, y_vdot=-5.0, y_v=-4.0)
    assert munk_yaw_undamping_nm_s(munky, 2.0) == pytest.approx(44.0)
    assert munk_yaw_undamping_nm_s(munky, 1.0) == pytest.approx(11.0)
    # more surge added mass than sway added mass: the moment damps the turn, nothing is taken
    assert munk_yaw_undamping_nm_s(dataclasses.replace(munky, x_udot=-6.0), 2.0) == 0.0
    assert munk_yaw_undamping_nm_s(dataclasses.replace(munky, y_v=0.0), 2.0) == 0.0


def test_a_fast_mission_gets_a_lookahead_its_heading_loop_can_follow():
    """FOKA on the hexagon (1.5 m/s, 3 m filed; omega_n 2.0 rad/s, zeta 1.0): the Munk moment takes
    4.25 x 15.75 x 1.5^2 / 30 = 5.02 N*m*s of the loop's 2 x 2.0 x 2.8 = 11.2, leaving zeta 0.55, so
    4.5 x 1.5 / 2.0 = 3.375 m is spread by 0.707 / 0.552 to 4.3 m, and check says why; the same boat on the
    demo's 0.8 m/s (zeta 0.87) keeps its 3 m."""
    foka, hexagon = load_vessel("foka"), load_mission(CONFIG_DIR / "missions" / "hexagon.yaml")
    assert heading_zeta_at_speed(foka, 1.5) == pytest.approx(1.0 - 4.25 * 15.75 * 2.25 / 30.0 / 11.2)
    expected_m = 3.375 * math.sqrt(0.5) / (1.0 - 4.25 * 15.75 * 2.25 / 30.0 / 11.2)
    assert MissionGuidance(hexagon, foka, max_yaw_nm=max_yaw_moment_nm(foka)).lookahead_m == pytest.approx(expected_m)
    assert MissionGuidance(load_mission(DEMO), foka, max_yaw_nm=max_yaw_moment_nm(foka)).lookahead_m == 3.0
    notes = check_config(CONFIG_DIR / "vessels" / "foka.yaml", CONFIG_DIR / "missions" / "hexagon.yaml").notes
    said = [n for n in notes if "lookahead" in n]
    assert len(said) == 1 and "shorter than 4.5 x 1.5 m/s over the heading loop's omega_n 2 rad/s" in said[0]
    assert "the Munk moment leaves the loop a damping ratio of 0.55 at that speed" in said[0]
    assert "guidance flies 4.3 m" in said[0]


def test_a_well_damped_heading_loop_keeps_the_plain_separation_at_speed():
    """The WAM-V (zeta 1.5 filed) keeps zeta 1.15 on the hexagon's 1.5 m/s: its loop floor stays 4.5 U / omega_n."""
    wamv, hexagon = load_vessel("wamv"), load_mission(CONFIG_DIR / "missions" / "hexagon.yaml")
    assert heading_zeta_at_speed(wamv, 1.5) > 1.0
    assert heading_loop_lookahead_m(wamv, hexagon) == pytest.approx(4.5 * 1.5 / 1.2)


def test_the_speed_falls_while_the_bow_points_away_from_the_desired_heading():
    assert heading_speed_factor(0.0) == 1.0
    assert heading_speed_factor(math.radians(-8)) == 1.0
    assert heading_speed_factor(math.radians(-60)) == pytest.approx(0.5 / math.cos(math.radians(10)))
    assert heading_speed_factor(math.radians(120)) == HEADING_SLOWDOWN_FLOOR
    m = MissionConfig(name="t", anchor=AnchorConfig(lat_deg=51.0, lon_deg=17.0),
                      waypoints=(PointConfig(north_m=0, east_m=0), PointConfig(north_m=100, east_m=0)),
                      guidance=GuidanceConfig(law="los", lookahead_m=4.0), cruise_speed_mps=0.8,
                      acceptance_radius_m=2.0)
    g = MissionGuidance(m, load_vessel("foka"))
    g.update(0.0, NavState(0.0, 0.0, 0.0, 0.0, 0.8, 0.0, 0.0))            # on waypoint 0: the leg north begins
    on = g.update(0.1, NavState(0.1, 10.0, 0.0, 0.0, 0.8, 0.0, 0.0))
    across = g.update(0.2, NavState(0.2, 11.0, 0.0, math.pi / 2, 0.8, 0.0, 0.0))   # pointing east
    assert on.speed_mps == pytest.approx(0.8)
    assert across.speed_mps == pytest.approx(HEADING_SLOWDOWN_FLOOR * 0.8)
