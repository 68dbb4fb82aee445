"""Geodesy: great-circle distance/azimuth against known values, local frame round trip, angle wrap."""
import math

import numpy as np
import pytest

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.geodesy import LocalFrame, azimuth_rad, haversine_m


def test_straight_line_leg_length_and_bearing():
    # the Sydney regatta-centre ILOS leg is quoted as 176 m
    d = haversine_m(-33.72276, 150.67400, -33.72119, 150.67426)
    assert d == pytest.approx(176, abs=1.0)
    assert math.degrees(azimuth_rad(-33.72276, 150.67400, -33.72119, 150.67426)) == pytest.approx(7.9, abs=0.2)


def test_one_degree_of_latitude_and_cardinal_bearings():
    assert haversine_m(0, 0, 1, 0) == pytest.approx(111_195, rel=1e-4)
    assert azimuth_rad(0, 0, 0, 1) == pytest.approx(math.pi / 2)
    assert abs(wrap_pi(azimuth_rad(0, 0, -1, 0))) == pytest.approx(math.pi)
    assert azimuth_rad(10, 10, 10, 9) == pytest.approx(-math.pi / 2, abs=1e-2)


@pytest.mark.parametrize("lat0, lon0", [(51.11, 17.06), (-33.7, 150.7), (0.0, 179.999)])
def test_local_frame_round_trip_and_scale(lat0, lon0):
    f = LocalFrame(lat0, lon0)
    for n, e in [(0, 0), (100, -50), (-1000, 2000)]:
        lat, lon = f.to_wgs84(n, e)
        n2, e2 = f.to_ned(lat, lon)
        assert (n2, e2) == pytest.approx((n, e), abs=1e-6)
    lat, lon = f.to_wgs84(300.0, 400.0)
    assert haversine_m(lat0, lon0, lat, lon) == pytest.approx(500.0, rel=4e-3)


def test_wrap_pi_scalars_and_arrays():
    assert wrap_pi(math.pi) == pytest.approx(-math.pi)
    assert wrap_pi(-math.pi) == pytest.approx(-math.pi)
    assert wrap_pi(3 * math.pi + 0.1) == pytest.approx(-math.pi + 0.1)
    assert wrap_pi(math.radians(179) - math.radians(-179)) == pytest.approx(math.radians(-2))
    a = wrap_pi(np.array([0.0, 7.0, -7.0]))
    assert np.all(a >= -math.pi) and np.all(a < math.pi)
