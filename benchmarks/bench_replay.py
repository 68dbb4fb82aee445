"""Estimator-input recording and replay: what the record costs the loop and the card, how fast a run replays,
and how exactly.

    .venv/bin/python benchmarks/bench_replay.py [--seconds S] [--dir DIR]

Flies FOKA on the demo survey for S simulated seconds with the run log on (as `autopilot sim --log`), then:
the size of estimator_inputs.bin per second and hour; the loop-side cost of log_estimator_step (a deque
append) and the writer thread's encoding per step; the replay's speed (the filter alone, and with reading and
writing the new run); and the largest difference between the replayed and the recorded estimate.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autopilot.guidance.path_following import mission_frame  # noqa: E402
from autopilot.replay.navigation import replay_run  # noqa: E402
from autopilot.runlog import RunLogger  # noqa: E402
from autopilot.runlog.estimator_inputs import FILE_NAME, read_estimator_inputs, step_record  # noqa: E402
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel  # noqa: E402
from estimation.navekf.ekf import NavigationEKF  # noqa: E402
from tests.support.replay_helpers import logged_sim  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="simulated run length [s] (default 300)")
    ap.add_argument("--dir", help="folder for the runs (default: a temporary one); use the boat's card")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench_replay_"))

    t0 = time.perf_counter()
    run_dir, _sim = logged_sim(base / "runs", duration_s=args.seconds, seed=7)
    print(f"logged sim: {args.seconds:.0f} s simulated in {time.perf_counter() - t0:.1f} s -> {run_dir}")
    size = (run_dir / FILE_NAME).stat().st_size
    print(f"{FILE_NAME}: {size / args.seconds / 1e3:.1f} kB/s, {size / args.seconds * 3600 / 1e6:.0f} MB/h "
          f"(state.csv {(run_dir / 'state.csv').stat().st_size / args.seconds / 1e3:.1f} kB/s, "
          f"run.mcap {(run_dir / 'run.mcap').stat().st_size / args.seconds / 1e3:.1f} kB/s)")

    rec = read_estimator_inputs(run_dir)
    results = [types.SimpleNamespace(estimator_step=s.step, estimator_thrust=s.thrust, nav=s.nav)
               for s in rec.steps]
    ekf = NavigationEKF(load_vessel("foka"), mission_frame(load_mission(CONFIG_DIR / "missions" / "demo.yaml")))
    n = min(len(rec.steps), 5000)
    calls = np.empty(n)
    log = RunLogger(base / "bench", rate_hz=10, keep_runs=None, max_total_mb=None)
    for k in range(n):
        s = rec.steps[k]
        c0 = time.perf_counter()
        log.log_estimator_step(s.t_s, s.batch, results[k], ekf)
        calls[k] = time.perf_counter() - c0
        time.sleep(0.0005)                 # let the writer thread run, as between real cycles
    log.close()
    print(f"log_estimator_step (loop side, {n} calls): median {np.median(calls) * 1e6:.1f} us, "
          f"p99 {np.percentile(calls, 99) * 1e6:.1f} us, max {calls.max() * 1e6:.0f} us (the first builds the header)")
    c0 = time.perf_counter()
    for s, r in zip(rec.steps, results):
        step_record(s.t_s, s.batch, r)
    print(f"encoding (writer thread): {(time.perf_counter() - c0) / len(results) * 1e6:.1f} us per step")

    c0 = time.perf_counter()
    r = replay_run(run_dir, out_base=base / "replays")
    total = time.perf_counter() - c0
    print(f"replay of {r.steps} steps: filter {r.wall_s:.2f} s ({r.run_span_s / r.wall_s:.0f}x real time), "
          f"with reading and writing {total:.2f} s ({r.run_span_s / total:.0f}x)")
    print(f"replay vs recorded estimate over {r.compared} steps: max position difference {r.pos_diff_max_m:.3g} m, "
          f"max heading difference {r.heading_diff_max_deg:.3g} deg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
