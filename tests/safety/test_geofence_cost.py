"""The geofence's sweep-line simple-polygon check and its grid-indexed queries give the answers of the plain
all-pairs / all-edges loops (kept here as the reference), on many random polygons, simple and not; and a fence
over the vertex limit is refused before any geometry."""
from __future__ import annotations

import copy
import math
import random

import pytest

from autopilot.safety import geofence as G
from autopilot.safety.geofence import MAX_FENCE_VERTICES, Geofence, check_simple_polygon

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def reference_check(vertices):
    """The O(n^2) check the sweep line replaced: every pair of non-neighbouring edges."""
    n = len(vertices)
    if n < 3:
        raise ValueError(f"needs at least 3 distinct points, got {n}")
    for i in range(n):
        if G._same(vertices[i], vertices[(i + 1) % n]):
            raise ValueError(f"points {i} and {(i + 1) % n} coincide")
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue
            if G._segments_meet(*edges[i], *edges[j]):
                raise ValueError(f"edges {i}-{(i + 1) % n} and {j}-{(j + 1) % n} cross (the polygon is not simple)")
    scale = max(max(abs(v[0]), abs(v[1])) for v in vertices) or 1.0
    if abs(G._signed_area(vertices)) <= 1e-12 * scale * scale:
        raise ValueError("has zero area (all points on one line)")


def verdict(check, vertices):
    """'simple', or the kind of refusal ('cross', 'coincide', 'zero area', 'at least 3')."""
    try:
        check(vertices)
    except ValueError as e:
        text = str(e)
        return next(k for k in ("cross", "coincide", "zero area", "at least 3") if k in text)
    return "simple"


def star(rng, n, radius=100.0, wiggle=0.4):
    """A simple polygon: one vertex per bearing, each at its own random radius."""
    out = []
    for k in range(n):
        r = radius * (1 + wiggle * rng.uniform(-1, 1))
        out.append((r * math.cos(2 * math.pi * k / n), r * math.sin(2 * math.pi * k / n)))
    return out


def random_polygons(seed=7):
    """Simple and self-intersecting polygons: integer-grid ones (shared vertices, vertices on edges, collinear
    overlaps, vertical edges), stars (simple), stars with two vertices swapped or one pulled across, and
    random point clouds."""
    rng = random.Random(seed)
    for _ in range(3000):                                        # small grids: every degenerate touch
        size = rng.choice((2, 3, 4, 6))
        yield [(float(rng.randint(0, size)), float(rng.randint(0, size))) for _ in range(rng.randint(3, 9))]
    for _ in range(300):
        yield star(rng, rng.randint(3, 200))
    for _ in range(300):
        p = star(rng, rng.randint(5, 200))
        i, j = rng.sample(range(len(p)), 2)
        p[i], p[j] = p[j], p[i]
        yield p
    for _ in range(200):                                         # a vertex onto (or just across) another edge
        p = [(round(x), round(y)) for x, y in star(rng, rng.randint(6, 60), radius=30.0)]
        i = rng.randrange(len(p))
        j = (i + rng.randint(2, len(p) - 2)) % len(p)
        a, b = p[j], p[(j + 1) % len(p)]
        t = rng.choice((0.0, 0.5, 1.0, rng.random()))
        p[i] = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        yield p
    for _ in range(300):
        yield [(rng.uniform(-50, 50), rng.uniform(-50, 50)) for _ in range(rng.randint(3, 30))]
    for _ in range(100):                                         # rectilinear combs: many vertical edges
        teeth = rng.randint(2, 12)
        top = [(float(2 * k + dx), float(rng.choice((3, 4, 5)))) for k in range(teeth) for dx in (0, 1)]
        pts = [(x, 0.0) for x, _ in top[:1]] + [(x, y) for x, y in top] + [(top[-1][0], 0.0)]
        comb = []
        for k, (x, y) in enumerate(pts):
            comb.append((x, y))
            if 0 < k < len(pts) - 1 and k % 2 == 0:
                comb.append((x, 1.0 if rng.random() < 0.8 else 0.0))
        yield [(e, n) if rng.random() < 0.5 else (n, e) for n, e in comb] if rng.random() < 0.3 else comb


def test_the_sweep_line_decides_as_the_all_pairs_check_on_random_polygons():
    counts = {}
    for poly in random_polygons():
        expected = verdict(reference_check, poly)
        assert verdict(check_simple_polygon, poly) == expected, poly
        counts[expected] = counts.get(expected, 0) + 1
    # the set exercises both answers plenty
    assert counts.get("simple", 0) > 500 and counts.get("cross", 0) > 1500, counts


def test_the_sweep_line_names_two_edges_that_really_meet():
    rng = random.Random(3)
    for _ in range(300):
        p = star(rng, rng.randint(8, 100))
        i, j = rng.sample(range(len(p)), 2)
        p[i], p[j] = p[j], p[i]
        try:
            check_simple_polygon(p)
        except ValueError as err:
            text = str(err)
        else:
            continue                   # the swap left it simple
        if "cross" not in text:
            continue
        words = text.split()
        (a, _), (b, _) = (map(int, words[1].split("-")), map(int, words[3].split("-")))
        n = len(p)
        assert G._segments_meet(p[a], p[(a + 1) % n], p[b], p[(b + 1) % n])


def plain(fence):
    """The same fence answering by the loop over every edge (no grid, no arrays)."""
    twin = copy.copy(fence)
    twin._grid = None
    twin._arrays = None
    return twin


@pytest.mark.parametrize("n", [70, 500, 2000])
def test_grid_queries_answer_as_the_loop_over_every_edge(n):
    rng = random.Random(n)
    verts = star(rng, n, radius=300.0, wiggle=0.3)
    fence = Geofence(verts)
    assert fence._grid is not None
    ref = plain(fence)
    pts = [(rng.uniform(-450, 450), rng.uniform(-450, 450)) for _ in range(300)]
    pts += [verts[k] for k in rng.sample(range(n), 20)]                       # on a vertex
    pts += [((a[0] + b[0]) / 2, (a[1] + b[1]) / 2) for a, b in rng.sample(fence.edges, 20)]   # on an edge
    pts += [(1e5, 3.0), (-2e4, -2e4), (0.0, 0.0)]
    for p in pts:
        assert fence.contains(*p) == ref.contains(*p), p
        assert fence.nearest_edge_point(*p) == ref.nearest_edge_point(*p), p
        assert fence.signed_distance_m(*p) == ref.signed_distance_m(*p), p
        for course in (0.0, 1.0, math.pi / 2, math.pi, -2.0, rng.uniform(-4, 4)):
            assert fence.distance_ahead_m(*p, course) == ref.distance_ahead_m(*p, course), (p, course)
    for _ in range(60):
        a, b = rng.sample(pts, 2)
        assert fence.segment_inside(a, b) == ref.segment_inside(a, b), (a, b)


def test_a_fence_over_the_vertex_limit_is_refused_naming_the_limit_before_any_geometry(monkeypatch):
    verts = star(random.Random(1), MAX_FENCE_VERTICES + 1, wiggle=0.0)
    monkeypatch.setattr(G, "check_simple_polygon", lambda v: pytest.fail("checked a fence over the limit"))
    with pytest.raises(ValueError, match=f"{MAX_FENCE_VERTICES + 1} vertices is more than the "
                                         f"{MAX_FENCE_VERTICES}"):
        Geofence(verts)
    monkeypatch.undo()
    assert len(Geofence(verts[:MAX_FENCE_VERTICES] + verts[:1]).vertices) == MAX_FENCE_VERTICES  # closing one kept out
