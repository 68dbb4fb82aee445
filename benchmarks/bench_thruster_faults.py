"""Thruster faults: how soon a weak or dead thruster is noticed, what the boat then does, and how often a healthy
but mismatched boat is wrongly suspected.

    python benchmarks/bench_thruster_faults.py [--presets foka,iacquabot,wamv] [--seeds 1,2] [--fault-at 60]
        [--duration 400] [--draws 10] [--campaign-seeds 1,2] [--workers 2] [--devices typed|bytes] [--out DIR]

Fault runs: the demo mission in the demo weather (benchmarks/bench_robustness.py's DEMO_ENV: wind 3 m/s, current
0.2 m/s, 0.2 m waves), 1 Hz GNSS, each preset's first port thruster (left / aft_left) weak at 0.5 or dead from
--fault-at seconds, each seed, for --duration s. Printed per run: the first thruster event after the fault and
its delay (detection time), the thruster-dead failsafe and its action, the final mode, whether the mission was
completed, and the true distance from home (the launch point) at the end.

False-alarm campaign: no fault; every preset flies the whole demo mission on plants mismatched from its vessel
file, `random=1` draws (every coefficient of hil.sim.plant_spec.RANDOM_KEYS within x/÷2, thrust included) at
each --campaign-seeds seed, plus damping=0.7,thrust=0.85,iz=1.3, with the realistic extras (sway-yaw coupling,
CG offset, trim, one thruster 10 % weak: hil.sim.plant_spec.realistic_extras) and the demo weather. Counted: runs
with any thruster warning or thruster-dead failsafe (each is false). Runs go through hil/sim/campaign.py's
worker pool. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel  # noqa: E402
from hil.sim.environment import EnvironmentConfig  # noqa: E402
from hil.sim.faults import parse_fault  # noqa: E402
from hil.sim.plant_spec import PlantSpec, realistic_extras  # noqa: E402
from hil.sim.runner import SimOptions, run_sim  # noqa: E402

DEMO_ENV = dict(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2, current_toward_deg=0.0,
                wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)
PORT = {"foka": "left", "wamv": "left", "wamv_pods": "left", "iacquabot": "aft_left"}
FIXED_MISMATCH = {"damping": 0.7, "thrust": 0.85, "iz": 1.3}


def _thruster_events(events) -> list:
    return [e for e in events if e.kind in ("warning", "failsafe") and e.message.startswith("thruster")
            or e.kind == "failsafe" and e.failsafe == "thruster-dead"]


def run_one(task: dict) -> dict:
    """One simulation -> its row (an exception is a row with `error`)."""
    row = dict(task)
    try:
        vessel = load_vessel(task["preset"])
        vessel = dataclasses.replace(vessel, failsafe=dataclasses.replace(      # the watch is opt-in
            vessel.failsafe, thruster=dataclasses.replace(vessel.failsafe.thruster, enabled=True)))
        mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
        spec = None
        if task["mismatch"]:
            spec = PlantSpec.resolve(vessel, task["seed"], mismatch=task["mismatch"],
                                     extras=realistic_extras(vessel), draw=task.get("draw", 0))
        faults = (parse_fault(task["fault"]),) if task["fault"] else ()
        opts = SimOptions(seed=task["seed"], env=EnvironmentConfig(**DEMO_ENV), gps_noise="white",
                          devices=task["devices"], plant_spec=spec, faults=faults, duration_s=task["duration_s"])
        res = run_sim(vessel, mission, opts)
        r = res.report
        tev = _thruster_events(res.events)
        n, e = res.trace["truth_n"][-1], res.trace["truth_e"][-1]
        row.update(complete=bool(r["mission_complete"]), final_mode=r["final_mode"],
                   home_m=round(math.hypot(n - res.start_ned[0], e - res.start_ned[1]), 1),
                   events=[(round(ev.time_s, 1), ev.kind, ev.failsafe, str(ev.action), ev.message[:90])
                           for ev in tev],
                   failsafes=[f"{f['kind']}->{f['action']}" for f in r["failsafe_events"]],
                   sim_s=r["sim_time_s"], wall_s=r["wall_time_s"])
    except Exception as ex:          # a crash is a finding
        row["error"] = f"{type(ex).__name__}: {ex}"
    return row


def tasks(args) -> list:
    out = []
    for preset in args.presets:
        for seed in args.seeds:
            for kind in ("weak", "dead"):
                fault = (f"thruster-weak@{args.fault_at:g}:{PORT[preset]}=0.5" if kind == "weak"
                         else f"thruster-dead@{args.fault_at:g}:{PORT[preset]}")
                out.append(dict(part="fault", preset=preset, seed=seed, fault=fault, mismatch={},
                                duration_s=args.duration, devices=args.devices))
        for seed in args.campaign_seeds:
            out.append(dict(part="campaign", preset=preset, seed=seed, fault="", mismatch=FIXED_MISMATCH,
                            duration_s=None, devices=args.devices, label="damping0.7,thrust0.85,iz1.3"))
            for d in range(args.draws):
                out.append(dict(part="campaign", preset=preset, seed=seed, fault="", mismatch={"random": 1.0},
                                draw=d + 1, duration_s=None, devices=args.devices, label=f"random#{d + 1}"))
    return out


def report(rows: list, fault_at_s: float) -> None:
    print("\nfault runs (demo mission, demo weather; fault at %g s)" % fault_at_s)
    print(f"{'preset':10s} {'seed':>4s} {'fault':32s} {'first event':>11s} {'delay_s':>7s}  {'did':34s} "
          f"{'final':7s} {'done':>4s} {'home_m':>6s}")
    for r in rows:
        if r["part"] != "fault":
            continue
        if "error" in r:
            print(f"{r['preset']:10s} {r['seed']:4d} {r['fault']:32s} ERROR {r['error']}")
            continue
        ev = [e for e in r["events"] if e[0] >= fault_at_s]
        first = ev[0] if ev else None
        delay = f"{first[0] - fault_at_s:7.1f}" if first else "      -"
        kind = ("-" if first is None else "failsafe" if first[1] == "failsafe" else "warning")
        did = ", ".join(sorted(set(r["failsafes"]))) or ("warning only" if ev else "nothing")
        print(f"{r['preset']:10s} {r['seed']:4d} {r['fault']:32s} {kind:>11s} {delay}  {did:34s} "
              f"{r['final_mode']:7s} {'yes' if r['complete'] else 'no':>4s} {r['home_m']:6.1f}")
    camp = [r for r in rows if r["part"] == "campaign"]
    print(f"\nfalse-alarm campaign: {len(camp)} fault-free runs of the whole demo mission, mismatched plants "
          f"(random=1 draws and {','.join(f'{k}={v:g}' for k, v in FIXED_MISMATCH.items())}), realistic extras, "
          f"demo weather")
    print(f"{'preset':10s} {'runs':>4s} {'errors':>6s} {'complete':>8s} {'thruster warnings':>17s} "
          f"{'thruster-dead':>13s} {'other failsafes':>15s}")
    for preset in sorted({r["preset"] for r in camp}):
        mine = [r for r in camp if r["preset"] == preset]
        ok = [r for r in mine if "error" not in r]
        warn = sum(1 for r in ok if any(e[1] == "warning" for e in r["events"]))
        dead = sum(1 for r in ok if any(f.startswith("thruster-dead") for f in r["failsafes"]))
        other = sum(1 for r in ok if any(not f.startswith("thruster-dead") for f in r["failsafes"]))
        print(f"{preset:10s} {len(mine):4d} {len(mine) - len(ok):6d} {sum(r['complete'] for r in ok):8d} "
              f"{warn:17d} {dead:13d} {other:15d}")
    for r in camp:
        if "error" in r:
            print(f"  error: {r['preset']} seed {r['seed']} {r['label']}: {r['error']}")
        elif r["events"]:
            print(f"  false: {r['preset']} seed {r['seed']} {r['label']}: {r['events'][0]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="foka,iacquabot,wamv", type=lambda s: s.split(","))
    ap.add_argument("--seeds", default="1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--fault-at", type=float, default=60.0, help="fault start [s]")
    ap.add_argument("--duration", type=float, default=400.0, help="fault runs' length [s]")
    ap.add_argument("--draws", type=int, default=10, help="random mismatch draws per preset and campaign seed")
    ap.add_argument("--campaign-seeds", default="1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--devices", choices=("bytes", "typed"), default="typed")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", metavar="DIR", help="keep the rows in DIR/results.jsonl (a rerun does only the rest)")
    args = ap.parse_args()
    from hil.sim.campaign import run_campaign, run_id
    todo = [dict(t, id=run_id(t)) for t in tasks(args)]
    print(f"{len(todo)} runs on {args.workers} workers ({args.devices} devices)", file=sys.stderr)
    t0 = time.perf_counter()

    def progress(row, done, total):
        if done % 10 == 0 or done == total:
            print(f"  {done}/{total} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows = run_campaign(todo, args.out or tempfile.mkdtemp(), workers=args.workers, on_row=progress, fn=run_one)
    print(f"{len(rows)} runs in {time.perf_counter() - t0:.0f} s wall on {args.workers} workers, {args.devices} "
          f"devices, 1 Hz GNSS 2 m CEP white")
    report(rows, args.fault_at)


if __name__ == "__main__":
    main()
