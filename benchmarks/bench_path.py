#!/usr/bin/env python3
"""Path following: paper 000 Table 8's five runs on the diagonal path [s, s] at 0.71 m/s, IAcquaBot preset.

Each run starts at Table 8's pose (x north, y east, heading clockwise from north) with its constant force
(N, toward phi_d clockwise from north: the paper states no convention) and no wind or waves; 1 Hz GNSS through the
real drivers, the estimate in the loop (config/missions/path_diagonal.yaml). Prints the path error (true CG's
distance from the path, + starboard) and the speed error (speed over ground minus the 0.71 m/s asked) over the run
and over its last quarter; the paper plots them (its Fig. 9) and gives no numbers. --plot FILE draws both over
time for the five runs, as Fig. 9 does. A sixth row flies run 5 on a foreign plant (mismatch random=0.5).

Usage: python benchmarks/bench_path.py [--plot FILE.png] [--seed 1]
"""
from __future__ import annotations

import argparse
import dataclasses
import math

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, PointConfig, load_mission, load_vessel
from hil.sim.plant_spec import PlantExtras, PlantSpec
from hil.sim.runner import SimOptions, run_sim

TABLE8 = [((10.0, 15.0, 45.0), 5.0, 90.0), ((15.0, 10.0, 30.0), 12.5, 45.0), ((20.0, 10.0, 60.0), 20.0, 0.0),
          ((10.0, 20.0, 45.0), 27.5, 45.0), ((0.0, 20.0, 0.0), 35.0, 90.0)]


def fly(pose, force_n, toward_deg, seed=1, mismatch=None):
    vessel = load_vessel("iacquabot")
    mission = load_mission(CONFIG_DIR / "missions" / "path_diagonal.yaml")
    start = dataclasses.replace(mission.start, point=PointConfig(north_m=pose[0], east_m=pose[1]),
                                heading_deg=pose[2])
    mission = dataclasses.replace(mission, start=start)
    spec = PlantSpec.resolve(vessel, seed, mismatch=mismatch,
                             extras=PlantExtras(force_n=force_n, force_toward_deg=toward_deg))
    series = []

    def watch(t, ap, truth):
        m = ap.modes["AUTO"]
        if truth is not None and ap.mode is m and m.reference_ne is not None:
            i = m.path.project(truth.north_m, truth.east_m)
            series.append((t, m.path.cross_track_m(i, truth.north_m, truth.east_m),
                           math.hypot(truth.surge_mps, truth.sway_mps) - m.speed_ref_mps))
    rep = run_sim(vessel, mission, SimOptions(seed=seed, plant_spec=spec, on_cycle=watch, gps_noise="white"))
    return rep.report, np.array(series)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", help="PNG of path and speed error over time (paper 000 Fig. 9)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print("paper 000 Table 8 on the IAcquaBot preset: diagonal path [s, s] at 0.71 m/s, 1 Hz GNSS, estimate in the "
          "loop")
    print(f"  {'run':3s} {'start (n, e, psi)':18s} {'force':>10s} {'path rms':>9s} {'max':>6s} {'last 1/4':>8s} "
          f"{'speed rms':>9s} {'last 1/4':>8s} {'done':>5s} fs")
    runs = [(i + 1, p, f, d, None) for i, (p, f, d) in enumerate(TABLE8)] + [("5f", TABLE8[4][0], TABLE8[4][1],
                                                                              TABLE8[4][2], {"random": 0.5})]
    traces = []
    for name, pose, f, d, mm in runs:
        rep, series = fly(pose, f, d, args.seed, mm)
        p = rep["path"]
        traces.append((name, series))
        print(f"  {str(name):3s} {str(pose):18s} {f:5.1f} N {d:3.0f} {p.get('path_err_rms_m', math.nan):9.3f} "
              f"{p.get('path_err_max_m', math.nan):6.2f} {p.get('path_err_last_quarter_rms_m', math.nan):8.3f} "
              f"{p.get('speed_err_rms_mps', math.nan):9.3f} {p.get('speed_err_last_quarter_rms_mps', math.nan):8.3f} "
              f"{str(p['complete']):>5s} {len(rep['failsafe_events'])}")
    print("  path error: true CG to the path [m]; speed: over ground minus 0.71 m/s [m/s]; 5f: run 5 on a plant "
          "drawn within x/÷1.5 of the file")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for name, s in traces:
            if len(s):
                a1.plot(s[:, 0] - s[0, 0], s[:, 1], label=f"run {name}")
                a2.plot(s[:, 0] - s[0, 0], s[:, 2], label=f"run {name}")
        a1.set_ylabel("path error [m]")
        a2.set_ylabel("speed error [m/s]")
        a2.set_xlabel("time following [s]")
        a1.legend(ncol=3, fontsize=8)
        a1.grid(True)
        a2.grid(True)
        fig.suptitle("Path following, paper 000 Table 8 runs (IAcquaBot preset)")
        fig.savefig(args.plot, dpi=110)
        print(f"  plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
