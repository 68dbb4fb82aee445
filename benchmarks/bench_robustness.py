"""Mismatch campaign: the autopilot flies boats that differ from its vessel file, and must not notice too much.

    python benchmarks/bench_robustness.py [--presets foka,iacquabot,wamv] [--missions demo,hexagon,loiter]
        [--seeds 1,2,3] [--random 20] [--factors 0.4,0.6,1.5,2.5] [--keys ...] [--extras] [--workers N]
        [--devices bytes|typed] [--out DIR] [--ray auto|ADDRESS] [--ekf KEY=VALUE,...]

For every preset and mission, the plant is the preset's own vessel file scaled by a mismatch (hil.sim.plant_spec):
each coefficient of --keys alone at each of --factors, plus --random combinations with every coefficient
drawn log-uniformly within x/÷2 (`random=1`), each at every seed, beside the matched run (no mismatch) of the
same seed. `--extras` adds to every plant what a diagonal model leaves out (hil.sim.plant_spec.realistic_extras:
sway-yaw coupling, CG off the reference point, trim and wave-driven roll/pitch at the IMU, one thruster 10 %
weak). Conditions: the demo's weather (wind 3 m/s from 90, current 0.2 m/s toward 0, waves 0.2 m 3 s from 90),
1 Hz GNSS with 2.0 m CEP white noise.

Missions: `demo` (the lawnmower survey), `hexagon` (VRX's six legs), `loiter` (station keeping on the launch
point for 300 s after arriving: the figure is the 95th percentile of the true distance from the point).

Printed per preset and mission: runs, missions completed, false failsafes (every failsafe event: no fault is
injected here), xte_rms on true position against the matched run of the same seed (median and worst ratio,
and how many runs are over 1.5x), the same for path_rms (distance from the path, corners included), the worst
xte_max, the worst estimate error (RMS, true position) and the smallest raw GNSS error (RMS) of any
run, the runs whose estimate was not better than raw GNSS, for LOITER the worst 95th percentile, and the runs
with a compass warning (`compassW`: the simulated magnetometer is undistorted, so every one is false). Then the
worst runs by xte ratio. Runs go through hil/sim/campaign.py's runner: worker processes (all cores by default) or
Ray tasks (--ray), each row kept in --out as it finishes. Nothing is asserted here.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_failsafes import STATION  # noqa: E402  (the same station-keeping mission)

from autopilot.calibration.mag_watch import DISTURBANCE_WARNING  # noqa: E402
from autopilot.guidance.turn_rate_watch import WARN_SCALE  # noqa: E402
from autopilot.guidance.turning import steady_yaw_rate_rps  # noqa: E402
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel  # noqa: E402
from hil.sim.environment import EnvironmentConfig  # noqa: E402
from hil.sim.plant_spec import RANDOM_KEYS, PlantSpec, realistic_extras  # noqa: E402
from hil.sim.runner import SimOptions, run_sim  # noqa: E402

DEMO_ENV = dict(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2, current_toward_deg=0.0,
                wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)
LOITER_S = 300.0


def _mission(kind: str):
    if kind == "loiter":
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "station.yaml"
            path.write_text(STATION)
            return load_mission(path)
    return load_mission(CONFIG_DIR / "missions" / f"{kind}.yaml")


def run_one(task: dict) -> dict:
    """One simulation; returns the row (never raises: an exception is a row with `error`)."""
    row = dict(task)
    if task.get("ekf"):
        # trying another filter tuning: the autopilot builds its EkfTuning itself, so change its defaults
        import functools

        import estimation.navekf.ekf as ekf
        if not hasattr(ekf, "_BenchDefaultTuning"):
            ekf._BenchDefaultTuning = ekf.EkfTuning
        ekf.EkfTuning = functools.partial(ekf._BenchDefaultTuning, **task["ekf"])
    try:
        vessel = load_vessel(task["preset"])
        mission = _mission(task["mission"])
        extras = realistic_extras(vessel) if task["extras"] else None
        spec = PlantSpec.resolve(vessel, task["seed"], mismatch=task["mismatch"], extras=extras,
                                 draw=task.get("draw", 0))
        opts = SimOptions(seed=task["seed"], env=EnvironmentConfig(**DEMO_ENV), gps_noise="white",
                          devices=task["devices"], plant_spec=spec,
                          duration_s=(LOITER_S + 60.0) if task["mission"] == "loiter" else None)
        res = run_sim(vessel, mission, opts)
        r = res.report
        row.update(complete=bool(r["mission_complete"]), xte_rms_m=r["xte_rms_m"], xte_max_m=r["xte_max_m"],
                   path_rms_m=r["path_rms_m"], pos_err_rms_m=r["pos_err_rms_m"], gps_err_rms_m=r["gps_err_rms_m"],
                   failsafes=[f"{e['kind']}->{e['action']}" for e in r["failsafe_events"]],
                   factors=spec.mismatch, wall_s=r["wall_time_s"],
                   compass_warnings=sum(1 for e in res.events
                                        if e.kind == "warning" and e.message.startswith(DISTURBANCE_WARNING)))
        if task["mission"] == "loiter":
            entered = [e.time_s for e in res.events if e.kind == "mode" and "-> LOITER" in e.message]
            tr = res.trace
            if entered:
                m = (tr["t"] >= entered[0]) & (tr["t"] < entered[0] + LOITER_S)
                d = np.hypot(tr["truth_n"][m] - res.start_ned[0], tr["truth_e"][m] - res.start_ned[1])
                row["loiter_p95_m"] = float(np.percentile(d, 95))
            else:
                row["loiter_p95_m"] = float("inf")
            row["complete"] = bool(entered) and r["final_mode"] == "LOITER"
    except Exception as e:      # a crash is a finding, reported as a row
        row["error"] = f"{type(e).__name__}: {e}"
    return row


def tasks(args) -> list:
    out = []
    for preset in args.presets:
        for mission in args.missions:
            for seed in args.seeds:
                base = dict(preset=preset, mission=mission, seed=seed, extras=args.extras, devices=args.devices,
                            ekf=args.ekf)
                out.append(dict(base, label="matched", mismatch={}))
                for key in args.keys:
                    for f in args.factors:
                        out.append(dict(base, label=f"{key}x{f:g}", mismatch={key: f}))
                for i in range(args.random):
                    out.append(dict(base, label=f"random#{i + 1}", mismatch={"random": 1.0}, draw=i + 1))
    return out


def _false_failsafes(row) -> int:
    return sum(1 for f in row.get("failsafes", []) if not f.endswith("->recovered"))


TURN_BINS = (0.5, WARN_SCALE, 1.25)   # edges of the turn-rate ratio bins (the watch warns below WARN_SCALE)


@functools.lru_cache(maxsize=None)
def _yaw_model(preset: str) -> tuple:
    """(-N_r, -N_r|r|, the allocator's largest yaw moment [N*m]) of a preset's vessel file."""
    from autopilot.control.allocation import Allocator
    from drivers.thrust_map import make_thrust_map
    vessel = load_vessel(preset)
    h = vessel.hull
    return -h.n_r, -h.n_rr, Allocator(vessel, [make_thrust_map(t, vessel) for t in vessel.thrusters]).max_yaw_nm


def turn_rate_ratio(preset: str, factors: dict) -> float:
    """How fast the plant turns against its vessel file: its steady yaw rate on the allocator's largest yaw
    moment over the file's, with N_r, N_r|r| and the thrust scaled by the run's mismatch factors."""
    d, drr, moment = _yaw_model(preset)
    plant = steady_yaw_rate_rps(d * factors.get("n_r", 1.0), drr * factors.get("n_rr", 1.0),
                                moment * factors.get("thrust", 1.0))
    return plant / steady_yaw_rate_rps(d, drr, moment)


def summarise_by_turn_rate(rows: list) -> None:
    """Runs over 1.5x the matched run's xte_rms, by how fast the true boat turns against its file."""
    matched = {(r["preset"], r["mission"], r["seed"]): r for r in rows if r["label"] == "matched"}
    edges = (0.0,) + TURN_BINS + (math.inf,)
    names = ([f"<{TURN_BINS[0]:g}"] + [f"{a:g}-{b:g}" for a, b in zip(TURN_BINS, TURN_BINS[1:])]
             + [f">={TURN_BINS[-1]:g}"])
    counts: dict = {}
    for r in rows:
        m = matched.get((r["preset"], r["mission"], r["seed"]))
        if r["label"] == "matched" or r["mission"] == "loiter" or "error" in r or not m or "error" in m:
            continue
        k = turn_rate_ratio(r["preset"], r.get("factors") or {})
        b = next(i for i in range(len(names)) if edges[i] <= k < edges[i + 1])
        for preset in (r["preset"], "all"):
            c = counts.setdefault((preset, b), [0, 0])
            c[0] += 1
            c[1] += r["xte_rms_m"] / m["xte_rms_m"] > 1.5
    if not counts:
        return
    print("\nruns over 1.5x by turn-rate ratio k (the plant's steady yaw rate on the full yaw moment over the file's;"
          f"\nthe autopilot warns below {WARN_SCALE:g}), over / runs, demo and hexagon:")
    print(f"  {'preset':9s} " + " ".join(f"{n:>10s}" for n in names))
    for preset in [p for p in dict.fromkeys(p for p, _ in counts) if p != "all"] + ["all"]:
        cells = [counts.get((preset, b), [0, 0]) for b in range(len(names))]
        print(f"  {preset:9s} " + " ".join(f"{f'{o}/{n}':>10s}" for n, o in cells))


def summarise(rows: list) -> None:
    matched = {(r["preset"], r["mission"], r["seed"]): r for r in rows if r["label"] == "matched"}
    print(f"{'preset':9s} {'mission':8s} {'runs':>5s} {'done':>5s} {'falseFS':>7s} {'xteRatio med/max':>17s} "
          f"{'>1.5x':>5s} {'pathRatio med/max':>17s} {'xteMax':>7s} {'estRMS max':>10s} {'gpsRMS min':>10s} "
          f"{'est>=gps':>8s} {'loiterP95':>9s} {'compassW':>8s} {'errors':>6s}")
    worst = []
    for preset in dict.fromkeys(r["preset"] for r in rows):
        for mission in dict.fromkeys(r["mission"] for r in rows):
            group = [r for r in rows if r["preset"] == preset and r["mission"] == mission]
            if not group:
                continue
            ok = [r for r in group if "error" not in r]
            ratios, path_ratios = [], []
            for r in ok:
                m = matched.get((preset, mission, r["seed"]))
                if mission != "loiter" and m and "error" not in m and m["xte_rms_m"] > 0:
                    ratios.append(r["xte_rms_m"] / m["xte_rms_m"])
                    path_ratios.append(r["path_rms_m"] / m["path_rms_m"])
                    worst.append((ratios[-1], r))
            est = [r["pos_err_rms_m"] for r in ok]
            gps = [r["gps_err_rms_m"] for r in ok]
            loiter = [r["loiter_p95_m"] for r in ok if "loiter_p95_m" in r]
            print(f"{preset:9s} {mission:8s} {len(group):5d} {sum(r.get('complete', False) for r in ok):5d} "
                  f"{sum(_false_failsafes(r) for r in ok):7d} "
                  f"{(f'{np.median(ratios):.2f}/{max(ratios):.2f}' if ratios else '-'):>17s} "
                  f"{sum(x > 1.5 for x in ratios):5d} "
                  f"{(f'{np.median(path_ratios):.2f}/{max(path_ratios):.2f}' if path_ratios else '-'):>17s} "
                  f"{(max(r['xte_max_m'] for r in ok) if ok and mission != 'loiter' else float('nan')):7.2f} "
                  f"{max(est) if est else float('nan'):10.2f} {min(gps) if gps else float('nan'):10.2f} "
                  f"{sum(r['pos_err_rms_m'] >= r['gps_err_rms_m'] for r in ok):8d} "
                  f"{(max(loiter) if loiter else float('nan')):9.2f} "
                  f"{sum(r.get('compass_warnings', 0) > 0 for r in ok):8d} {len(group) - len(ok):6d}")
    worst.sort(key=lambda x: -x[0])
    if worst:
        print("\nworst runs by xte_rms ratio to the matched run of the same seed:")
        for ratio, r in worst[:8]:
            print(f"  {ratio:5.2f}  {r['preset']:9s} {r['mission']:8s} seed {r['seed']} {r['label']:14s} "
                  f"xte_rms {r['xte_rms_m']:.2f} m, path {r['path_rms_m']:.2f} m, est {r['pos_err_rms_m']:.2f} m, "
                  f"gps {r['gps_err_rms_m']:.2f} m, "
                  f"failsafes {r['failsafes']}")
    for r in rows:
        if "error" in r:
            print(f"  error: {r['preset']} {r['mission']} seed {r['seed']} {r['label']}: {r['error']}")
        elif _false_failsafes(r) or not r.get("complete"):
            print(f"  {'incomplete' if not r.get('complete') else 'failsafe'}: {r['preset']} {r['mission']} "
                  f"seed {r['seed']} {r['label']}: {r.get('failsafes')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="foka,iacquabot,wamv", type=lambda s: s.split(","))
    ap.add_argument("--missions", default="demo,hexagon,loiter", type=lambda s: s.split(","))
    ap.add_argument("--seeds", default="1,2,3", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--factors", default="0.4,0.6,1.5,2.5", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--keys", default=None, type=lambda s: s.split(","),
                    help=f"coefficients scaled one at a time (default: {','.join(RANDOM_KEYS)})")
    ap.add_argument("--random", type=int, default=None,
                    help="random combinations within x/÷2 per seed (default 20; 0 when --keys names a subset)")
    ap.add_argument("--extras", action="store_true", help="add the realistic extras to every plant")
    ap.add_argument("--devices", choices=("bytes", "typed"), default="bytes")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ray", metavar="auto|ADDRESS", help="run as Ray tasks (hil/sim/campaign.py) instead of local "
                                                          "processes")
    ap.add_argument("--out", metavar="DIR", help="keep every run in DIR/results.jsonl; running again with the same "
                                                 "DIR does only the runs not there yet")
    ap.add_argument("--ekf", default={}, type=lambda s: {k: json.loads(v) for k, v in
                                                         (p.split("=", 1) for p in s.split(",") if p)},
                    metavar="KEY=VALUE,...", help="EkfTuning fields to try instead of the defaults")
    args = ap.parse_args()
    if args.random is None:
        args.random = 20 if args.keys is None else 0
    if args.keys is None:
        args.keys = list(RANDOM_KEYS)
    from hil.sim.campaign import run_campaign, run_id
    todo = [dict(t, id=run_id(t)) for t in tasks(args)]
    where = f"Ray ({args.ray})" if args.ray else f"{args.workers} workers"
    print(f"{len(todo)} runs on {where} ({args.devices} devices"
          f"{', realistic extras' if args.extras else ''})", file=sys.stderr)
    t0 = time.perf_counter()

    def progress(row, done, total):
        if done % 20 == 0 or done == total:
            print(f"  {done}/{total} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows = run_campaign(todo, args.out or tempfile.mkdtemp(), workers=args.workers, ray_address=args.ray,
                        on_row=progress, fn=run_one)
    rows.sort(key=lambda r: (r["preset"], r["mission"], r["seed"], r["label"]))
    print(f"mismatch campaign: {len(rows)} runs in {time.perf_counter() - t0:.0f} s wall on {where}; "
          f"demo weather, 1 Hz GNSS 2.0 m CEP white{', realistic extras' if args.extras else ''}")
    summarise(rows)
    summarise_by_turn_rate(rows)


if __name__ == "__main__":
    main()
