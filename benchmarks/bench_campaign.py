"""Runs per minute of one campaign on 1 worker, on all local cores, and as Ray tasks on a local instance, and
whether the three tables agree (the runs are deterministic by their parameters).

    python benchmarks/bench_campaign.py [--seeds 8] [--mission demo]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hil.sim.campaign import expand, load_campaign, run_campaign  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--mission", default="demo")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    spec_file = tmp / "bench.yaml"
    spec_file.write_text(f"name: bench\nmissions: [{args.mission}]\nvessels: [foka]\n"
                         f"mismatch: ['', 'random=1.0']\nseeds: 1-{args.seeds}\nwind: [[3, 90]]\n")
    spec, base = load_campaign(spec_file)
    runs = expand(spec, base)
    tables = {}
    print(f"{len(runs)} runs of {args.mission} (foka, wind 3 m/s, matched and random x/÷2 mismatch), "
          f"{os.cpu_count()} cores")
    for label, kw in (("1 worker", dict(workers=1)), (f"{os.cpu_count()} workers", dict(workers=os.cpu_count())),
                      ("Ray local", dict(ray_address="auto"))):
        t0 = time.perf_counter()
        rows = run_campaign(runs, tmp / label.replace(" ", "_"), **kw)
        wall = time.perf_counter() - t0
        tables[label] = sorted(json.dumps({k: v for k, v in r.items() if k != "wall_s"}, sort_keys=True)
                               for r in rows)
        print(f"  {label:10s}: {wall:6.1f} s wall, {60 * len(runs) / wall:6.1f} runs/min, "
              f"{sum('error' in r for r in rows)} errors")
    same = len({tuple(t) for t in tables.values()}) == 1
    print(f"tables identical across the three: {same}")


if __name__ == "__main__":
    main()
