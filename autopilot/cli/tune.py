"""`autopilot tune SPEC.yaml --vessel FILE [--trials N] [--workers N | --ray auto] [--out DIR]`: search the
heading, speed and ILOS gains that minimise the stated cost over a campaign's ensemble (hil/sim/tuning.py), and
write the best as a parameter overlay with the cost before and after."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("tune", help="search controller and guidance gains over a campaign's ensemble "
                                           "(Optuna); writes the best as a parameter overlay",
                              description=__doc__)
    p.add_argument("spec", metavar="SPEC.yaml", help="the campaign whose runs are the ensemble (its vessels are "
                                                     "replaced by --vessel)")
    p.add_argument("--vessel", required=True, metavar="NAME|FILE", help="the vessel file whose gains are tuned")
    p.add_argument("--trials", type=int, default=20, help="candidates tried, the file's own gains first "
                                                          "(default 20)")
    p.add_argument("--seed", type=int, default=1, help="the search's random seed")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local worker processes flying each candidate's runs (default: all cores)")
    p.add_argument("--ray", metavar="auto|ADDRESS", help="fly the runs as Ray tasks: `auto` joins the local "
                                                         "cluster (or starts one), an ADDRESS joins that one")
    p.add_argument("--out", metavar="DIR", help="where the overlay and the trials go (default: tune/<campaign "
                                                "name>)")
    p.set_defaults(func=run)


def run(args) -> int:
    import dataclasses

    import yaml

    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.schema import ConfigError
    from hil.sim.campaign import _mission, expand, load_campaign, run_campaign, run_id
    from hil.sim.tuning import baseline_params, tune

    try:
        spec, base = load_campaign(args.spec)
        vessel = load_vessel(args.vessel)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.trials < 1:
        print("error: --trials must be at least 1", file=sys.stderr)
        return 2
    vessel_ref = args.vessel if "/" not in args.vessel else str(Path(args.vessel).resolve())
    spec = dataclasses.replace(spec, vessels=(vessel_ref,))
    runs = expand(spec, base)
    out = Path(args.out or Path("tune") / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    start = baseline_params(vessel, _mission(runs[0]["mission"]))
    t0 = time.monotonic()
    print(f"tuning {vessel.name} over {len(runs)} runs of campaign {spec.name}, {args.trials} trials; the file's "
          f"gains: " + ", ".join(f"{k}={v:g}" for k, v in start.items()), flush=True)

    def evaluate(candidate_runs):
        with_ids = [dict(r, id=run_id(r)) for r in candidate_runs]
        return run_campaign(with_ids, out / "runs", workers=args.workers, ray_address=args.ray)

    def show(i, t):
        print(f"  trial {i:3d}: cost {t.cost:7.3f}  " + ", ".join(f"{k}={v:.3g}" for k, v in t.params.items())
              + f"   ({time.monotonic() - t0:.0f} s)", flush=True)
    trials = tune(runs, evaluate, start, args.trials, seed=args.seed, on_trial=show)
    before, best = trials[0], min(trials, key=lambda t: t.cost)
    with open(out / "trials.jsonl", "w") as f:
        for t in trials:
            f.write(json.dumps({"params": t.params, "cost": t.cost}) + "\n")
    overlay = out / "tuned.params.yaml"
    overlay.write_text(f"# autopilot tune {args.spec} --vessel {args.vessel}: cost {before.cost:.3f} with the file's "
                       f"gains, {best.cost:.3f} with these\n# copy next to the boat config as <config>.params.yaml "
                       f"(or merge into the vessel file)\n" + yaml.safe_dump(best.params, sort_keys=True))
    print(f"cost with the file's gains {before.cost:.3f}, best {best.cost:.3f} "
          f"({100 * (best.cost - before.cost) / before.cost:+.1f} %); best gains in {overlay}")
    return 0
