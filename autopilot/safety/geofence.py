"""Geofence geometry in the local NED frame: a simple polygon the boat must stay inside. Pure math.

Vertices are (north_m, east_m) pairs. The polygon may be given in either winding order and with or without
the first vertex repeated at the end (QGroundControl and Mission Planner repeat it). It must be simple: at
least 3 distinct vertices, non-zero area, no edge crossing another. Points on the boundary count as inside.
Courses are clockwise from true north in radians, as everywhere in the autopilot.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence, Tuple

Point = Tuple[float, float]   # (north_m, east_m)

_EPS_M = 1e-9


class Geofence:
    """A validated simple polygon with inside tests and distances to its edge."""

    def __init__(self, vertices_ne: Iterable[Sequence[float]]):
        verts = [(float(p[0]), float(p[1])) for p in vertices_ne]
        if len(verts) >= 2 and _same(verts[0], verts[-1]):
            verts.pop()
        check_simple_polygon(verts)
        self.vertices: Tuple[Point, ...] = tuple(verts)
        self.edges: Tuple[Tuple[Point, Point], ...] = tuple(
            (verts[i], verts[(i + 1) % len(verts)]) for i in range(len(verts)))

    @property
    def area_m2(self) -> float:
        return abs(_signed_area(self.vertices))

    def contains(self, north_m: float, east_m: float) -> bool:
        """True inside the polygon or on its boundary."""
        p = (north_m, east_m)
        if self.distance_to_edge_m(north_m, east_m) <= _EPS_M:
            return True
        inside = False
        for (n1, e1), (n2, e2) in self.edges:
            # crossing number: a ray from p toward +east crosses edges whose north span straddles p
            if (n1 > p[0]) != (n2 > p[0]):
                e_cross = e1 + (p[0] - n1) * (e2 - e1) / (n2 - n1)
                if e_cross > p[1]:
                    inside = not inside
        return inside

    def nearest_edge_point(self, north_m: float, east_m: float) -> Point:
        """The closest point of the boundary to (north_m, east_m)."""
        best: Optional[Point] = None
        best_d2 = math.inf
        for a, b in self.edges:
            q = _closest_on_segment((north_m, east_m), a, b)
            d2 = (q[0] - north_m) ** 2 + (q[1] - east_m) ** 2
            if d2 < best_d2:
                best, best_d2 = q, d2
        assert best is not None   # a validated polygon has at least 3 edges (a NaN point would leave it unset)
        return best

    def distance_to_edge_m(self, north_m: float, east_m: float) -> float:
        """Unsigned distance to the boundary [m]."""
        q = self.nearest_edge_point(north_m, east_m)
        return math.hypot(q[0] - north_m, q[1] - east_m)

    def signed_distance_m(self, north_m: float, east_m: float) -> float:
        """Distance to the boundary [m]: positive inside (margin left), negative outside (how far out)."""
        d = self.distance_to_edge_m(north_m, east_m)
        return d if self.contains(north_m, east_m) else -d

    def distance_ahead_m(self, north_m: float, east_m: float, course_rad: float) -> float:
        """Distance along a straight course to the first boundary crossing [m]; inf if the ray meets none.

        From a point inside, this is how far the boat can run on this course before leaving the fence --
        what a stop-short failsafe compares with its stopping distance.
        """
        d = (math.cos(course_rad), math.sin(course_rad))
        best = math.inf
        for a, b in self.edges:
            s = _ray_hits_segment((north_m, east_m), d, a, b)
            if s is not None and s < best:
                best = s
        return best

    def segment_inside(self, a: Point, b: Point) -> bool:
        """True when the straight leg a -> b stays inside (both ends inside, no boundary crossed)."""
        if not (self.contains(*a) and self.contains(*b)):
            return False
        for c, d in self.edges:
            if _proper_intersection(a, b, c, d):
                return False
        # A leg can also leave a concave polygon through a vertex without a proper crossing: check midpoints
        # of the pieces between its contacts with the boundary.
        cuts = sorted({0.0, 1.0, *[t for c, d in self.edges for t in _touch_params(a, b, c, d)]})
        for t0, t1 in zip(cuts, cuts[1:]):
            tm = 0.5 * (t0 + t1)
            if not self.contains(a[0] + tm * (b[0] - a[0]), a[1] + tm * (b[1] - a[1])):
                return False
        return True


def check_simple_polygon(vertices: Sequence[Point]) -> None:
    """Raise ValueError naming the problem unless `vertices` form a simple polygon (closing vertex removed)."""
    n = len(vertices)
    if n < 3:
        raise ValueError(f"needs at least 3 distinct points, got {n}")
    for i in range(n):
        if _same(vertices[i], vertices[(i + 1) % n]):
            raise ValueError(f"points {i} and {(i + 1) % n} coincide")
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue          # neighbours share a vertex
            if _segments_meet(*edges[i], *edges[j]):
                raise ValueError(f"edges {i}-{(i + 1) % n} and {j}-{(j + 1) % n} cross (the polygon is not simple)")
    scale = max(max(abs(v[0]), abs(v[1])) for v in vertices) or 1.0
    if abs(_signed_area(vertices)) <= 1e-12 * scale * scale:
        raise ValueError("has zero area (all points on one line)")


# ------------------------------------------------------------------------------------------- helpers
def _same(p: Point, q: Point) -> bool:
    return abs(p[0] - q[0]) <= _EPS_M and abs(p[1] - q[1]) <= _EPS_M


def _signed_area(v: Sequence[Point]) -> float:
    return 0.5 * sum(v[i][0] * v[(i + 1) % len(v)][1] - v[(i + 1) % len(v)][0] * v[i][1] for i in range(len(v)))


def _cross(o: Point, a: Point, b: Point) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _closest_on_segment(p: Point, a: Point, b: Point) -> Point:
    dn, de = b[0] - a[0], b[1] - a[1]
    L2 = dn * dn + de * de
    t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * dn + (p[1] - a[1]) * de) / L2))
    return (a[0] + t * dn, a[1] + t * de)


def _on_segment(p: Point, a: Point, b: Point) -> bool:
    q = _closest_on_segment(p, a, b)
    return math.hypot(q[0] - p[0], q[1] - p[1]) <= _EPS_M


def _proper_intersection(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Segments cross at a single interior point of both (touching does not count)."""
    d1, d2 = _cross(c, d, a), _cross(c, d, b)
    d3, d4 = _cross(a, b, c), _cross(a, b, d)
    return ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4))


def _segments_meet(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Segments share at least one point (crossing, touching or overlapping)."""
    if _proper_intersection(a, b, c, d):
        return True
    return any(_on_segment(p, s, t) for p, s, t in ((a, c, d), (b, c, d), (c, a, b), (d, a, b)))


def _touch_params(a: Point, b: Point, c: Point, d: Point):
    """Parameters t in (0, 1) along a->b where edge c-d's end points lie on the segment."""
    dn, de = b[0] - a[0], b[1] - a[1]
    L2 = dn * dn + de * de
    if L2 == 0:
        return []
    out = []
    for p in (c, d):
        if _on_segment(p, a, b):
            t = ((p[0] - a[0]) * dn + (p[1] - a[1]) * de) / L2
            if 0.0 < t < 1.0:
                out.append(t)
    return out


def _ray_hits_segment(p: Point, d: Point, a: Point, b: Point):
    """Distance s >= 0 along the unit ray p + s d to segment a-b, or None."""
    en, ee = b[0] - a[0], b[1] - a[1]
    denom = d[0] * ee - d[1] * en
    wn, we = a[0] - p[0], a[1] - p[1]
    if abs(denom) < 1e-15:
        if abs(wn * d[1] - we * d[0]) > _EPS_M:
            return None                       # parallel, apart
        # collinear: the nearer end point that lies ahead
        ahead = [s for s in (wn * d[0] + we * d[1], (b[0] - p[0]) * d[0] + (b[1] - p[1]) * d[1]) if s >= 0]
        return min(ahead) if ahead else None
    s = (wn * ee - we * en) / denom
    u = (wn * d[1] - we * d[0]) / denom
    if s >= -_EPS_M and -_EPS_M <= u <= 1 + _EPS_M:
        return max(s, 0.0)
    return None
