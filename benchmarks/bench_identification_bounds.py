"""Hull identification on FOKA's own plant (the identification mission, 10 Hz log, seeds 1..3): the nine
parameters against the vessel file's (the plant flies the file's hull), their intervals, which ended on a
bound or were left unpinned, the method kept, and whether `autopilot check` accepts the written file.

    python benchmarks/bench_identification_bounds.py [--seeds 1,2,3] [--runs DIR] [--method ls|oe]

--runs DIR reuses DIR/r10_<seed>/<run> logs when they exist (else flies them there). Prints figures only.
Why: docs/design-notes/identification-constrained-fit.md.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autopilot.cli.main import main  # noqa: E402
from autopilot.files.check import check_config  # noqa: E402
from autopilot.vocab.config import CONFIG_DIR, load_vessel  # noqa: E402
from estimation.identification.hull_least_squares import zeta_of_hull  # noqa: E402


def _run_dir(base: Path, seed: int) -> Path:
    d = base / f"r10_{seed}"
    found = sorted(d.glob("*_identify")) if d.exists() else []
    if found:
        return found[0]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["sim", str(CONFIG_DIR / "missions" / "identify.yaml"), "--vessel", "foka", "--seed", str(seed),
                   "--log", str(d)])
    if rc != 0:
        raise SystemExit(f"sim seed {seed} failed (exit {rc})")
    return sorted(d.glob("*_identify"))[0]


def main_bench() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--runs", default=None, metavar="DIR")
    ap.add_argument("--method", choices=("ls", "oe"), default=None)
    a = ap.parse_args()
    base = Path(a.runs) if a.runs else Path(tempfile.mkdtemp(prefix="bench_ident_bounds_"))
    foka = CONFIG_DIR / "vessels" / "foka.yaml"
    truth = zeta_of_hull(load_vessel(str(foka)).hull)
    print("truth (foka.yaml): " + " ".join(f"z{i + 1} {z:.4g}" for i, z in enumerate(truth)))
    for seed in (int(s) for s in a.seeds.split(",")):
        run = _run_dir(base, seed)
        out, rep = base / f"bench_{seed}.yaml", base / f"bench_{seed}.json"
        args = ["identify", "hull", str(run), "--vessel", str(foka), "--out", str(out), "--report", str(rep)]
        args += ["--method", a.method] if a.method else []
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            rc = main(args)
        took = time.perf_counter() - t0
        if rc != 0:
            print(f"seed {seed}: identify exit {rc}: {err.getvalue().strip()}")
            continue
        r = json.loads(rep.read_text())
        checked = check_config(out)
        scores = ", ".join(f"{m} {s['score']:.4f}" for m, s in r["method_scores"].items())
        print(f"seed {seed}: method {r['method']} (scores {scores}); identify {took:.0f} s; autopilot check: "
              f"{'OK' if checked.ok else 'REFUSED ' + '; '.join(map(str, checked.problems))}")
        for i in range(9):
            n = f"z{i + 1}"
            p = r["parameters"][n]
            tags = [t for t, on in (("AT BOUND", p["at_bound"]), ("unpinned: file value", n in r["unpinned"]),
                                    ("fixed", p["fixed"] and n not in r["unpinned"])) if on]
            seg = p.get("ci95_segments")
            seg_txt = f" seg [{seg[0]:.4g}, {seg[1]:.4g}]" if seg else ""
            print(f"  {n}: {p['value']:8.4g}  true {truth[i]:8.4g}  err {100 * (p['value'] / truth[i] - 1):+6.1f} %  "
                  f"CI [{p['ci95'][0]:.4g}, {p['ci95'][1]:.4g}]{seg_txt}  {' '.join(tags)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_bench())
