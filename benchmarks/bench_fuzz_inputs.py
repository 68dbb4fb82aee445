"""A longer fuzz of the file loaders and `check` than CI runs: counts of loaded, refused and crashed cases.

    python benchmarks/bench_fuzz_inputs.py [--cases 20000] [--seed 1] [--kinds trajectory,trajcsv]

The mutations are tests/support/fuzz_inputs.py's (byte flips, deleted/duplicated lines, truncation, hostile values,
extreme numbers inside lists) on vessel, mission, QGC and trajectory missions (every `trajectory:` kind, and the
csv kind's reference file). Each case has a 10 s budget: one over it is stopped (SIGALRM) and counts as a hang.
Nothing is asserted; the counts are for the notes.
"""
from __future__ import annotations

import argparse
import collections
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fuzz_inputs import cases, run_case  # noqa: E402

HANG_S = 10


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="", help="comma-separated: vessel, mission, qgc, trajectory, trajcsv "
                                                "(default: all)")
    args = ap.parse_args()
    counts: collections.Counter = collections.Counter()
    examples = {}
    slowest = 0.0
    t0 = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, text in cases(args.cases, args.seed, [k for k in args.kinds.split(",") if k] or None):
            t = time.perf_counter()
            signal.alarm(HANG_S)
            try:
                result = run_case(kind, text, Path(tmp))
            except _Hang:
                result = "hang"
            finally:
                signal.alarm(0)
            dt = time.perf_counter() - t
            slowest = max(slowest, dt)
            key = (kind, "hang" if result == "hang" or dt > HANG_S else result.split(":")[0])
            counts[key] += 1
            if result.startswith("crash") or result == "hang":
                examples.setdefault(f"{kind} {result}", text[:400])
    print(f"{args.cases} mutated files (seed {args.seed}) in {time.perf_counter() - t0:.0f} s, slowest case "
          f"{1000 * slowest:.0f} ms")
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:8s} {outcome:8s} {n:6d}")
    print(f"crashes: {sum(n for (k, o), n in counts.items() if o == 'crash')}, "
          f"hangs: {sum(n for (k, o), n in counts.items() if o == 'hang')}")
    for result, text in list(examples.items())[:20]:
        print(f"  {result}\n    input starts {text!r}")


if __name__ == "__main__":
    main()
