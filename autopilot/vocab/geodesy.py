"""WGS84 geodesy for guidance and for the local NED frame.

Bearings are clockwise from true north in radians; distances in metres. Great-circle formulas on a sphere
of the WGS84 mean radius are used for waypoint distance and azimuth (sub-0.5 % error, negligible over a lake);
the local frame uses the ellipsoid's curvature radii at its origin, exact to millimetres over a few km.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

EARTH_MEAN_RADIUS_M = 6_371_008.8
WGS84_A_M = 6_378_137.0
WGS84_E2 = 6.694379990141317e-3


def haversine_m(lat1_deg: float, lon1_deg: float, lat2_deg: float, lon2_deg: float) -> float:
    """Great-circle distance between two points [m]."""
    p1, p2 = math.radians(lat1_deg), math.radians(lat2_deg)
    dp = p2 - p1
    dl = math.radians(lon2_deg - lon1_deg)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2.0 * EARTH_MEAN_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def azimuth_rad(lat1_deg: float, lon1_deg: float, lat2_deg: float, lon2_deg: float) -> float:
    """Initial great-circle bearing from point 1 to point 2, clockwise from true north, in [-pi, pi)."""
    p1, p2 = math.radians(lat1_deg), math.radians(lat2_deg)
    dl = math.radians(lon2_deg - lon1_deg)
    y = math.sin(dl) * math.cos(p2)
    x = math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl)
    return math.atan2(y, x)


@dataclass(frozen=True)
class LocalFrame:
    """A local tangent plane (NED) anchored at an origin; converts WGS84 <-> (north_m, east_m)."""

    origin_lat_deg: float
    origin_lon_deg: float

    @property
    def _radii_m(self) -> tuple[float, float]:
        phi = math.radians(self.origin_lat_deg)
        s2 = math.sin(phi) ** 2
        meridian = WGS84_A_M * (1 - WGS84_E2) / (1 - WGS84_E2 * s2) ** 1.5
        normal = WGS84_A_M / math.sqrt(1 - WGS84_E2 * s2)
        return meridian, normal * math.cos(phi)

    def to_ned(self, lat_deg: float, lon_deg: float) -> tuple[float, float]:
        """(north_m, east_m) of a WGS84 point relative to the origin."""
        rn, re = self._radii_m
        return (math.radians(lat_deg - self.origin_lat_deg) * rn,
                math.radians(lon_deg - self.origin_lon_deg) * re)

    def to_wgs84(self, north_m: float, east_m: float) -> tuple[float, float]:
        """(lat_deg, lon_deg) of a local point."""
        rn, re = self._radii_m
        return (self.origin_lat_deg + math.degrees(north_m / rn),
                self.origin_lon_deg + math.degrees(east_m / re))
