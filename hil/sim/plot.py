"""The picture of a simulated run: path vs trajectory, cross-track error, heading and speed vs setpoints,
thruster commands. Written with matplotlib's Agg backend (no screen needed).

Headings are compass degrees 0..360 wrapped as `autopilot plot` draws them (autopilot.vocab.angles
.compass_deg_for_plot); thrusters are named as in the vessel file."""
from __future__ import annotations

import numpy as np

from autopilot.vocab.angles import HEADING_TICKS_DEG, compass_deg_for_plot


def plot_run(result, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tr, r = result.trace, result.report
    t = tr["t"]
    fig = plt.figure(figsize=(13, 9), constrained_layout=True)
    gs = fig.add_gridspec(3, 2, width_ratios=(1.15, 1))
    ax = fig.add_subplot(gs[:, 0])
    wp = np.array([result.start_ned] + list(result.waypoints_ned))
    ax.plot(wp[:, 1], wp[:, 0], "k--", lw=1, label="planned path")
    ax.plot(wp[1:, 1], wp[1:, 0], "ks", ms=5, mfc="none", label="waypoints")
    if len(result.gps_ne):
        ax.plot(result.gps_ne[:, 1], result.gps_ne[:, 0], ".", color="0.6", ms=3, label="raw GNSS")
    valid = tr["est_valid"] > 0.5
    ax.plot(np.where(valid, tr["est_e"], np.nan), np.where(valid, tr["est_n"], np.nan), "-",
            color="tab:orange", lw=1, label="estimate (EKF)")
    ax.plot(tr["truth_e"], tr["truth_n"], "-", color="tab:blue", lw=1.5, label="true track")
    ax.plot(*result.start_ned[::-1], "g^", ms=9, label="launch")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    done = "complete" if r["mission_complete"] else "NOT complete"
    ax.set_title(f"{r['mission']} on {r['vessel']}: {done}\n"
                 f"XTE rms {r['xte_rms_m']:.2f} m, max {r['xte_max_m']:.2f} m; "
                 f"estimate err rms {r['pos_err_rms_m']:.2f} m (GNSS {r['gps_err_rms_m']:.2f} m)", fontsize=10)

    ax1 = fig.add_subplot(gs[0, 1])
    ax1.plot(t, tr["xte_est"], color="tab:orange", lw=0.8, label="cross-track (estimate)")
    ax1.axhline(0, color="k", lw=0.5)
    ax1.set_ylabel("cross-track error [m]")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8)

    ax2 = fig.add_subplot(gs[1, 1], sharex=ax1)
    ax2.plot(t, compass_deg_for_plot(np.degrees(tr["truth_psi"])), lw=1, label="heading (true)")
    ax2.plot(t, compass_deg_for_plot(np.degrees(tr["ref_psi"])), "--", lw=1, label="heading setpoint")
    ax2.set_ylabel("heading [deg, compass]")
    ax2.set_ylim(0, 360)
    ax2.set_yticks(HEADING_TICKS_DEG)
    ax2b = ax2.twinx()
    ax2b.plot(t, tr["truth_u"], color="tab:green", lw=1, label="surge (true)")
    ax2b.plot(t, tr["ref_u"], "--", color="tab:olive", lw=1, label="speed setpoint")
    ax2b.set_ylabel("speed [m/s]")
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax2b.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower right")
    ax2.grid(alpha=0.3)

    ax3 = fig.add_subplot(gs[2, 1], sharex=ax1)
    names = list(result.thruster_names)
    for i in range(result.thrust_n.shape[1]):
        ax3.plot(t, result.thrust_n[:, i], lw=0.8, label=names[i] if i < len(names) else f"thruster {i}")
    ax3.set_ylabel("thrust command [N]")
    ax3.set_xlabel("time [s]")
    ax3.grid(alpha=0.3)
    ax3.legend(fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)
