"""Geofence geometry: inside tests, distances to the edge, legs, and rejection of broken polygons."""
from __future__ import annotations

import math

import pytest

from autopilot.safety.geofence import Geofence

SQUARE = [(0, 0), (0, 100), (100, 100), (100, 0)]            # (north_m, east_m), 100 m square
# A "U" opening to the north: the notch between east 40..60 reaches down to north 20.
U_SHAPE = [(0, 0), (0, 100), (100, 100), (100, 60), (20, 60), (20, 40), (100, 40), (100, 0)]


def test_inside_outside_and_boundary():
    f = Geofence(SQUARE)
    assert f.contains(50, 50)
    assert not f.contains(-1, 50) and not f.contains(50, 100.5)
    assert f.contains(0, 50) and f.contains(100, 100)          # edge and corner count as inside
    assert f.area_m2 == pytest.approx(1e4)


def test_winding_order_and_repeated_closing_vertex_do_not_matter():
    cw = Geofence(SQUARE + [SQUARE[0]])
    ccw = Geofence(list(reversed(SQUARE)))
    assert len(cw.vertices) == 4
    for p in [(50, 50), (-5, 50), (99, 1), (101, 1)]:
        assert cw.contains(*p) == ccw.contains(*p) == Geofence(SQUARE).contains(*p)


def test_concave_polygon_notch_is_outside():
    f = Geofence(U_SHAPE)
    assert f.contains(80, 20) and f.contains(80, 80) and f.contains(10, 50)
    assert not f.contains(50, 50)                                 # inside the notch
    assert f.signed_distance_m(50, 50) == pytest.approx(-10.0)    # 10 m from either notch wall


def test_signed_distance_is_margin_inside_and_excursion_outside():
    f = Geofence(SQUARE)
    assert f.signed_distance_m(10, 50) == pytest.approx(10.0)
    assert f.signed_distance_m(50, 97) == pytest.approx(3.0)
    assert f.signed_distance_m(-4, 50) == pytest.approx(-4.0)
    assert f.signed_distance_m(103, 104) == pytest.approx(-5.0)  # outside a corner: to the corner
    assert f.nearest_edge_point(103, 104) == pytest.approx((100, 100))


def test_distance_ahead_along_a_course():
    f = Geofence(SQUARE)
    assert f.distance_ahead_m(50, 50, 0.0) == pytest.approx(50.0)              # due north
    assert f.distance_ahead_m(50, 80, math.pi / 2) == pytest.approx(20.0)      # due east
    assert f.distance_ahead_m(50, 50, math.radians(45)) == pytest.approx(50 * math.sqrt(2))
    assert f.distance_ahead_m(10, 50, math.pi) == pytest.approx(10.0)          # due south (heading wraps)
    assert f.distance_ahead_m(-10, 50, math.pi) == math.inf                    # outside, heading away


def test_legs_that_cut_across_a_concave_notch_leave_the_fence():
    f = Geofence(U_SHAPE)
    assert f.segment_inside((10, 10), (10, 90))          # along the base of the U
    assert not f.segment_inside((80, 20), (80, 80))      # both ends inside, the leg crosses the notch
    assert not f.segment_inside((50, 20), (50, 50))      # ends in the notch
    assert f.segment_inside((20, 20), (20, 40))          # runs to the notch corner, stays on the boundary
    # through the notch's corner vertex (20, 40) with no proper crossing: inside when the leg stays in the
    # arms, outside when it runs on into the notch and ends on the notch's far wall
    assert f.segment_inside((30, 30), (10, 50))
    assert not f.segment_inside((10, 30), (40, 60))
    assert Geofence(SQUARE).segment_inside((1, 1), (99, 99))


@pytest.mark.parametrize("poly, reason", [
    ([(0, 0), (0, 10)], "at least 3"),
    ([(0, 0), (5, 5), (10, 10)], "zero area"),
    ([(0, 0), (0, 10), (10, 0), (10, 10)], "cross"),                 # bow-tie
    ([(0, 0), (0, 10), (0, 10), (10, 10)], "coincide"),
])
def test_broken_polygons_are_rejected_with_a_reason(poly, reason):
    with pytest.raises(ValueError, match=reason):
        Geofence(poly)
