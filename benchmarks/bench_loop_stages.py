"""Where one control cycle's CPU time goes, stage by stage, for the cases of bench_loop.py.

Each case is flown once under cProfile. A function's own time counts for the stage its source file belongs to
(the STAGES table below); time spent in library code (numpy, the standard library, C builtins) counts for the
project function that called it, shared among callers in proportion to what each call cost. The profiler's
own overhead inflates Python calls more than C calls, so the table also prints each stage's share, and the
unprofiled cost per cycle of the same run (best of --repeats), which the µs column is scaled to.

    python benchmarks/bench_loop_stages.py [--duration 120] [--devices typed|bytes|both] [--case demo/foka]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.runner import SimOptions, run_sim

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loop import CASES  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# (stage, path prefixes relative to the repository); the first match wins, so narrower prefixes come first
STAGES = (
    ("plant and environment", ("hil/sim/plant.py", "hil/sim/dynamics.py", "hil/sim/environment.py",
                               "hil/sim/battery.py", "hil/sim/plant_spec.py")),
    ("sensor models (typed)", ("hil/sim/sensor_models.py", "hil/sim/mag_distortion.py")),
    ("emulated devices", ("hil/devices/",)),
    ("drivers: GNSS", ("drivers/gnss/",)),
    ("drivers: IMU and I2C", ("drivers/lsm9ds1.py", "drivers/i2c_adapter.py", "drivers/power_monitor/")),
    ("drivers: ESC pulses", ("drivers/esc/",)),
    ("thrust maps", ("drivers/thrust_map.py",)),
    ("sensor plausibility", ("drivers/sensor_plausibility.py",)),
    ("EKF: model-consistency monitor", ("estimation/navekf/model_consistency.py",)),
    ("EKF: health", ("estimation/navekf/health.py",)),
    ("EKF: predict and updates", ("estimation/navekf/",)),
    ("heading estimation", ("estimation/heading/",)),
    ("guidance", ("autopilot/guidance/",)),
    ("allocation", ("autopilot/control/allocation.py", "autopilot/control/azimuth_allocation.py")),
    ("control", ("autopilot/control/",)),
    ("modes", ("autopilot/modes/",)),
    ("failsafes and watches", ("autopilot/safety/", "autopilot/calibration/mag_watch.py")),
    ("calibration", ("autopilot/calibration/",)),
    ("run log", ("autopilot/runlog/",)),
    ("vehicle glue (Autopilot.step)", ("autopilot/vehicle.py", "autopilot/interfaces.py")),
    ("vocabulary (geodesy, types)", ("autopilot/vocab/",)),
    ("sim loop and metrics", ("hil/sim/",)),
    ("other project code", ("autopilot/", "drivers/", "estimation/", "hil/")),
)


def stage_of(filename: str):
    """The stage a project source file belongs to; None for library code (numpy, stdlib, builtins)."""
    try:
        rel = Path(filename).resolve().relative_to(REPO).as_posix()
    except (ValueError, OSError):
        return None
    for stage, prefixes in STAGES:
        if rel.startswith(prefixes):
            return stage
    return None


def attribute(stats: pstats.Stats) -> dict:
    """{stage: profiled seconds}: own time by stage; library time handed up the call graph to project callers."""
    raw = stats.stats  # type: ignore[attr-defined]   # {func: (cc, nc, tt, ct, callers)}
    out: dict = defaultdict(float)
    shares: dict = {}             # library func -> {stage: fraction of its time}, memoised

    def share_of(func, seen) -> dict:
        if func in shares:
            return shares[func]
        stage = stage_of(func[0])
        if stage is not None:
            return {stage: 1.0}
        callers = raw[func][4]
        total = sum(edge[3] for edge in callers.values()) or sum(edge[1] for edge in callers.values())
        result: dict = defaultdict(float)
        if not callers or total <= 0 or func in seen:
            result["library (no project caller)"] = 1.0
        else:
            for caller, edge in callers.items():
                w = (edge[3] if edge[3] > 0 else edge[1]) / total
                for st, f in share_of(caller, seen | {func}).items():
                    result[st] += w * f
        shares[func] = dict(result)
        return shares[func]

    for func, (_cc, _nc, tt, _ct, _callers) in raw.items():
        for st, f in share_of(func, frozenset()).items():
            out[st] += tt * f
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=120.0, help="simulated seconds per run")
    ap.add_argument("--repeats", type=int, default=3, help="unprofiled runs for the per-cycle cost (best of)")
    ap.add_argument("--devices", choices=("bytes", "typed", "both"), default="both")
    ap.add_argument("--case", action="append", default=[], metavar="MISSION/VESSEL",
                    help="only these cases of bench_loop.py (default: all)")
    args = ap.parse_args()
    levels = ("typed", "bytes") if args.devices == "both" else (args.devices,)
    cases = [c for c in CASES if not args.case or f"{c[0]}/{c[1]}" in args.case]
    if not cases:
        ap.error(f"no case matches {args.case}; cases: {', '.join(f'{c[0]}/{c[1]}' for c in CASES)}")
    for level in levels:
        for mission_name, vessel_name, env in cases:
            vessel = load_vessel(vessel_name)
            mission = load_mission(CONFIG_DIR / "missions" / f"{mission_name}.yaml")

            def fly():
                return run_sim(vessel, mission, SimOptions(seed=1, env=env, duration_s=args.duration, devices=level))

            best = None
            for _ in range(args.repeats):
                c0 = time.process_time()
                res = fly()
                cpu = time.process_time() - c0
                best = cpu if best is None else min(best, cpu)
            cycles = round(res.report["sim_time_s"] * vessel.control.loop_rate_hz)
            prof = cProfile.Profile(time.process_time)
            prof.enable()
            fly()
            prof.disable()
            by_stage = attribute(pstats.Stats(prof))
            profiled = sum(by_stage.values())
            us_per_cycle = best / cycles * 1e6
            print(f"\n{level} / {mission_name} / {vessel_name}: {cycles} cycles, {us_per_cycle:.0f} us/cycle "
                  f"unprofiled (best of {args.repeats}), {profiled / cycles * 1e6:.0f} us/cycle profiled")
            print(f"  {'stage':34s} {'share':>6s} {'us/cycle':>9s}")
            for stage, s in sorted(by_stage.items(), key=lambda kv: -kv[1]):
                share = s / profiled
                if share >= 0.002:
                    print(f"  {stage:34s} {100 * share:5.1f}% {share * us_per_cycle:9.1f}")


if __name__ == "__main__":
    main()
