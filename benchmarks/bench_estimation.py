"""Estimation figures from `autopilot sim` runs (closed loop, the real drivers on emulated devices).

    python benchmarks/bench_estimation.py [--seeds 3]

Prints, per scenario and seed, what the estimation issue asks for:
- raw-GNSS MAE / estimate MAE on the WAM-V straight line at 10 Hz (white, 2.0 m CEP) and on the FOKA demo
  survey at the L76K's 1 Hz (white);
- with realistic GNSS noise (white + Gauss-Markov bias): estimate RMS against raw RMS, and the largest step of
  the estimate between consecutive 50 Hz cycles beyond the boat's own motion while GNSS is healthy;
- a 30 s GNSS outage at cruise (gps-loss fault): the estimate's error at the end of the outage and its largest
  step (beyond the boat's motion) in the 10 s after GNSS returns;
- a single 20 m GNSS jump (a 1 s gps-glitch of 20 m): how far the estimate moved, as the largest difference to
  the same run (same seed, same noise) without the jump.
The sim reports come from the same code as `autopilot sim ... --report`; nothing here is asserted.
"""
from __future__ import annotations

import argparse

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.faults import parse_fault
from hil.sim.runner import SimOptions, run_sim

MISSIONS = CONFIG_DIR / "missions"
WEATHER = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)


def _run(vessel, mission, **kw):
    return run_sim(load_vessel(vessel), load_mission(MISSIONS / f"{mission}.yaml"), SimOptions(**kw))


def _est_minus_truth(tr):
    return np.hypot(tr["est_n"] - tr["truth_n"], tr["est_e"] - tr["truth_e"])


def _extra_steps(tr, mask):
    """|estimate step - true step| between consecutive cycles [m], where mask holds at both ends."""
    dn = np.diff(tr["est_n"]) - np.diff(tr["truth_n"])
    de = np.diff(tr["est_e"]) - np.diff(tr["truth_e"])
    ok = mask[1:] & mask[:-1]
    return np.hypot(dn, de)[ok]


def ratio_rows(seeds):
    print("GNSS MAE / estimate MAE (white noise, 2.0 m CEP)")
    print(f"  {'scenario':50s} {'seed':>4s} {'gps mae':>8s} {'est mae':>8s} {'ratio':>6s}  target")
    cases = (("straight_line / wamv / 10 Hz", "wamv", "straight_line", dict(gps_rate_hz=10), 8),
             ("demo / foka / 1 Hz, calm", "foka", "demo", {}, 4),
             ("demo / foka / 1 Hz, wind 3, current 0.2, waves 0.2", "foka", "demo", dict(env=WEATHER), 4))
    for label, vessel, mission, kw, target in cases:
        for seed in seeds:
            r = _run(vessel, mission, seed=seed, gps_noise="white", **kw).report
            ratio = r["gps_err_mae_m"] / r["pos_err_mae_m"]
            print(f"  {label:50s} {seed:4d} {r['gps_err_mae_m']:8.2f} {r['pos_err_mae_m']:8.3f} {ratio:6.2f}  "
                  f">= {target}")


def realistic_rows(seeds):
    print("Realistic GNSS (white + Gauss-Markov bias), demo / foka in wind, current and waves")
    print(f"  {'seed':>4s} {'gps rms':>8s} {'est rms':>8s} {'max extra step (m)':>19s}")
    for seed in seeds:
        res = _run("foka", "demo", seed=seed, gps_noise="realistic", env=WEATHER)
        tr, r = res.trace, res.report
        steps = _extra_steps(tr, tr["est_valid"] > 0.5)
        print(f"  {seed:4d} {r['gps_err_rms_m']:8.2f} {r['pos_err_rms_m']:8.2f} {steps.max():19.3f}")


def outage_rows(seeds, start_s=60.0, length_s=30.0):
    print(f"GNSS outage of {length_s:g} s at cruise (gps-loss@{start_s:g}:{length_s:g}), demo / foka, white noise")
    print(f"  {'seed':>4s} {'err before':>10s} {'err at end':>10s} {'max extra step after return':>28s}")
    for seed in seeds:
        res = _run("foka", "demo", seed=seed, gps_noise="white",
                   faults=(parse_fault(f"gps-loss@{start_s:g}:{length_s:g}"),))
        tr = res.trace
        t, err = tr["t"], _est_minus_truth(tr)
        before = err[np.searchsorted(t, start_s) - 1]
        end = err[np.searchsorted(t, start_s + length_s) - 1]
        after = (t >= start_s + length_s - 0.02) & (t <= start_s + length_s + 10.0)
        steps = _extra_steps(tr, after)
        print(f"  {seed:4d} {before:10.2f} {end:10.2f} {steps.max():28.3f}")


def jump_rows(seeds, start_s=60.0, size_m=20.0):
    print(f"A single {size_m:g} m GNSS jump (gps-glitch@{start_s:g}:1={size_m:g}), demo / foka, white noise")
    print(f"  {'seed':>4s} {'estimate moved by (m)':>22s}")
    for seed in seeds:
        clean = _run("foka", "demo", seed=seed, gps_noise="white", duration_s=start_s + 30).trace
        jump = _run("foka", "demo", seed=seed, gps_noise="white", duration_s=start_s + 30,
                    faults=(parse_fault(f"gps-glitch@{start_s:g}:1={size_m:g}"),)).trace
        moved = np.hypot(jump["est_n"] - clean["est_n"], jump["est_e"] - clean["est_e"])
        print(f"  {seed:4d} {np.nanmax(moved):22.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    seeds = range(1, args.seeds + 1)
    ratio_rows(seeds)
    realistic_rows(seeds)
    outage_rows(seeds)
    jump_rows(seeds)


if __name__ == "__main__":
    main()
