"""What a campaign's table says: per-group percentiles, a comparison of two campaigns, box plots and a heat map
over the first two swept factors.

Groups are the combinations of the run parameters that vary in the table, except the seed: each group's
figures are over its seeds. `compare(a, b)` matches groups by those parameters and tests each figure's
difference over the seeds with a two-sided Mann-Whitney U test (scipy): a p below 0.05 with the median moving
is reported as better or worse.
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Set, Tuple, cast

import numpy as np

PARAMS = ("mission", "vessel", "plant_vessel", "mismatch", "wind", "current", "waves", "gps_noise", "faults",
          "devices", "duration_s", "loiter_s", "gps_rate_hz", "params")


def varying(rows: Sequence[dict]) -> List[str]:
    """The run parameters that differ between rows (the seed aside)."""
    keys = []
    for k in PARAMS:
        values = {repr(r.get(k)) for r in rows}
        if len(values) > 1:
            keys.append(k)
    return keys


def _label(value) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v:g}" for k, v in sorted(value.items())) or "-"
    if isinstance(value, list):
        return "/".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    text = str(value) if value not in ("", None) else "-"
    return text.rsplit("/", 1)[-1]


def groups(rows: Sequence[dict], keys: Sequence[str]) -> Dict[Tuple, List[dict]]:
    out: Dict[Tuple, List[dict]] = {}
    for r in rows:
        out.setdefault(tuple(_label(r.get(k)) for k in keys), []).append(r)
    return out


def _pcts(values, qs=(50, 95, 100)) -> List[float]:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], float)
    return [float(np.percentile(v, q)) if v.size else math.nan for q in qs]


def summary(rows: Sequence[dict]) -> dict:
    """The figures of one group."""
    ok = [r for r in rows if "error" not in r]
    xte = _pcts(r.get("xte_rms_m") for r in ok)
    est = _pcts(r.get("pos_err_rms_m") for r in ok)
    out = {"runs": len(rows), "errors": len(rows) - len(ok),
           "complete_frac": float(np.mean([bool(r.get("complete")) for r in ok])) if ok else math.nan,
           "xte_p50": xte[0], "xte_p95": xte[1], "xte_max": xte[2], "est_p50": est[0], "est_p95": est[1],
           "gps_p50": _pcts(r.get("gps_err_rms_m") for r in ok)[0],
           "false_fs": sum(int(r.get("false_failsafes", 0)) for r in ok),
           "genuine_fs": sum(int(r.get("genuine_failsafes", 0)) for r in ok)}
    if any("reversals_per_min" in r for r in ok):
        out["reversals_p50"] = _pcts(r.get("reversals_per_min") for r in ok)[0]
        out["saturated_mean"] = float(np.nanmean([r.get("saturated_frac", math.nan) for r in ok]))
    if any("p95_m" in r for r in ok):
        out["station_p95"] = _pcts(r.get("p95_m") for r in ok)[1]
        out["vrx_score"] = float(np.nanmean([r.get("vrx_score", math.nan) for r in ok]))
    return out


def format_report(rows: Sequence[dict], title: str = "") -> str:
    keys = varying(rows)
    lines = [title] if title else []
    seeds = sorted(cast(Set[int], {r.get("seed") for r in rows}))     # every run's row has its seed
    lines.append(f"{len(rows)} runs, {len(seeds)} seeds; groups by {', '.join(keys) or '(one group)'}; "
                 f"wall time per run: median {np.median([r.get('wall_s', 0) for r in rows]):.1f} s")
    grouped = groups(rows, keys)
    widths = [min(32, max([len(k)] + [len(key[i]) for key in grouped])) for i, k in enumerate(keys)]
    head = " ".join(f"{k:>{w}s}" for k, w in zip(keys, widths))
    station = any("p95_m" in r for r in rows)
    usage = any("reversals_per_min" in r for r in rows)
    lines.append(f"{head} {'runs':>5s} {'done%':>6s} {'xte p50':>8s} {'p95':>6s} {'max':>6s} {'est p50':>8s} "
                 f"{'p95':>6s} {'gps p50':>8s} {'falseFS':>7s} {'realFS':>6s} {'err':>4s}"
                 + (f" {'rev/min':>7s} {'sat%':>5s}" if usage else "")
                 + (f" {'stn p95':>8s} {'VRX':>6s}" if station else ""))
    for key, group in grouped.items():
        s = summary(group)
        cells = " ".join(f"{k[:w]:>{w}s}" for k, w in zip(key, widths))
        line = (f"{cells} {s['runs']:5d} {100 * s['complete_frac']:6.1f} {s['xte_p50']:8.2f} {s['xte_p95']:6.2f} "
                f"{s['xte_max']:6.2f} {s['est_p50']:8.2f} {s['est_p95']:6.2f} {s['gps_p50']:8.2f} "
                f"{s['false_fs']:7d} {s['genuine_fs']:6d} {s['errors']:4d}")
        if usage:
            line += f" {s.get('reversals_p50', math.nan):7.1f} {100 * s.get('saturated_mean', math.nan):5.1f}"
        if station:
            line += f" {s.get('station_p95', math.nan):8.2f} {s.get('vrx_score', math.nan):6.2f}"
        lines.append(line)
    errors = [r for r in rows if "error" in r]
    for r in errors[:5]:
        lines.append(f"error in run {r['id']} (seed {r.get('seed')}): {r['error'][:200]}")
    return "\n".join(lines)


FIGURES = (("xte_rms_m", "cross-track RMS [m]"), ("pos_err_rms_m", "estimate error RMS [m]"),
           ("p95_m", "station keeping p95 [m]"), ("reversals_per_min", "thruster reversals/min"))


def compare(rows_a: Sequence[dict], rows_b: Sequence[dict], alpha: float = 0.05) -> str:
    """Which groups got better or worse from A to B, figure by figure, tested over the seeds."""
    from scipy.stats import mannwhitneyu
    keys = sorted(set(varying(list(rows_a) + list(rows_b))) - {"_campaign"}, key=PARAMS.index)
    ga, gb = groups(rows_a, keys), groups(rows_b, keys)
    lines = [f"{'group':40s} {'figure':24s} {'median A':>9s} {'median B':>9s} {'p':>7s}  verdict"]
    for key in ga:
        if key not in gb:
            continue
        for field, name in FIGURES:
            a = [r[field] for r in ga[key] if isinstance(r.get(field), (int, float)) and math.isfinite(r[field])]
            b = [r[field] for r in gb[key] if isinstance(r.get(field), (int, float)) and math.isfinite(r[field])]
            if not a or not b:
                continue
            ma, mb = float(np.median(a)), float(np.median(b))
            p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue) if len(a) > 1 and len(b) > 1 else math.nan
            verdict = "same"
            if p < alpha:
                verdict = "better" if mb < ma else "worse"
            label = " ".join(key) or "(all)"
            lines.append(f"{label[:40]:40s} {name:24s} {ma:9.3f} {mb:9.3f} {p:7.3f}  {verdict}")
    if len(lines) == 1:
        lines.append("no group is in both campaigns")
    return "\n".join(lines)


def plot(rows: Sequence[dict], path) -> None:
    """Box plots of cross-track and estimate error per group (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = varying(rows)
    gs = groups(rows, keys)
    labels = [" ".join(k) or "all" for k in gs]
    fig, axes = plt.subplots(2, 1, figsize=(max(6.0, 0.6 * len(gs) + 2), 7), sharex=True)
    for ax, (field, name) in zip(axes, FIGURES[:2]):
        data = [[r[field] for r in g if isinstance(r.get(field), (int, float)) and math.isfinite(r[field])]
                for g in gs.values()]
        ax.boxplot([d if d else [math.nan] for d in data])
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xticks(range(1, len(labels) + 1), labels, rotation=60, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    if len(keys) >= 2:
        heatmap(rows, keys[0], keys[1], str(path).rsplit(".", 1)[0] + "-heatmap.png")


def heatmap(rows: Sequence[dict], key_x: str, key_y: str, path) -> None:
    """Median cross-track RMS over everything else, for two swept factors (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    xs = list(dict.fromkeys(_label(r.get(key_x)) for r in rows))
    ys = list(dict.fromkeys(_label(r.get(key_y)) for r in rows))
    grid = np.full((len(ys), len(xs)), np.nan)
    for j, y in enumerate(ys):
        for i, x in enumerate(xs):
            v = [r["xte_rms_m"] for r in rows if _label(r.get(key_x)) == x and _label(r.get(key_y)) == y
                 and isinstance(r.get("xte_rms_m"), (int, float)) and math.isfinite(r["xte_rms_m"])]
            if v:
                grid[j, i] = float(np.median(v))
    fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 3, 0.6 * len(ys) + 2))
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    for j in range(len(ys)):
        for i in range(len(xs)):
            if math.isfinite(grid[j, i]):
                ax.text(i, j, f"{grid[j, i]:.2f}", ha="center", va="center", color="w", fontsize=8)
    ax.set_xticks(range(len(xs)), xs, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(ys)), ys, fontsize=7)
    ax.set_xlabel(key_x)
    ax.set_ylabel(key_y)
    fig.colorbar(im, ax=ax, label="median cross-track RMS [m]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
