"""`autopilot identify hull RUN_DIR... --vessel FILE`: the hull's nine parameters from run logs.

Run directories logged at 10 Hz or more (`autopilot run` with logging.rate_hz: 50, or `autopilot sim --log DIR
--log-rate-hz 50`), each driven with excitation: surge steps, turns both ways at a fixed yaw moment, sinusoidal
and square differential thrust (MANUAL with a gamepad, or a scripted operator in the simulator). The columns a
fit reads are listed in autopilot/identification/runs.py. With two or more runs the last is held back to validate
(or name validation runs with --validate); with one, the model is validated on the data it was fitted to and
the report says so.

--method ls fits by equation-error least squares on the smoothed signals; --method oe refines that by output
error, the model simulated from the thrust against the measured u, v, r and heading over 8 s pieces of the
open-loop segments (estimation/identification/hull_output_error.py), not biased by noisy velocities. By default
both run and the one whose held-out validation (u, v, r, x, y flown free over 10 s pieces) is better is kept;
the report prints both scores and says why. Both fits are bounded inside (added masses <= 0, dampings >= 0,
the vessel file's mass and Iz as given): a parameter on its bound is reported with what it suggests, and one the
runs leave unpinned (wide interval, and moving it hardly changes the held-out prediction) is kept at the vessel
file's value, the rest refitted. --out checks the file as `autopilot check` does before writing it.

The gain check (on by default; --no-gain-check skips it): the derived gains and the vessel file's are flown on
the identified model (its own plant, a little wind and sensor noise, true state fed back; about 2 s of CPU): a
20 deg heading step (overshoot, settling) and a two-leg mission with a 90 deg turn (speed error, cross-track).
Per group (heading, speed, lookahead) the set that flies better is written, the derived heading gains only if
they keep the 45 deg phase margin `autopilot check` asks; the report and the file's comments say which was kept
and why (autopilot/identification/gain_check.py).

Prints each parameter with its standard error, 95 % interval and the vessel file's value, the validation R^2 /
RMSE / MAE of u, v, r, x, y, psi (each open-loop segment flown whole, in 10 s pieces, and whole from fitted
first states), Nomoto K and T, and the derived gains. --out writes a copy of the vessel file
with the identified values (CIs in comments, the runs and date in its header, validated_against set); --report
the same as JSON; --plot model against measurement on the validation runs. A run that cannot identify the
model is refused with the reason (the boat never turned: the yaw terms are not excited), exit 1; bad input
(a missing run, an unreadable vessel file) exit 2.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from estimation.identification.hull_least_squares import NAMES, IdentificationError

WIDE_PCT = 10.0     # a 95 % interval wider than this (half, % of the value) comes with the advice to fly more


def add_parser(sub) -> None:
    p = sub.add_parser("hull", help="fit the hull's nine parameters from run logs",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories (the last validates if 2 or more)")
    p.add_argument("--vessel", required=True, metavar="FILE", help="the vessel file the runs were flown with")
    p.add_argument("--validate", nargs="+", default=None, metavar="RUN_DIR", help="validation runs (default: "
                   "the last of RUN_DIR when there are 2 or more)")
    p.add_argument("--velocities", choices=("smoother", "estimate", "truth"), default="smoother",
                   help="smoother (default): GNSS + accelerometer, independent of the vessel file; estimate: "
                        "the EKF's (leans on the file's hull model); truth: a simulation log's true velocities")
    p.add_argument("--method", choices=("ls", "oe"), default=None,
                   help="ls: equation-error least squares on the smoothed signals (fast; biased by noisy "
                        "velocities); oe: that fit refined by output error, the model simulated from the thrust "
                        "against the measured u, v, r, heading (consistent under measurement noise; slower). "
                        "Default: both, the one whose held-out validation is better kept")
    p.add_argument("--window", type=float, default=1.0, metavar="S", help="smoothing window [s] (default 1.0; "
                   "1.5-2 for a heavy, slow hull with noisy velocities)")
    p.add_argument("--fix", default="", metavar="z7,z9", help="parameters to keep at the vessel file's values "
                   "(those the runs do not excite: a slow-turning hull never shows its quadratic yaw damping z9)")
    p.add_argument("--out", metavar="FILE.yaml", help="write the identified vessel file")
    p.add_argument("--no-gain-check", action="store_true", help="write the derived gains without flying them "
                   "against the vessel file's on the identified model (default: flown, the better kept per group)")
    p.add_argument("--report", metavar="FILE.json", help="write the report as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the model against the validation runs")
    p.set_defaults(func=run_hull)


def run_hull(args) -> int:
    from autopilot.identification.hull import DEFAULT_METHOD, identify, write_vessel
    from autopilot.identification.runs import load_ident_run, split_last_set
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.safe_read import read_user_text
    from autopilot.vocab.schema import ConfigError

    if not args.window > 0:
        print("error: --window must be a positive number of seconds", file=sys.stderr)
        return 2
    fix = [n.strip() for n in args.fix.split(",") if n.strip()]
    if any(n not in NAMES for n in fix) or len(fix) >= len(NAMES):
        print(f"error: --fix takes some of {', '.join(NAMES)} (not all), got {args.fix!r}", file=sys.stderr)
        return 2
    try:
        vessel = load_vessel(args.vessel)
        source_text = read_user_text(vessel.source_file) if vessel.source_file else None
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fit_dirs, val_dirs = list(args.runs), list(args.validate or [])
    if args.validate is None and len(fit_dirs) >= 2:
        val_dirs = [fit_dirs.pop()]
    for d in fit_dirs + val_dirs:
        if not Path(d).exists():
            print(f"error: {d}: no such run directory", file=sys.stderr)
            return 2
    if args.out and vessel.source_file and Path(args.out).resolve() == Path(vessel.source_file).resolve():
        print(f"error: --out {args.out} is the vessel file itself; write a new file and compare", file=sys.stderr)
        return 2
    try:
        fit_runs = [load_ident_run(d, vessel, args.velocities) for d in fit_dirs]
        val_runs = [load_ident_run(d, vessel, args.velocities) for d in val_dirs]
        if len(fit_runs) == 1 and not val_runs and split_last_set(fit_runs[0]) is not None:
            fit_part, val_part = split_last_set(fit_runs[0])     # an identification mission's sets
            fit_runs, val_runs = [fit_part], [val_part]
        report = identify(fit_runs, val_runs, vessel, window_s=args.window, fix=fix,
                          method=args.method or DEFAULT_METHOD)
    except IdentificationError as e:
        print(f"identify: refused: {e}", file=sys.stderr)
        return 1
    if not args.no_gain_check:
        from autopilot.identification.hull import check_report_gains
        from hil.sim import gain_flights
        check_report_gains(vessel, report, gain_flights)
    print(format_report(report))
    if args.out:
        if source_text is None:
            print("error: --out needs a vessel file, not a preset built in code", file=sys.stderr)
            return 2
        try:
            path = write_vessel(args.out, source_text, report)
        except IdentificationError as e:
            print(f"error: --out {args.out}: not written: {e}", file=sys.stderr)
            return 1
        print(f"vessel file: {path}")
    if args.report:
        Path(args.report).write_text(json.dumps(report.as_dict(), indent=2, default=float) + "\n")
        print(f"report: {args.report}")
    if args.plot:
        _plot(args.plot, report, val_runs or fit_runs)
        print(f"plot: {args.plot}")
    return 0


def format_report(r) -> str:
    f = r.fit
    how = {"ls": "least squares", "oe": "output error"}.get(r.method, r.method)
    lines = [f"hull identified from {', '.join(r.runs_fit)} by {how} (velocities: {r.velocities}, window "
             f"{r.window_s:g} s, {f.samples} samples, condition {f.condition:.0f})",
             f"  {'':4s} {'value':>10s} {'std':>9s}   {'95 % CI':^23s} {'+/-':>6s}  {'vessel file':>11s}  meaning"]
    before = r.file_zeta
    from estimation.identification.hull_least_squares import MEANING
    for i, n in enumerate(NAMES):
        if n in f.fixed:
            why = "(unpinned: file's value)" if n in r.unpinned else "(kept from the vessel file)"
            lines.append(f"  {n:4s} {f.zeta[i]:10.4g} {'fixed':>9s}   {why:^23s} "
                         f"{'':6s}  {before[i]:11.4g}  {MEANING[n]}")
            continue
        mark = "  AT BOUND" if n in f.at_bound else ""
        lines.append(f"  {n:4s} {f.zeta[i]:10.4g} {f.std[i]:9.3g}   [{f.ci95[i][0]:9.4g}, {f.ci95[i][1]:9.4g}] "
                     f"{_half_width_pct(f, i):5.1f}%  {before[i]:11.4g}  {MEANING[n]}{mark}")
    if f.ci95_segments is not None:
        lines.append("  95 % CI: the wider of the residual-based interval and the one from refitting with each "
                     "segment left out (model-form error)")
    from autopilot.identification.hull_bounds import AT_BOUND_ADVICE
    for n in f.at_bound:
        lines.append(f"  at bound: {AT_BOUND_ADVICE[n]}")
    for n in r.unpinned:
        rise = r.sensitivity.get(n, 0.0)
        why = ("its interval is open (the runs do not bound it)" if math.isnan(rise) else
               f"its interval is wider than its value and moving it across that changes the held-out prediction "
               f"by {100 * rise:.1f} % only")
        lines.append(f"  unpinned: {n} ({MEANING[n]}): {why}; kept at the vessel file's value, the rest refitted")
    free = [i for i, n in enumerate(NAMES) if n not in f.fixed]
    if free:
        worst = max(free, key=lambda i: _half_width_pct(f, i))
        width = _half_width_pct(f, worst)
        advice = (": more data narrows it, about 1/sqrt(n) for n sets fitted together (a mission of "
                  "identification.sets: 4 fits three and validates on the last, or fit several runs: "
                  "autopilot identify hull RUN1 RUN2 --validate RUN3)") if width > WIDE_PCT else ""
        lines.append(f"  least well pinned: {NAMES[worst]}, known to +/-{width:.0f} % (95 %){advice}")
    lines.append("  vessel keys: " + ", ".join(f"{k} {v:.4g}" for k, v in r.keys.items()))
    note = " (on the fitting data: give a second run to validate)" if r.validated_on_fit_data else ""
    lines.append(f"validation, model run free on the inputs{note}:")
    for run, sig in r.validation.items():
        lines.append(f"  {run}: " + "  ".join(f"{k} R2 {q['r2']:.4f} RMSE {q['rmse']:.3g}" for k, q in sig.items()))
    for run, sig in r.validation_short.items():
        lines.append(f"  {run}, flown in 10 s pieces: " + "  ".join(f"{k} R2 {q['r2']:.4f}" for k, q in sig.items()))
    for run, sig in r.validation_x0.items():
        lines.append(f"  {run}, first states estimated: " + "  ".join(f"{k} R2 {q['r2']:.4f}" for k, q in sig.items()))
    lines.append(f"method: {r.method} ({how}): {r.method_reason}")
    for m, sc in r.method_scores.items():
        rm = "; ".join(f"{run}: " + " ".join(f"{k} {v:.3g}" for k, v in q.items()) for run, q in sc["rmse_10s"].items())
        lines.append(f"  {m}: validation score {sc['score']:.4f} (RMSE over {10:g} s free runs: {rm})")
    lines.append(f"Nomoto: K {r.nomoto['K']:.4g} rad/s per N m, T {r.nomoto['T']:.3g} s")
    from autopilot.identification.hull import imbalance_text
    lines.append(imbalance_text(f.imbalance))
    g = r.gains
    lines.append(f"derived gains: heading omega_n {g['heading_omega_n_rps']:g} rad/s zeta {g['heading_zeta']:g}; "
                 f"speed kp {g['speed_kp_per_s']:g} /s ki {g['speed_ki_per_s2']:g} /s^2; lookahead "
                 f"{g['lookahead_hull_lengths']:g} hull lengths (turns at up to {g['turn_rate_max_dps']:.1f} deg/s, "
                 f"radius {g['turning_radius_m']:.1f} m at half the top speed)")
    gc = getattr(r, "gain_check", None)
    if gc is None:
        lines.append("gain check: not run (--no-gain-check): the derived gains are written as they are")
    else:
        lines.append(f"gain check: the derived gains and the vessel file's flown on the identified model "
                     f"({gc.cpu_s:.1f} s CPU); written:")
        lines.extend(gc.lines())
    return "\n".join(lines)


def _half_width_pct(fit, i: int) -> float:
    """Half the 95 % interval of parameter i as a percentage of its value."""
    lo, hi = fit.ci95[i]
    return 100.0 * (hi - lo) / 2.0 / max(abs(float(fit.zeta[i])), 1e-12)


def _plot(path, report, runs) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from estimation.identification.hull_least_squares import free_run
    run = runs[0]
    model = free_run(report.fit.zeta, run.data, psi0_rad=float(run.psi_rad[0]))
    meas = {"u [m/s]": (run.data.u, model["u"]), "v [m/s]": (run.data.v, model["v"]),
            "r [rad/s]": (run.data.r, model["r"]), "psi [rad]": (run.psi_rad, model["psi"]),
            "north [m]": (run.north_m - run.north_m[0], model["x"]),
            "east [m]": (run.east_m - run.east_m[0], model["y"])}
    fig, axes = plt.subplots(len(meas), 1, figsize=(10, 12), sharex=True)
    for ax, (label, (m, f)) in zip(axes, meas.items()):
        ax.plot(run.data.t_s, m, label="measured", lw=1.0)
        ax.plot(run.data.t_s, f, label="model (free run)", lw=1.0)
        ax.set_ylabel(label)
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(f"identified hull on {run.name}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
