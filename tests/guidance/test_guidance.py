"""Guidance: waypoint sequencing and the laws' signs, with the named edge cases."""
import dataclasses
import math

import pytest

import autopilot.guidance.path_following as guidance_module
from autopilot.guidance.path_following import (
    CRAB_MAX_RAD,
    Leg,
    MissionGuidance,
    crab_angle_rad,
    crab_takes_hull_sway,
    ilos_integral_held,
)
from autopilot.vocab.config import AnchorConfig, GuidanceConfig, MissionConfig, PointConfig, load_vessel
from autopilot.vocab.types import NavState

VESSEL = load_vessel("foka")


def mission(points_ne, law="ilos", sigma=0.5, radius=2.0, **kw):
    return MissionConfig(name="t", anchor=AnchorConfig(lat_deg=51.0, lon_deg=17.0),
                         waypoints=tuple(PointConfig(north_m=n, east_m=e) for n, e in points_ne),
                         guidance=GuidanceConfig(law=law, sigma=sigma, lookahead_m=4.0, **kw),
                         cruise_speed_mps=1.0, acceptance_radius_m=radius)


def nav(n, e, psi=0.0, t=0.0):
    return NavState(time_s=t, north_m=n, east_m=e, heading_rad=psi, surge_mps=1.0, sway_mps=0.0,
                    yaw_rate_rps=0.0)


def test_cross_track_sign_right_of_path_is_positive():
    leg = Leg(0, 0, 100, 0)          # due north
    assert leg.along_cross_m(10, 3) == pytest.approx((10, 3))     # east of a north-going leg = right
    leg = Leg(0, 0, 0, 100)          # due east
    assert leg.along_cross_m(-3, 10) == pytest.approx((10, 3))    # south of an east-going leg = right


@pytest.mark.parametrize("law", ["los", "ilos", "xtrack_pid"])
def test_laws_steer_back_toward_the_path(law):
    g = MissionGuidance(mission([(0, 0), (100, 0)], law=law), VESSEL)
    g.start(0, 0)
    g.update(0.0, nav(0.0, 0.0))
    right = g.update(0.1, nav(10, 3, t=0.1))       # right of a north-going leg: steer left (negative)
    assert right.xte_m == pytest.approx(3)
    assert right.heading_rad < 0
    g2 = MissionGuidance(mission([(0, 0), (100, 0)], law=law), VESSEL)
    g2.start(0, 0)
    g2.update(0.0, nav(0.0, 0.0))
    left = g2.update(0.1, nav(10, -3, t=0.1))
    assert left.heading_rad > 0


def test_los_formula():
    g = MissionGuidance(mission([(0, 0), (100, 0)], law="los"), VESSEL)
    g.update(0.0, nav(0, 0))
    sp = g.update(0.1, nav(20, 2))
    assert sp.heading_rad == pytest.approx(math.atan2(-2, 4.0))


def drifting(n, e, surge, sway, psi=0.0, t=0.0):
    return NavState(time_s=t, north_m=n, east_m=e, heading_rad=psi, surge_mps=surge, sway_mps=sway,
                    yaw_rate_rps=0.0)


def test_crab_compensation_points_the_bow_into_the_drift():
    # on the path of a north-going leg, the estimator's drift 0.2 m/s east (to starboard) while making 1 m/s
    # ahead: the course is 11.3 deg right of the heading, so the heading asked for is 11.3 deg left of the leg
    g = MissionGuidance(mission([(0, 0), (100, 0)], law="los"), VESSEL)
    g.drift_ne = (0.0, 0.2)
    g.update(0.0, drifting(0, 0, 1.0, 0.2))
    sp = g.update(0.1, drifting(10, 0, 1.0, 0.2, t=0.1))
    assert sp.heading_rad == pytest.approx(-math.atan2(0.2, 1.0))
    plain = MissionGuidance(mission([(0, 0), (100, 0)], law="los", crab_compensation=False), VESSEL)
    plain.drift_ne = (0.0, 0.2)
    plain.update(0.0, drifting(0, 0, 1.0, 0.2))
    assert plain.update(0.1, drifting(10, 0, 1.0, 0.2, t=0.1)).heading_rad == pytest.approx(0.0)


def test_a_quick_sliding_hulls_own_sway_does_not_move_the_heading_asked_for():
    """FOKA slides in step with its yaw rate: its own sway (no drift) does not steer it further into the turn
    it is making, which fed the yaw rate back into the desired heading and made it weave."""
    assert not crab_takes_hull_sway(VESSEL)
    g = MissionGuidance(mission([(0, 0), (100, 0)], law="los"), VESSEL)
    g.update(0.0, drifting(0, 0, 1.0, 0.0))
    still = g.update(0.1, drifting(10, 0, 1.0, 0.0, t=0.1)).heading_rad
    sliding = g.update(0.2, drifting(10, 0, 1.0, -0.3, t=0.2)).heading_rad
    assert still == pytest.approx(0.0) and sliding == pytest.approx(0.0)


def test_a_slow_sliding_hull_steers_its_course_through_its_own_sway():
    """The WAM-V's sway outlasts its heading loop: the crab takes the sway over ground the estimate has."""
    wamv = load_vessel("wamv")
    assert crab_takes_hull_sway(wamv)
    g = MissionGuidance(mission([(0, 0), (100, 0)], law="los"), wamv)
    g.update(0.0, drifting(0, 0, 1.0, -0.3))
    assert g.update(0.1, drifting(10, 0, 1.0, -0.3, t=0.1)).heading_rad == pytest.approx(math.atan2(0.3, 1.0))


def test_whether_the_crab_takes_the_hulls_sway_follows_its_time_against_the_heading_loop():
    # FOKA: (m - Y_vdot) / -Y_v = 0.67 s against 1/omega_n = 0.67 s; the rule needs twice that
    hull = VESSEL.hull
    slower = dataclasses.replace(VESSEL, hull=dataclasses.replace(hull, y_v=hull.y_v / 2.5))
    assert not crab_takes_hull_sway(VESSEL) and crab_takes_hull_sway(slower)
    undamped = dataclasses.replace(VESSEL, hull=dataclasses.replace(hull, y_v=0.0))
    assert crab_takes_hull_sway(undamped)


def test_crab_angle_is_the_drift_across_the_bow_over_the_surge():
    east = (0.0, 0.2)
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.0), east) == pytest.approx(math.atan2(0.2, 1.0))
    # heading east, the same drift is dead astern: no crab; heading south it is to port
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.0, psi=math.pi / 2), east) == pytest.approx(0.0, abs=1e-12)
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.0, psi=math.pi), east) == pytest.approx(-math.atan2(0.2, 1.0))


def test_crab_angle_fades_out_at_low_speed_and_is_clamped():
    east = (0.0, 0.2)
    assert crab_angle_rad(drifting(0, 0, 0.1, 0.0), east) == 0.0          # too slow: the course is noise
    assert crab_angle_rad(drifting(0, 0, -1.0, 0.0), east) == 0.0         # going astern
    half = crab_angle_rad(drifting(0, 0, 0.3, 0.0), (0.0, 0.1))           # half-way through the fade
    assert half == pytest.approx(0.5 * math.atan2(0.1, 0.3))
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.0), (0.0, 5.0)) == pytest.approx(CRAB_MAX_RAD)
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.0), (0.0, -5.0)) == pytest.approx(-CRAB_MAX_RAD)
    invalid = dataclasses.replace(drifting(0, 0, 1.0, 0.0), valid=False)
    assert crab_angle_rad(invalid, east) == 0.0
    # with the hull's sway: the estimate's sway over ground, whatever the drift
    assert crab_angle_rad(drifting(0, 0, 1.0, 0.1), east, hull_sway=True) == pytest.approx(math.atan2(0.1, 1.0))


def _crab_flown(g, t_s, surge_mps):
    """The crab angle [rad] guidance takes off the leg's course for a boat on a north-going leg's line making
    surge_mps over ground, carried east by the guidance's drift (the desired heading's offset from north)."""
    return -g.update(t_s, drifting(t_s, 0.0, surge_mps, 0.0, t=t_s)).heading_rad


def test_a_hard_turn_that_stalls_the_surge_does_not_raise_the_crab_angle():
    """A yaw-first allocator gives a hard turn the thrust that made way: the boat slows for a few seconds while
    still asked for its speed. The crab angle is taken on the speed it has been making, not on that dip, or the
    larger crab asks for more turn and slows it further (the IAcquaBot with weak motors swung 27 deg on its
    legs that way)."""
    g = MissionGuidance(mission([(0, 0), (1000, 0)], law="los"), VESSEL)
    g.drift_ne = (0.0, 0.2)
    t = 0.0
    while t < 30.0:                       # running at the asked 1 m/s
        running = _crab_flown(g, t, 1.0)
        t += 0.1
    assert running == pytest.approx(math.atan2(0.2, 1.0), abs=1e-3)
    dip_end = t + 3.0
    while t < dip_end:                    # the turn takes the surge down to 0.4 m/s for 3 s
        dip = _crab_flown(g, t, 0.4)
        t += 0.1
    assert dip < math.atan2(0.2, 0.75)    # not the 26.6 deg of 0.4 m/s
    assert dip > running


def test_the_crab_angle_follows_a_speed_the_boat_keeps_or_is_asked_for():
    """A boat that cannot make its speed (weak motors) gets the crab of the speed it makes once it has kept
    it; a boat slowing where guidance slows it (before a sharp corner) gets the crab of its speed at once."""
    weak = MissionGuidance(mission([(0, 0), (1000, 0)], law="los"), VESSEL)
    weak.drift_ne = (0.0, 0.2)
    t = 0.0
    while t < 30.0:
        _crab_flown(weak, t, 1.0)
        t += 0.1
    while t < 90.0:
        kept = _crab_flown(weak, t, 0.5)
        t += 0.1
    assert kept == pytest.approx(math.atan2(0.2, 0.5), abs=2e-3)
    cornering = MissionGuidance(mission([(0, 0), (1000, 0)], law="los"), VESSEL)
    cornering.drift_ne = (0.0, 0.2)
    cornering._speed_ref = lambda dist_m: 0.5      # guidance itself asks for 0.5 m/s
    t = 0.0
    while t < 30.0:
        _crab_flown(cornering, t, 1.0)
        t += 0.1
    assert _crab_flown(cornering, t, 0.5) == pytest.approx(math.atan2(0.2, 0.5), abs=1e-3)


def test_ilos_integral_follows_its_ode_and_removes_steady_offset():
    g = MissionGuidance(mission([(0, 0), (1000, 0)], law="ilos", sigma=0.5), VESSEL)
    g.update(0.0, nav(0, 0))
    y, dt = 1.0, 0.02
    for k in range(1, 200):
        g.update(k * dt, nav(10 + k * 0.02, y, t=k * dt))
    # with y held at 1 m the integral keeps growing, turning the boat further left than plain LOS
    assert g.y_int > 0
    sp = g.update(200 * dt, nav(14, y, t=200 * dt))
    assert sp.heading_rad < math.atan2(-y, 4.0)


def approach_integral(monkeypatch, hold_times):
    """The ILOS integral after coming onto a north-going leg from 7 m to starboard, heading 40 deg toward it at
    1 m/s, until 1.2 m off."""
    monkeypatch.setattr(guidance_module, "ILOS_HOLD_LOOKAHEAD_TIMES", hold_times)
    g = MissionGuidance(mission([(0, 0), (1000, 0)], law="ilos", sigma=0.5), VESSEL)
    g.update(0.0, nav(0, 0))                    # the first waypoint, reached at once: the leg to (1000, 0) is on
    psi, dt, k = math.radians(-40.0), 0.02, 0
    y = 7.0
    while y > 1.2:
        k += 1
        y = 7.0 - math.sin(math.radians(40.0)) * k * dt
        g.update(k * dt, nav(10 + math.cos(math.radians(40.0)) * k * dt, y, psi=psi, t=k * dt))
    return g, k * dt


def test_ilos_integral_is_held_while_the_boat_closes_on_the_line_by_itself(monkeypatch):
    # Fossen's law would have learnt a 7 m approach as an offset to steer against
    assert approach_integral(monkeypatch, 0.0)[0].y_int > 1.0
    g, t0 = approach_integral(monkeypatch, 4.0)
    assert g.y_int == 0.0
    # the boat now holds a parallel course 2 m off: that offset is integrated
    for k in range(1, 100):
        g.update(t0 + k * 0.02, nav(20 + k * 0.02, 2.0, t=t0 + k * 0.02))
    assert g.y_int > 0.5


def test_what_counts_as_closing_on_the_line():
    def at(y, psi_deg, surge=1.0, valid=True):
        return ilos_integral_held(y, NavState(time_s=0, north_m=0, east_m=y, heading_rad=math.radians(psi_deg),
                                              surge_mps=surge, sway_mps=0.0, yaw_rate_rps=0.0, valid=valid),
                                  0.0, 4.0)
    assert at(7.0, -40.0) and at(-7.0, 40.0)           # turned toward the line, either side
    assert not at(7.0, 40.0)                           # turned away: integrate
    assert not at(7.0, 0.0)                            # parallel: a steady offset, integrate
    assert not at(0.8, -40.0)                          # within a metre of the line: always integrate
    assert not at(7.0, -2.0)                           # closing at 0.03 m/s: 200 s away, not by itself
    assert not at(7.0, -40.0, valid=False)


def test_wrap_of_desired_heading_across_south():
    # a leg heading due south (chi = pi): small offsets must give headings near +-pi, not jumps through 0
    g = MissionGuidance(mission([(0, 0), (-100, 0)], law="los"), VESSEL)
    g.update(0.0, nav(0, 0, psi=math.pi))
    a = g.update(0.1, nav(-10, 0.5, psi=math.pi)).heading_rad
    assert abs(abs(a) - math.pi) < 0.3
    assert -math.pi <= a < math.pi


def test_acceptance_circle_and_passing_the_waypoint():
    g = MissionGuidance(mission([(0, 0), (50, 0), (50, 50)]), VESSEL)
    g.start(-10, 0)
    g.update(0, nav(-10, 0))
    assert g.index == 0
    g.update(1, nav(-1.5, 0))            # inside the 2 m circle of wp0
    assert g.index == 1
    g.update(2, nav(51, 6))              # missed the circle of wp1 but passed its perpendicular line
    assert g.index == 2


def test_waypoint_at_the_start_is_reached_at_once():
    g = MissionGuidance(mission([(0, 0), (30, 0)]), VESSEL)
    g.start(0.5, 0.5)
    sp = g.update(0.0, nav(0.5, 0.5))
    assert g.index == 1 and sp.waypoint_index == 1
    assert abs(sp.heading_rad) < 0.2


def test_zero_length_leg_is_skipped_and_mission_completes():
    g = MissionGuidance(mission([(0, 0), (20, 0), (20, 0), (20, 20)]), VESSEL)
    g.start(0, 0)
    g.update(0.0, nav(0, 0))
    g.update(1.0, nav(19.5, 0))
    assert g.index == 3                  # the repeated waypoint does not stall the sequence
    assert g.update(2.0, nav(20, 19.5)) is None
    assert g.complete and g.waypoints_reached == 4


def test_heading_law_uses_great_circle_bearing():
    m = MissionConfig(name="t", waypoints=(PointConfig(lat_deg=51.0, lon_deg=17.0),
                                           PointConfig(lat_deg=51.001, lon_deg=17.001)),
                      guidance=GuidanceConfig(law="heading"), cruise_speed_mps=1, acceptance_radius_m=2)
    g = MissionGuidance(m, VESSEL)
    g.start(-50, -50)
    g.update(0, nav(-50, -50))
    sp = g.update(1, nav(0.0, 0.0))
    assert g.index == 1
    from autopilot.vocab.geodesy import azimuth_rad, haversine_m
    assert sp.heading_rad == pytest.approx(azimuth_rad(51.0, 17.0, 51.001, 17.001), abs=1e-6)
    assert sp.distance_to_waypoint_m == pytest.approx(haversine_m(51.0, 17.0, 51.001, 17.001), rel=1e-9)


def test_speed_respects_vessel_limit_up_to_the_final_waypoint():
    m = dataclasses.replace(mission([(0, 0), (200, 0)]), cruise_speed_mps=5.0)
    g = MissionGuidance(m, VESSEL)
    g.update(0, nav(0, 0))
    far = g.update(0.1, nav(10, 0)).speed_mps
    near = g.update(1, nav(195, 0)).speed_mps
    assert far == pytest.approx(VESSEL.hull.max_speed_mps)
    assert near == pytest.approx(far)


def test_slows_before_a_sharp_turn_but_not_before_a_straight_continuation():
    sharp = MissionGuidance(mission([(0, 0), (100, 0), (100, 100)]), VESSEL)
    sharp.update(0, nav(0, 0))
    straight = MissionGuidance(mission([(0, 0), (100, 0), (200, 0)]), VESSEL)
    straight.update(0, nav(0, 0))
    far_sharp = sharp.update(0.1, nav(50, 0)).speed_mps
    near_sharp = sharp.update(0.2, nav(97, 0)).speed_mps
    near_straight = straight.update(0.2, nav(97, 0)).speed_mps
    assert far_sharp == pytest.approx(1.0)
    assert near_straight == pytest.approx(1.0)
    assert 0.5 <= near_sharp < 0.75
