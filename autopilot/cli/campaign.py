"""`autopilot campaign SPEC.yaml [--workers N | --ray auto|ADDRESS] [--out DIR] [--resume]` runs a simulation
campaign (hil/sim/campaign.py); `autopilot campaign report DIR [DIR_B] [--plot FILE.png]` summarises one, or
compares two."""
from __future__ import annotations

import sys
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("campaign", help="run a simulation campaign (seeds x weather x mismatch x ...) on all "
                                               "cores or a Ray cluster; `campaign report DIR` summarises it",
                              description=__doc__)
    p.add_argument("spec", metavar="SPEC.yaml|report", help="the campaign file, or `report`")
    p.add_argument("dirs", nargs="*", metavar="DIR", help="with `report`: the campaign directory (two: compare)")
    p.add_argument("--out", metavar="DIR", help="where results.jsonl goes (default: campaigns/<name>)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local worker processes (default: all "
                                                                          "cores)")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="run the runs as Ray tasks: `auto` joins the local "
                                                         "cluster (or starts one), an ADDRESS joins that one")
    p.add_argument("--resume", action="store_true", help="keep the runs already in DIR/results.jsonl (without it "
                                                         "a non-empty results file is refused)")
    p.add_argument("--plot", metavar="FILE.png", help="with `report`: box plots per group")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.spec == "report":
        return report(args)
    from autopilot.vocab.schema import ConfigError
    from hil.sim.campaign import RESULTS, expand, load_campaign, run_campaign
    try:
        spec, base = load_campaign(args.spec)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    out = Path(args.out or Path("campaigns") / spec.name)
    if (out / RESULTS).is_file() and (out / RESULTS).stat().st_size > 0 and not args.resume:
        print(f"error: {out / RESULTS} has results already: --resume to do only the rest, or another --out",
              file=sys.stderr)
        return 2
    runs = expand(spec, base)
    t0 = time.monotonic()
    where = f"Ray ({args.ray})" if args.ray else f"{args.workers or 'all'} local workers"
    print(f"campaign {spec.name}: {len(runs)} runs on {where}; results in {out / RESULTS}", flush=True)

    def progress(row, done, total):
        done_new[0] += 1
        rate = done_new[0] / max(1e-9, time.monotonic() - t0)
        eta = (total - done) / rate if rate > 0 else float("nan")
        flag = " ERROR" if "error" in row else ""
        print(f"\r  {done}/{total} runs, {60 * rate:.1f}/min, ETA {eta / 60:.1f} min{flag}   ", end="",
              file=sys.stderr, flush=True)
    done_new = [0]
    try:
        rows = run_campaign(runs, out, workers=args.workers, ray_address=args.ray, on_row=progress)
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished runs are in {out / RESULTS}; `--resume` does the rest", file=sys.stderr)
        return 130
    print(file=sys.stderr)
    from hil.sim.campaign_report import format_report
    print(format_report(rows, f"campaign {spec.name} ({time.monotonic() - t0:.0f} s)"))
    return 1 if any("error" in r for r in rows) else 0


def report(args) -> int:
    from hil.sim.campaign import read_rows
    from hil.sim.campaign_report import compare, format_report, plot
    if not 1 <= len(args.dirs) <= 2:
        print("error: `autopilot campaign report DIR [DIR_B]`", file=sys.stderr)
        return 2
    tables = []
    for d in args.dirs:
        rows = read_rows(d)
        if not rows:
            print(f"error: {d}: no results.jsonl rows", file=sys.stderr)
            return 2
        tables.append(rows)
    for d, rows in zip(args.dirs, tables):
        print(format_report(rows, f"campaign {d}"))
        print()
    if len(tables) == 2:
        print(compare(tables[0], tables[1]))
    if args.plot:
        plot(tables[-1], args.plot)
        print(f"plot: {args.plot}")
    return 0
