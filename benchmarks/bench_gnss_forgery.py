"""Forged GNSS fixes in flight: what a wrong digit with a correct checksum does to the estimate.

Each run flies the demo mission on FOKA through the byte-level devices (emulated L76K -> real driver -> EKF)
with a `gps-forge` fault: a share of epochs carry one wrong value (a digit of latitude, longitude, time,
date, speed, course, a hemisphere letter, HDOP or fix quality) in every sentence that carries it, with
correct checksums. The same seed without the fault is the reference: both runs draw the same receiver
noise, so the difference in estimate error (|estimate - truth|) is what the forgeries did.

Prints per forgery kind and seed: epochs forged, the driver's refusals, the largest added estimate error
[m] and the failsafes that fired. `--off` disables the driver's plausibility checks to show what the
estimator's gate does alone.

    python benchmarks/bench_gnss_forgery.py [--seeds 1 2 3] [--fraction 1.0] [--duration 200] [--off]
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from autopilot.vocab.config import load_mission, load_vessel  # noqa: E402
from hil.devices import nmea_forgery
from hil.sim import faults as sim_faults  # noqa: E402
from hil.sim.runner import SimOptions, run_sim  # noqa: E402

MISSION = os.path.join(os.path.dirname(__file__), "..", "config", "missions", "demo.yaml")
REFUSALS = ("conflicts", "parse_errors", "backward_fixes", "skew_fixes", "jump_fixes", "calendar_fixes",
            "frozen_fixes", "followed_runs", "time_collisions", "hdop_floored", "velocity_dropped")


def _fly(kind, seed, fraction, duration, off):
    if off:
        from drivers.gnss import plausibility as gnss_plausibility
        gnss_plausibility.FixPlausibility.check = lambda self, f: f
    sim_faults.FORGE_KINDS = None if kind == "all" else (kind,)
    faults = () if kind is None else (sim_faults.parse_fault(f"gps-forge@20:{duration - 30:g}={fraction:g}"),)
    opts = SimOptions(seed=seed, gps_noise="realistic", duration_s=duration, faults=faults)
    res = run_sim(load_vessel("foka"), load_mission(MISSION), opts)
    tr = res.trace
    err = np.hypot(tr["est_n"] - tr["truth_n"], tr["est_e"] - tr["truth_e"])
    fs = [(round(e.time_s, 1), e.failsafe, e.action) for e in res.events if e.kind == "failsafe"]
    return err, res.report["gnss_driver"], res.report["gnss_forged_epochs"], fs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--fraction", type=float, default=1.0, help="share of epochs forged (never two in a row)")
    ap.add_argument("--duration", type=float, default=200.0)
    ap.add_argument("--off", action="store_true", help="without the driver's plausibility checks")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--kinds", nargs="+", default=list(nmea_forgery.KINDS) + ["all"], help="forgery kinds to fly")
    a = ap.parse_args()
    kinds = a.kinds
    jobs = [(k, s) for s in a.seeds for k in [None] + kinds]
    with ProcessPoolExecutor(a.workers) as pool:
        futs = {job: pool.submit(_fly, job[0], job[1], a.fraction, a.duration, a.off) for job in jobs}
        out = {job: f.result() for job, f in futs.items()}
    print(f"gps-forge, fraction {a.fraction:g} (lone forgeries), {a.duration:g} s of the demo mission on FOKA, "
          f"plausibility checks {'OFF' if a.off else 'on'}")
    print(f"{'kind':<11} {'seed':>4} {'forged':>6} {'refused':>7} {'added err max':>13}  failsafes")
    worst, any_fs = 0.0, 0
    for k in kinds:
        for s in a.seeds:
            ref_err = out[(None, s)][0]
            err, stats, forged, fs = out[(k, s)]
            n = min(len(err), len(ref_err))
            added = float(np.max(err[:n] - ref_err[:n]))
            refused = {r: stats[r] for r in REFUSALS if stats.get(r)}
            worst, any_fs = max(worst, added), any_fs + len(fs)
            print(f"{k:<11} {s:>4} {forged:>6} {sum(refused.values()):>7} {added:>13.2f}  {fs or '-'}  {refused}")
    print(f"worst added estimate error {worst:.2f} m; failsafe events {any_fs}")


if __name__ == "__main__":
    main()
