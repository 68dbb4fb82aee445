"""The run log as a rosbag2 bag: its size per hour of a simulated run (every live topic, IMU at every sample),
messages per second by topic, and how fast `autopilot log recover` rebuilds a cut run.mcap + metadata.yaml.

    /work/venv/bin/python benchmarks/bench_run_bag.py [--seconds S] [--dir DIR]

DIR should be on the storage the boat logs to (an SD card on the Pi); the default is a temporary directory.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from autopilot.cli.main import main as cli


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="simulated seconds of the run")
    ap.add_argument("--dir", help="where to write the run (default: a temporary directory)")
    args = ap.parse_args()
    from rosbags.rosbag2 import Reader

    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        print(f"run-bag benchmark in {base} ({os.uname().machine}, Python {sys.version.split()[0]})")
        rc = cli(["sim", str(repo / "config/missions/demo.yaml"), "--vessel", "foka", "--duration",
                  str(args.seconds), "--log", str(base / "runs")])
        if rc != 0:
            raise SystemExit(f"the simulation failed (exit {rc})")
        (run_dir,) = list((base / "runs").iterdir())
        mcap = run_dir / "run.mcap"
        size = mcap.stat().st_size
        with Reader(run_dir) as bag:
            counts = sorted(((c.msgcount, c.topic) for c in bag.connections), reverse=True)
            total = bag.message_count
        print(f"run.mcap of a {args.seconds:g} s simulated run (log at 10 Hz, sensors at every sample): "
              f"{size / 1e6:.2f} MB, {size / args.seconds * 3600 / 1e6:.0f} MB per hour, {total} messages")
        print("  messages per second: " + ", ".join(f"{t} {n / args.seconds:.1f}" for n, t in counts[:8]))
        cut = base / "cut"
        shutil.copytree(run_dir, cut)
        (cut / "metadata.yaml").unlink()
        os.truncate(cut / "run.mcap", int(size * 0.9))        # what a kill leaves: no footer, a cut record
        t0 = time.perf_counter()
        rc = cli(["log", "recover", str(cut)])
        dt = time.perf_counter() - t0
        if rc != 0:
            raise SystemExit("recover failed")
        print(f"autopilot log recover on {0.9 * size / 1e6:.2f} MB: {dt:.2f} s ({0.9 * size / 1e6 / dt:.1f} MB/s) "
              f"-> {size / args.seconds * 3600 / 1e6 / (0.9 * size / 1e6 / dt):.0f} s for an hour's run")


if __name__ == "__main__":
    main()
