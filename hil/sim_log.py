"""Write a simulated run as a CSV a person can open in a spreadsheet (one row per control cycle)."""
from __future__ import annotations

import csv
import math
from pathlib import Path


def write_run_csv(result, log_dir) -> Path:
    """Write `run.csv` (and `events.csv`) into log_dir; returns the CSV path."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / "run.csv"
    tr = result.trace
    n_thr = result.thrust_n.shape[1]
    header = ["time_s", "truth_north_m", "truth_east_m", "truth_heading_deg", "truth_surge_mps",
              "est_north_m", "est_east_m", "est_heading_deg", "est_surge_mps", "est_valid",
              "heading_ref_deg", "speed_ref_mps", "xte_est_m", "waypoint_index", "surge_force_n",
              "yaw_moment_nm"]
    header += [f"thrust_{i}_n" for i in range(n_thr)] + [f"pulse_{i}_us" for i in range(n_thr)]
    deg = {"truth_psi", "est_psi", "ref_psi"}
    keys = ["t", "truth_n", "truth_e", "truth_psi", "truth_u", "est_n", "est_e", "est_psi", "est_u",
            "est_valid", "ref_psi", "ref_u", "xte_est", "wp_index", "surge_n", "yaw_nm"]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for k in range(len(tr["t"])):
            row = []
            for key in keys:
                v = float(tr[key][k])
                if key in deg:
                    v = math.degrees(v)
                row.append("" if math.isnan(v) else f"{v:.4f}")
            row += [f"{v:.3f}" for v in result.thrust_n[k]] + [f"{int(v)}" for v in result.pulses_us[k]]
            w.writerow(row)
    with (log_dir / "events.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_s", "kind", "message"])
        for ev in result.events:
            w.writerow([f"{ev.time_s:.3f}", ev.kind, ev.message])
    return path
