"""What a geofence costs: building it (the simple-polygon check), the per-cycle queries, and `check`'s mission
check, for fences of 100 to 25,000 vertices (2,000: the limit a fence may have).

The fences are star-shaped, wiggly polygons about the demo mission's survey patch (radius 500 m, two ripples
on the radius, so every vertex differs and the polygon is simple; mean edge 3 m at 1,000 vertices). For each
size it prints the time [ms] of:

- build: `Geofence(vertices)`, which checks that the polygon is simple (over the vertex limit the algorithm
  is timed with the limit lifted, where the build takes `max_vertices`);
- contains, distance: one `contains()` / `distance_to_edge_m()` query, the mean over 400 points in and
  around the fence (the failsafe asks for one of each, `signed_distance_m`, every cycle);
- signed worst: the slowest single `signed_distance_m()` (the failsafe's per-cycle query) over those points and
  the fence's centre, where the boundary is furthest from the boat [ms];
- ahead: one `distance_ahead_m()` (the stop-short failsafe's ray, every cycle under way);
- check_mission: `autopilot check`'s mission check on the demo mission with that fence (a refusal over the
  vertex limit is timed too: it says how quickly the limit answers).

Sizes whose quadratic build would take longer than `--budget-s` are skipped (old code only), with the estimate.

    python benchmarks/bench_fence.py [--sizes 100,500,2000,4000,25000] [--budget-s 120]
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autopilot.files.check import check_mission  # noqa: E402
from autopilot.guidance.path_following import mission_frame, point_to_ned  # noqa: E402
from autopilot.safety.geofence import Geofence  # noqa: E402
from autopilot.vocab.config import PointConfig, load_mission  # noqa: E402

DEMO = REPO / "config" / "missions" / "demo.yaml"


def star_polygon(n: int, centre=(0.0, 0.0), radius_m: float = 500.0):
    """n vertices (north, east) [m] of a simple star-shaped polygon with wiggles on its radius."""
    out = []
    for k in range(n):
        th = 2.0 * math.pi * k / n
        r = radius_m * (1.0 + 0.25 * math.sin(7.0 * th) + 0.05 * math.sin(61.0 * th))
        out.append((centre[0] + r * math.cos(th), centre[1] + r * math.sin(th)))
    return out


def _ms(fn, repeat: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) * 1000.0 / repeat


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,500,2000,4000,25000")
    ap.add_argument("--budget-s", type=float, default=120.0)
    args = ap.parse_args(argv)
    mission = load_mission(DEMO)
    frame = mission_frame(mission)
    wps = [point_to_ned(p, frame) for p in mission.waypoints]
    centre = (sum(p[0] for p in wps) / len(wps), sum(p[1] for p in wps) / len(wps))
    lifted = "max_vertices" in inspect.signature(Geofence.__init__).parameters
    rng = random.Random(1)
    print(f"{'vertices':>9} {'build ms':>10} {'contains ms':>12} {'distance ms':>12} {'signed worst ms':>16} "
          f"{'ahead ms':>9} {'check_mission ms':>17}  check_mission says")
    per_n2_s = None
    for n in (int(s) for s in args.sizes.split(",")):
        verts = star_polygon(n, centre)
        if not lifted and per_n2_s is not None and per_n2_s * n * n > args.budget_s:
            print(f"{n:>9} skipped: the quadratic check would take about {per_n2_s * n * n:.0f} s")
            continue
        kwargs = {"max_vertices": None} if lifted else {}
        t0 = time.perf_counter()
        fence = Geofence(verts, **kwargs)
        build_ms = (time.perf_counter() - t0) * 1000.0
        if not lifted:
            per_n2_s = build_ms / 1000.0 / (n * n)
        pts = [(centre[0] + rng.uniform(-700, 700), centre[1] + rng.uniform(-700, 700)) for _ in range(400)]
        contains_ms = _ms(lambda: [fence.contains(*p) for p in pts]) / len(pts)
        dist_ms = _ms(lambda: [fence.distance_to_edge_m(*p) for p in pts]) / len(pts)
        signed_worst_ms = max(min(_ms(lambda p=p: fence.signed_distance_m(*p)) for _ in range(3))
                              for p in pts + [centre])       # per point its quickest of 3: the cost, not a pause
        ahead_ms = _ms(lambda: [fence.distance_ahead_m(p[0], p[1], 0.7) for p in pts[:100]]) / 100
        geo = tuple(PointConfig(**dict(zip(("lat_deg", "lon_deg"), frame.to_wgs84(nn, ee)))) for nn, ee in verts)
        m = dataclasses.replace(mission, geofence=geo)
        t0 = time.perf_counter()
        problems = check_mission(m, None)
        check_ms = (time.perf_counter() - t0) * 1000.0
        said = "ok" if not problems else str(problems[0])[:90]
        print(f"{n:>9} {build_ms:>10.1f} {contains_ms:>12.4f} {dist_ms:>12.4f} {signed_worst_ms:>16.4f} "
              f"{ahead_ms:>9.4f} {check_ms:>17.1f}  {said}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
