"""Geofence geometry in the local NED frame: a simple polygon the boat must stay inside. Pure math.

Vertices are (north_m, east_m) pairs. The polygon may be given in either winding order and with or without
the first vertex repeated at the end (QGroundControl and Mission Planner repeat it). It must be simple: at
least 3 distinct vertices, non-zero area, no edge crossing another. Points on the boundary count as inside.
Courses are clockwise from true north in radians, as everywhere in the autopilot.

Cost: building a fence checks it is simple with a sweep line (Shamos-Hoey, O(n log n) for n vertices); a fence
of more than `max_vertices` (MAX_FENCE_VERTICES) is refused before any of that work. The per-cycle queries
(`contains`, `distance_to_edge_m`, `signed_distance_m`, `distance_ahead_m`, `segment_inside`) first test the
fence's bounding box and, from GRID_MIN_VERTICES on, look only at the edges of a uniform grid's cells in the
point's row or along the ray: about sqrt(n) edges, not n. The distance to the edge is taken over every edge at
once with numpy from GRID_MIN_VERTICES on (a grid search outward from a point far from the edge visits most
cells in Python: 8 ms a query at the middle of a 2,000-vertex circle). Every answer is the one the plain loop
over all edges gives (the same IEEE arithmetic on every edge that can matter; the grid only skips edges that
cannot).
"""
from __future__ import annotations

import bisect
import functools
import math
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from autopilot.vocab.fence_limits import MAX_FENCE_VERTICES, fence_size_problem  # noqa: F401  (re-exported)

Point = Tuple[float, float]   # (north_m, east_m)

_EPS_M = 1e-9

GRID_MIN_VERTICES = 64        # below this a loop over every edge is as quick as the grid


class Geofence:
    """A validated simple polygon with inside tests and distances to its edge.

    ValueError, before any geometry, for more than `max_vertices` vertices (None: no limit, for benchmarks);
    ValueError naming the problem for a polygon that is not simple (check_simple_polygon). Immutable once made:
    any thread may query it."""

    def __init__(self, vertices_ne: Iterable[Sequence[float]],
                 max_vertices: Optional[int] = MAX_FENCE_VERTICES):
        verts = [(float(p[0]), float(p[1])) for p in vertices_ne]
        if len(verts) >= 2 and _same(verts[0], verts[-1]):
            verts.pop()
        too_many = fence_size_problem(len(verts), max_vertices)
        if too_many is not None:
            raise ValueError(too_many)
        check_simple_polygon(verts)
        self.vertices: Tuple[Point, ...] = tuple(verts)
        self.edges: Tuple[Tuple[Point, Point], ...] = tuple(
            (verts[i], verts[(i + 1) % len(verts)]) for i in range(len(verts)))
        ns, es = [v[0] for v in verts], [v[1] for v in verts]
        self.bbox = (min(ns), min(es), max(ns), max(es))       # (north_min, east_min, north_max, east_max)
        self._grid = _EdgeGrid(self.edges, self.bbox) if len(verts) >= GRID_MIN_VERTICES else None
        self._arrays = _EdgeArrays(self.edges) if self._grid is not None else None

    @property
    def area_m2(self) -> float:
        return abs(_signed_area(self.vertices))

    def contains(self, north_m: float, east_m: float) -> bool:
        """True inside the polygon or on its boundary (within 1e-9 m of it)."""
        n0, e0, n1, e1 = self.bbox
        if not (n0 - _BOX_PAD_M <= north_m <= n1 + _BOX_PAD_M and e0 - _BOX_PAD_M <= east_m <= e1 + _BOX_PAD_M):
            return False              # off the bounding box: no edge near, and a ray crosses it an even number
        return self._inside(north_m, east_m, self.distance_to_edge_m(north_m, east_m))

    def _inside(self, north_m: float, east_m: float, edge_distance_m: float) -> bool:
        """contains() for a point on the bounding box whose distance to the boundary is edge_distance_m."""
        if edge_distance_m <= _EPS_M:
            return True
        edges = self.edges if self._grid is None else self._grid.row_edges(north_m)
        inside = False
        for (n1, e1), (n2, e2) in edges:
            # crossing number: a ray from p toward +east crosses edges whose north span straddles p
            if (n1 > north_m) != (n2 > north_m):
                e_cross = e1 + (north_m - n1) * (e2 - e1) / (n2 - n1)
                if e_cross > east_m:
                    inside = not inside
        return inside

    def nearest_edge_point(self, north_m: float, east_m: float) -> Point:
        """The closest point of the boundary to (north_m, east_m) (of two equally close, the one on the edge
        that comes first)."""
        if self._arrays is not None and math.isfinite(north_m) and math.isfinite(east_m):
            return self._arrays.nearest(north_m, east_m)
        candidates: Iterable[int] = range(len(self.edges))
        best: Optional[Point] = None
        best_d2 = math.inf
        for i in candidates:
            a, b = self.edges[i]
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
        n0, e0, n1, e1 = self.bbox
        on_box = n0 - _BOX_PAD_M <= north_m <= n1 + _BOX_PAD_M and e0 - _BOX_PAD_M <= east_m <= e1 + _BOX_PAD_M
        return d if on_box and self._inside(north_m, east_m, d) else -d

    def distance_ahead_m(self, north_m: float, east_m: float, course_rad: float) -> float:
        """Distance along a straight course to the first boundary crossing [m]; inf if the ray meets none.

        From a point inside, this is how far the boat can run on this course before leaving the fence --
        what a stop-short failsafe compares with its stopping distance.
        """
        d = (math.cos(course_rad), math.sin(course_rad))
        grid = self._grid
        if grid is None or not all(map(math.isfinite, (north_m, east_m, d[0], d[1]))):
            best = math.inf
            for a, b in self.edges:
                s = _ray_hits_segment((north_m, east_m), d, a, b)
                if s is not None and s < best:
                    best = s
            return best
        return grid.ray_distance((north_m, east_m), d, self.edges)

    def segment_inside(self, a: Point, b: Point) -> bool:
        """True when the straight leg a -> b stays inside (both ends inside, no boundary crossed)."""
        if not (self.contains(*a) and self.contains(*b)):
            return False
        grid = self._grid
        edges = self.edges if grid is None else [self.edges[i] for i in grid.edges_along(a, b)]
        for c, d in edges:
            if _proper_intersection(a, b, c, d):
                return False
        # A leg can also leave a concave polygon through a vertex without a proper crossing: check midpoints
        # of the pieces between its contacts with the boundary.
        cuts = sorted({0.0, 1.0, *[t for c, d in edges for t in _touch_params(a, b, c, d)]})
        for t0, t1 in zip(cuts, cuts[1:]):
            tm = 0.5 * (t0 + t1)
            if not self.contains(a[0] + tm * (b[0] - a[0]), a[1] + tm * (b[1] - a[1])):
                return False
        return True


def geofence_of(vertices_ne: Iterable[Sequence[float]]) -> Geofence:
    """Geofence(vertices_ne), shared with the last few calls for the same vertices: loading a mission checks
    its fence and then flies it (check_mission, then Autopilot.prepare_mission), and a fence is immutable. Any
    thread."""
    return _cached_fence(tuple((float(p[0]), float(p[1])) for p in vertices_ne))


@functools.lru_cache(maxsize=4)
def _cached_fence(vertices: Tuple[Point, ...]) -> Geofence:
    return Geofence(vertices)


def check_simple_polygon(vertices: Sequence[Point]) -> None:
    """Raise ValueError naming the problem unless `vertices` form a simple polygon (closing vertex removed).

    The decisions are those of testing every pair of non-neighbouring edges for a common point (touching within
    1e-9 m counts) -- `_segments_meet` on each pair, O(n^2) -- made by a sweep line (Shamos-Hoey): O(n log n), and
    the same predicate decides every pair it tests. It says which two edges meet; which pair it names when
    several do may differ from the all-pairs order. Size is not limited here (Geofence's max_vertices is)."""
    n = len(vertices)
    if n < 3:
        raise ValueError(f"needs at least 3 distinct points, got {n}")
    for i in range(n):
        if _same(vertices[i], vertices[(i + 1) % n]):
            raise ValueError(f"points {i} and {(i + 1) % n} coincide")
    pair = _meeting_edges(vertices)
    if pair is not None:
        i, j = sorted(pair)
        raise ValueError(f"edges {i}-{(i + 1) % n} and {j}-{(j + 1) % n} cross (the polygon is not simple)")
    scale = max(max(abs(v[0]), abs(v[1])) for v in vertices) or 1.0
    if abs(_signed_area(vertices)) <= 1e-12 * scale * scale:
        raise ValueError("has zero area (all points on one line)")


def _meeting_edges(vertices: Sequence[Point]) -> Optional[Tuple[int, int]]:
    """Two non-neighbouring edges (i, j) of the closed polygon that share a point, or None: a sweep line over
    north (x) keeping the edges it cuts ordered by east (y), testing each edge against those next to it when
    it enters, the edges through each event point against each other, and the edges that become neighbours
    when one leaves. Vertical edges (one north) are tested against the edges cut at their north."""
    n = len(vertices)
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    left: List[Point] = []
    right: List[Point] = []
    slope: List[float] = []
    events = []                              # (x, kind, y, edge): kind 0 enters, 1 vertical, 2 leaves
    for i, (p, q) in enumerate(edges):
        lo, hi = (p, q) if p <= q else (q, p)
        left.append(lo)
        right.append(hi)
        if lo[0] == hi[0]:
            slope.append(math.inf)
            events.append((lo[0], 1, lo[1], i))
        else:
            slope.append((hi[1] - lo[1]) / (hi[0] - lo[0]))
            events.append((lo[0], 0, lo[1], i))
            events.append((hi[0], 2, hi[1], i))
    events.sort()

    def neighbours(i: int, j: int) -> bool:
        return (i - j) % n in (0, 1, n - 1)

    def meet(i: int, j: int) -> bool:
        if neighbours(i, j):
            return False
        (a, b), (c, d) = edges[i], edges[j]
        # apart by more than touching in north or east: they cannot meet (a quick no for _segments_meet)
        if min(a[0], b[0]) - _EPS_M > max(c[0], d[0]) or min(c[0], d[0]) - _EPS_M > max(a[0], b[0]) \
                or min(a[1], b[1]) - _EPS_M > max(c[1], d[1]) or min(c[1], d[1]) - _EPS_M > max(a[1], b[1]):
            return False
        return _segments_meet(a, b, c, d)

    status: List[int] = []                   # edges cut by the sweep line, by east where it is now
    x = -math.inf

    def y_at(i: int) -> float:
        lo, hi = left[i], right[i]
        if x == lo[0]:
            return lo[1]
        if x == hi[0]:
            return hi[1]
        return lo[1] + (x - lo[0]) * slope[i]

    def span(y0: float, y1: float) -> Tuple[int, int]:
        """Positions in `status` of the edges whose east at the sweep line is within y0..y1 (with the 1e-9 m
        of touching), and three more on each side."""
        a, b = through(y0, y1)
        return max(0, a - _NEAR), min(len(status), b + _NEAR)

    def through(y0: float, y1: float) -> Tuple[int, int]:
        """Positions in `status` of the edges whose east at the sweep line is within y0..y1 (and touching)."""
        return (bisect.bisect_left(status, y0 - _EPS_M, key=y_at),
                bisect.bisect_right(status, y1 + _EPS_M, key=y_at))

    def first_meeting(y: float) -> Optional[Tuple[int, int]]:
        """The edges through the point at east y: against each other and against _NEAR either side (the side
        ones were neighbours before, and tested then)."""
        a, b = through(y, y)
        lo, hi = max(0, a - _NEAR), min(len(status), b + _NEAR)
        for k in range(a, b):
            for m in range(lo, hi):
                if (m < a or m >= b or m > k) and meet(status[k], status[m]):
                    return status[k], status[m]
        return None

    k = 0
    while k < len(events):
        x = events[k][0]
        end = k
        while end < len(events) and events[end][0] == x:
            end += 1
        batch = events[k:end]
        k = end
        # edges entering here: each against the edges near its start, and the edges through that point
        points = sorted({ev[2] for ev in batch if ev[1] != 1})
        for ev in batch:
            if ev[1] == 0:
                i = ev[3]
                pos = bisect.bisect_left(status, (ev[2], slope[i]), key=lambda j: (y_at(j), slope[j]))
                status.insert(pos, i)
        for y in points:
            hit = first_meeting(y)
            if hit is not None:
                return hit
        # vertical edges: against every edge cut within their east span, and against each other
        verticals = [ev for ev in batch if ev[1] == 1]
        tallest: List[int] = []              # the (up to) three verticals here reaching furthest east so far
        for ev in verticals:
            i = ev[3]
            y0, y1 = left[i][1], right[i][1]
            a, b = span(y0, y1)
            for j in status[a:b]:
                if meet(i, j):
                    return i, j
            for j in tallest:
                if meet(i, j):
                    return i, j
            tallest = sorted(tallest + [i], key=lambda j: -right[j][1])[:_NEAR]
        # edges leaving here: the edges either side of each become neighbours
        for ev in batch:
            if ev[1] != 2:
                continue
            i = ev[3]
            a, b = span(ev[2], ev[2])
            try:
                pos = status.index(i, a, b)
            except ValueError:
                pos = status.index(i)
            del status[pos]
            below, above = status[max(0, pos - _NEAR):pos], status[pos:pos + _NEAR]
            for j in below:
                for m in above:
                    if meet(j, m):
                        return j, m
    return None


_NEAR = 3          # neighbours tested on each side: past the (at most two) edges that share a vertex
_BOX_PAD_M = 1e-6  # a point this far off the bounding box is off the fence


class _EdgeArrays:
    """The edges as numpy arrays, for the nearest boundary point over all of them in one pass."""

    def __init__(self, edges: Sequence[Tuple[Point, Point]]):
        a = np.array([e[0] for e in edges], dtype=float)
        b = np.array([e[1] for e in edges], dtype=float)
        self.an, self.ae = a[:, 0].copy(), a[:, 1].copy()
        self.dn, self.de = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
        l2 = self.dn * self.dn + self.de * self.de
        self.degenerate = l2 == 0
        self.l2 = np.where(self.degenerate, 1.0, l2)

    def nearest(self, north_m: float, east_m: float) -> Point:
        """_closest_on_segment over every edge, the nearest kept (the first of equals), as the plain loop does."""
        t = ((north_m - self.an) * self.dn + (east_m - self.ae) * self.de) / self.l2
        t = np.where(self.degenerate, 0.0, np.minimum(1.0, np.maximum(0.0, t)))
        qn = self.an + t * self.dn
        qe = self.ae + t * self.de
        d2 = (qn - north_m) ** 2 + (qe - east_m) ** 2
        i = int(np.argmin(d2))
        return (float(qn[i]), float(qe[i]))


class _EdgeGrid:
    """A uniform grid over a fence's bounding box, each cell listing the edges that pass through it (padded by
    far more than the 1e-9 m of touching), about one cell per edge; and each row (a band of north) the edges
    whose north span overlaps it. Lookups return candidate edges: a superset of those that can matter."""

    def __init__(self, edges: Sequence[Tuple[Point, Point]], bbox: Tuple[float, float, float, float]):
        n0, e0, n1, e1 = bbox
        w, h = n1 - n0, e1 - e0
        count = len(edges)
        size = max(math.sqrt(w * h / count), max(w, h) / count, 1e-6)
        self.n0, self.e0, self.size = n0, e0, size
        self.rows, self.cols = int(w / size) + 1, int(h / size) + 1
        self.pad = _BOX_PAD_M * max(1.0, w, h)
        self.cells: List[List[int]] = [[] for _ in range(self.rows * self.cols)]
        row_sets: List[List[int]] = [[] for _ in range(self.rows)]
        for k, (a, b) in enumerate(edges):
            last_row = -1
            for r, c in self._cells_along(a, b):
                self.cells[r * self.cols + c].append(k)
                if r != last_row:
                    row_sets[r].append(k)
                    last_row = r
        self.rows_edges: List[Tuple[Tuple[Point, Point], ...]] = [tuple(edges[k] for k in ks) for ks in row_sets]

    def _row_of(self, north_m: float) -> int:
        return min(self.rows - 1, max(0, int(math.floor((north_m - self.n0) / self.size))))

    def _col_of(self, east_m: float) -> int:
        return min(self.cols - 1, max(0, int(math.floor((east_m - self.e0) / self.size))))

    def _cells_along(self, a: Point, b: Point):
        """(row, col) of every cell the segment a-b, thickened by `pad`, touches (row by row, in order of
        north)."""
        s, pad = self.size, self.pad / self.size
        xa, ya = (a[0] - self.n0) / s, (a[1] - self.e0) / s
        xb, yb = (b[0] - self.n0) / s, (b[1] - self.e0) / s
        if xa > xb:
            xa, ya, xb, yb = xb, yb, xa, ya
        r0 = max(0, int(math.floor(xa - pad)))
        r1 = min(self.rows - 1, int(math.floor(xb + pad)))
        dx = xb - xa
        for r in range(r0, r1 + 1):
            if dx <= 1e-12:
                y_lo, y_hi = min(ya, yb), max(ya, yb)
            else:
                t_lo = min(1.0, max(0.0, (max(xa, r) - xa) / dx))
                t_hi = min(1.0, max(0.0, (min(xb, r + 1) - xa) / dx))
                y_lo, y_hi = sorted((ya + t_lo * (yb - ya), ya + t_hi * (yb - ya)))
            c0 = max(0, int(math.floor(y_lo - pad)))
            c1 = min(self.cols - 1, int(math.floor(y_hi + pad)))
            for c in range(c0, c1 + 1):
                yield r, c

    def row_edges(self, north_m: float) -> Tuple[Tuple[Point, Point], ...]:
        """Every edge whose north span includes north_m (and some more)."""
        return self.rows_edges[self._row_of(north_m)]

    def ray_distance(self, p: Point, d: Point, edges) -> float:
        """The least `_ray_hits_segment` distance over the edges, looking only at the cells along the ray in
        order of distance, until the next cell starts beyond the nearest hit."""
        s = self.size
        lo = (self.n0 - s, self.e0 - s)
        hi = (self.n0 + (self.rows + 1) * s, self.e0 + (self.cols + 1) * s)
        t_in, t_out = 0.0, math.inf
        for ax in (0, 1):                       # the ray's part inside the grid (slabs)
            if abs(d[ax]) < 1e-15:
                if not lo[ax] <= p[ax] <= hi[ax]:
                    return math.inf
                continue
            t1, t2 = (lo[ax] - p[ax]) / d[ax], (hi[ax] - p[ax]) / d[ax]
            t_in, t_out = max(t_in, min(t1, t2)), min(t_out, max(t1, t2))
        if t_in > t_out:
            return math.inf
        a = (p[0] + t_in * d[0], p[1] + t_in * d[1])
        b = (p[0] + t_out * d[0], p[1] + t_out * d[1])
        cells = []
        for r, c in self._cells_along(a, b):
            cn, ce = self.n0 + r * s - self.pad, self.e0 + c * s - self.pad
            enter = 0.0                         # where the ray enters this (padded) cell
            for ax, c_lo in ((0, cn), (1, ce)):
                if abs(d[ax]) >= 1e-15:
                    t1, t2 = (c_lo - p[ax]) / d[ax], (c_lo + s + 2 * self.pad - p[ax]) / d[ax]
                    enter = max(enter, min(t1, t2))
            cells.append((enter, r, c))
        cells.sort()
        best = math.inf
        seen: set = set()
        for enter, r, c in cells:
            if enter > best + self.pad:
                break
            for k in self.cells[r * self.cols + c]:
                if k in seen:
                    continue
                seen.add(k)
                hit = _ray_hits_segment(p, d, *edges[k])
                if hit is not None and hit < best:
                    best = hit
        return best

    def edges_along(self, a: Point, b: Point) -> List[int]:
        """Edges, in their order, that pass through the cells of the segment a-b (every edge within `pad`)."""
        found = set()
        for r, c in self._cells_along(a, b):
            found.update(self.cells[r * self.cols + c])
        return sorted(found)


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
