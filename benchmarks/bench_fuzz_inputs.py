"""A longer fuzz of the file loaders and `check` than CI runs: counts of loaded, refused and crashed cases.

    python benchmarks/bench_fuzz_inputs.py [--cases 20000] [--seed 1]

The mutations are tests/fuzz_inputs.py's (byte flips, deleted/duplicated lines, truncation, hostile values).
Each case has a 10 s budget; one over it counts as a hang. Nothing is asserted; the counts are for the notes.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz_inputs import cases, run_case  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    counts: collections.Counter = collections.Counter()
    examples = {}
    slowest = 0.0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for kind, text in cases(args.cases, args.seed):
            t = time.perf_counter()
            result = run_case(kind, text, Path(tmp))
            dt = time.perf_counter() - t
            slowest = max(slowest, dt)
            key = (kind, "hang" if dt > 10.0 else result.split(":")[0])
            counts[key] += 1
            if result.startswith("crash"):
                examples.setdefault(result, text[:120])
    print(f"{args.cases} mutated files (seed {args.seed}) in {time.perf_counter() - t0:.0f} s, slowest case "
          f"{1000 * slowest:.0f} ms")
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:8s} {outcome:8s} {n:6d}")
    print(f"crashes: {sum(n for (k, o), n in counts.items() if o == 'crash')}, "
          f"hangs: {sum(n for (k, o), n in counts.items() if o == 'hang')}")
    for result, text in list(examples.items())[:10]:
        print(f"  {result}\n    input starts {text!r}")


if __name__ == "__main__":
    main()
