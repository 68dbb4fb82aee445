"""`autopilot identify thrust BENCH.csv`: a thruster's curve from a bench log, beside paper 000's Table 2.

The bench log is a CSV file with a header row naming
  pwm_us or pulse_us                   ESC pulse width [us]
  thrust_n, or force_kgf / thrust_kgf  thrust, newtons or kilogram-force (x 9.80665); positive = forward
  voltage_v (optional)                 supply voltage [V]
(other columns are ignored; rows may come in any order and repeat a pulse). A log holding several voltages
needs --voltage to pick one. Every cell of the columns used must be a number: a bad cell is refused with its
row, never skipped.

Prints the fitted curve (paper 000's Eq. 16 per side; see estimation/identification/thrust_curve.py), the dead zone, the
largest forward and reverse thrust and their ratio, and RMSE / MAE / max error / R^2 of the fit and of paper
000's Table 2 curve on the same samples (Table 2 read with cmd = (pulse_us - neutral) / 400, an assumption:
the paper does not give the mapping). --table-out writes the samples as a pulse_us,thrust_n thrust table
(per-pulse means, zero in the dead zone, monotonic outward). Bad input: one line naming the file and the
reason, exit code 2.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from pathlib import Path

KGF_N = 9.80665
PULSE_COLUMNS = ("pwm_us", "pulse_us")
THRUST_COLUMNS = (("thrust_n", 1.0), ("force_kgf", KGF_N), ("thrust_kgf", KGF_N))
MAX_BENCH_BYTES = 64 << 20              # 64 MiB: hours of a bench log at 100 Hz
VOLTAGE_TOLERANCE_V = 0.05              # rows within this of --voltage are taken


class BenchFileError(ValueError):
    """The bench log cannot be used; str() names the file, the row/column where it applies, and the reason."""


def register(subparsers) -> None:
    ident = subparsers.add_parser("identify", help="identify a model from measurements (hull, thruster curve)",
                                  description="Identify a model from measurements.")
    sub = ident.add_subparsers(dest="what", metavar="WHAT")
    sub.required = True
    p = sub.add_parser("thrust", help="fit a thruster's curve from a bench log",
                       description=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bench", metavar="BENCH.csv", help="bench log (see above)")
    p.add_argument("--voltage", type=float, metavar="V", help="take the rows at this voltage_v [V]")
    p.add_argument("--neutral-us", type=float, default=1500.0, metavar="US",
                   help="the ESC's neutral pulse [us] (default 1500)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--table-out", metavar="FILE.csv", help="write a pulse_us,thrust_n thrust table")
    p.add_argument("--plot", metavar="FILE.png", help="draw model vs data")
    p.set_defaults(func=run_thrust)
    from autopilot.cli.identify_hull import add_parser as add_hull_parser
    add_hull_parser(sub)


# ------------------------------------------------------------------------------------------------ reading
def read_bench_csv(path, voltage_v=None):
    """(pulse_us, thrust_n, voltage_v or None) from a bench log (see the module docstring).

    BenchFileError naming the file (and the row, counting the header as row 1, and column) when the file cannot
    be read, a column is missing, a cell is not a finite number, or several voltages are present without
    voltage_v (or none at voltage_v)."""
    from autopilot.vocab.safe_read import read_user_text
    from autopilot.vocab.schema import ConfigError

    try:
        text = read_user_text(path, MAX_BENCH_BYTES)
    except ConfigError as e:
        raise BenchFileError(f"{path}: {e.reason}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise BenchFileError(f"{path}: empty file; a header row naming the columns is required")
    names = [h.strip() for h in header]
    pulse_col = next((c for c in PULSE_COLUMNS if c in names), None)
    thrust_col = next(((c, k) for c, k in THRUST_COLUMNS if c in names), None)
    if pulse_col is None or thrust_col is None:
        want = [] if pulse_col else [" or ".join(PULSE_COLUMNS)]
        want += [] if thrust_col else [" or ".join(c for c, _ in THRUST_COLUMNS)]
        raise BenchFileError(f"{path}: row 1: missing column {' and '.join(want)} (header: {', '.join(names)})")
    cols = [(pulse_col, 1.0), thrust_col] + ([("voltage_v", 1.0)] if "voltage_v" in names else [])
    index = [(c, names.index(c), k) for c, k in cols]
    rows = []
    for row_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(names):
            raise BenchFileError(f"{path}: row {row_no}: {len(row)} fields, the header has {len(names)}")
        values = []
        for name, j, scale in index:
            cell = row[j].strip()
            try:
                x = float(cell)
            except ValueError:
                x = math.nan
            if not math.isfinite(x):
                shown = cell if len(cell) <= 20 else cell[:20] + "..."
                raise BenchFileError(f"{path}: row {row_no}, column {name}: {shown!r} is not a finite number")
            values.append(x * scale)
        rows.append(values)
    if not rows:
        raise BenchFileError(f"{path}: no data rows after the header")
    return _pick_voltage(path, rows, "voltage_v" in names, voltage_v)


def _pick_voltage(path, rows, has_voltage, voltage_v):
    pulses = [r[0] for r in rows]
    thrusts = [r[1] for r in rows]
    if not has_voltage:
        if voltage_v is not None:
            raise BenchFileError(f"{path}: --voltage given but the log has no voltage_v column")
        return pulses, thrusts, None
    volts = [r[2] for r in rows]
    found = sorted({round(v, 2) for v in volts})
    if voltage_v is None:
        if max(volts) - min(volts) > 2 * VOLTAGE_TOLERANCE_V:
            raise BenchFileError(f"{path}: several voltages in the log ({', '.join(f'{v:g}' for v in found)} V); "
                                 f"pick one with --voltage")
        return pulses, thrusts, sum(volts) / len(volts)
    keep = [i for i, v in enumerate(volts) if abs(v - voltage_v) <= VOLTAGE_TOLERANCE_V]
    if not keep:
        raise BenchFileError(f"{path}: no rows at {voltage_v:g} V (voltages in the log: "
                             f"{', '.join(f'{v:g}' for v in found)} V)")
    return [pulses[i] for i in keep], [thrusts[i] for i in keep], float(voltage_v)


# ------------------------------------------------------------------------------------------------ report
def build_report(bench, pulse_us, thrust_n, voltage_v, neutral_pulse_us):
    """(report dict, fit, Table 2 curve). Raises ValueError when the samples cannot be fitted."""
    from estimation.identification import thrust_curve as tc

    fit = tc.fit_thrust_curve(pulse_us, thrust_n, neutral_pulse_us=neutral_pulse_us)
    paper = tc.paper000_table2(neutral_pulse_us=neutral_pulse_us)
    c = fit.curve

    def curve_dict(curve, good):
        return {"forward": curve.forward.as_dict() if curve.forward else None,
                "reverse": curve.reverse.as_dict() if curve.reverse else None,
                "dead_zone_us": list(curve.dead_zone_us), "neutral_pulse_us": curve.neutral_pulse_us,
                "half_range_us": curve.half_range_us, "max_forward_n": curve.max_forward_n,
                "max_reverse_n": curve.max_reverse_n, "asymmetry": curve.asymmetry, "note": curve.note,
                "goodness": good.as_dict()}

    report = {"bench": str(bench), "voltage_v": voltage_v, "n_samples": len(pulse_us),
              "pulse_range_us": [min(pulse_us), max(pulse_us)],
              "fit": curve_dict(c, fit.goodness), "at_bounds": list(fit.at_bounds), "notes": list(fit.notes),
              "paper000_table2": curve_dict(paper, tc.goodness(paper, pulse_us, thrust_n))}
    return report, fit, paper


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def print_report(report, out=None) -> None:
    out = out or sys.stdout
    f, p = report["fit"], report["paper000_table2"]
    volts = f", {report['voltage_v']:g} V" if report["voltage_v"] is not None else ""
    print(f"{report['bench']}: {report['n_samples']} samples, {report['pulse_range_us'][0]:g}-"
          f"{report['pulse_range_us'][1]:g} us{volts}", file=out)
    print(f"{'':22s}{'fit':>12s}{'paper 000 T2':>14s}", file=out)
    for side in ("forward", "reverse"):
        for k in ("A", "K", "B", "v", "C", "M"):
            a = f[side][k] if f[side] else None
            b = p[side][k] if p[side] else None
            print(f"  {side + ' ' + k:20s}{_fmt(a, '12.6g')}{_fmt(b, '14.6g')}", file=out)
    rows = (("dead zone [us]", lambda d: f"{d['dead_zone_us'][0]:g}-{d['dead_zone_us'][1]:g}"),
            ("max forward [N]", lambda d: f"{d['max_forward_n']:.2f}"),
            ("max reverse [N]", lambda d: f"{d['max_reverse_n']:.2f}"),
            ("asymmetry rev/fwd", lambda d: _fmt(d["asymmetry"], ".3f")),
            ("RMSE [N]", lambda d: f"{d['goodness']['rmse_n']:.3f}"),
            ("MAE [N]", lambda d: f"{d['goodness']['mae_n']:.3f}"),
            ("max error [N]", lambda d: f"{d['goodness']['max_abs_n']:.3f}"),
            ("R^2", lambda d: f"{d['goodness']['r2']:.4f}"))
    for label, show in rows:
        print(f"  {label:20s}{show(f):>12s}{show(p):>14s}", file=out)
    print(f"cmd = (pulse_us - {f['neutral_pulse_us']:g}) / {f['half_range_us']:g} for both; "
          f"{p['note']} (the paper does not give the mapping)", file=out)
    for note in report["notes"]:
        print(f"note: {note}", file=out)


def write_table(path, table) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write(f"# thrust table from a bench log: per-pulse mean thrust, zero in the dead zone "
                 f"{table.dead_zone_us[0]:g}-{table.dead_zone_us[1]:g} us, monotonic outward\n")
        w = csv.writer(fh)
        w.writerow(["pulse_us", "thrust_n"])
        for p, t in zip(table.pulse_us, table.thrust_n):
            w.writerow([f"{p:g}", f"{t:.4f}"])


def write_plot(path, pulse_us, thrust_n, fit, paper, title) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from estimation.identification.thrust_curve import evaluate

    grid = np.linspace(min(pulse_us), max(pulse_us), 801)
    fig, (ax, ax_err) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": (3, 1)})
    ax.plot(pulse_us, thrust_n, ".", ms=3, color="0.4", label="bench")
    ax.plot(grid, evaluate(fit.curve, grid), "-", color="C0", label="fit")
    ax.plot(
        grid,
        evaluate(paper, grid),
        "--",
        color="C3",
        label=f"paper 000 Table 2, cmd = (p - {paper.neutral_pulse_us:g}) / {paper.half_range_us:g}",
    )
    ax.axvspan(*fit.curve.dead_zone_us, color="0.9", label="dead zone (fit)")
    ax.set_ylabel("thrust [N]")
    ax.set_title(title)
    ax.legend(loc="upper left")
    ax.grid(True, alpha=0.3)
    p = np.asarray(pulse_us)
    t = np.asarray(thrust_n)
    ax_err.plot(p, evaluate(fit.curve, p) - t, ".", ms=3, color="C0", label="fit - bench")
    ax_err.plot(p, evaluate(paper, p) - t, ".", ms=3, color="C3", label="Table 2 - bench")
    ax_err.set_xlabel("pulse [us]")
    ax_err.set_ylabel("error [N]")
    ax_err.grid(True, alpha=0.3)
    ax_err.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_thrust(args) -> int:
    try:
        pulse_us, thrust_n, voltage_v = read_bench_csv(args.bench, args.voltage)
    except BenchFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not math.isfinite(args.neutral_us):
        print("error: --neutral-us must be a finite number of microseconds", file=sys.stderr)
        return 2
    try:
        report, fit, paper = build_report(args.bench, pulse_us, thrust_n, voltage_v, args.neutral_us)
    except ValueError as e:
        print(f"error: {args.bench}: cannot fit: {e}", file=sys.stderr)
        return 2
    print_report(report)
    try:
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {args.json}")
        if args.table_out:
            write_table(args.table_out, fit.table)
            print(f"wrote {args.table_out}")
        if args.plot:
            volts = f" at {voltage_v:g} V" if voltage_v is not None else ""
            write_plot(args.plot, pulse_us, thrust_n, fit, paper, f"{Path(args.bench).name}{volts}")
            print(f"wrote {args.plot}")
    except OSError as e:
        print(f"error: cannot write {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    return 0
