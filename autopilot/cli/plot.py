"""`autopilot plot LOG [LOG ...]`: draw a logged run (a run directory or its state.csv) to a PNG.

A LOG that is a log folder (what `--log DIR` or the boat's logging.dir fill with `<time>_<mission>/` runs) means
its newest run; a note says which.

Further LOGs are drawn over the first for comparison (their estimated track, heading and speed, on the first
run's time axis): e.g. a run and its `autopilot log replay` with another filter tuning.

Panels: the track (estimate, and the true track of a simulation) against the mission's path, waypoints and
geofence; cross-track error; heading (compass degrees 0..360, as `autopilot sim --plot` draws it) and speed
against their setpoints; thrust per thruster, named as in the run's vessel file. Time panels are shaded by mode
and marked at warning/error events; the cross-track panel's legend says which shade is which mode and which
line which event. The mission comes from the copy kept in the run directory
(or --mission); north_m/east_m in state.csv are in the mission's frame (origin at its anchor, else at its first
waypoint), which is where the waypoints are drawn. matplotlib's Agg backend: no display needed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from autopilot.vocab.angles import HEADING_TICKS_DEG, compass_deg_for_plot

MODE_COLOURS = {"MANUAL": "#d0d0ff", "HOLD": "#e0e0e0", "LOITER": "#d8f0d8", "AUTO": "#ffffff", "RTL": "#ffe0c0"}


def register(subparsers) -> None:
    p = subparsers.add_parser("plot", help="draw a logged run (run directory or state.csv) to a PNG",
                              description="Draw a run's track, cross-track error, heading/speed vs setpoints "
                                          "and thruster commands from its state.csv.")
    p.add_argument("log", metavar="LOG", help="run directory (runs/<time>_<mission>) or its state.csv, or a log "
                                              "folder (runs/): its newest run")
    p.add_argument("compare", metavar="LOG", nargs="*",
                   help="more runs whose estimate is drawn over the first (e.g. its replay with other tuning)")
    p.add_argument("-o", "--output", metavar="PNG", help="output image (default: LOG/plot.png)")
    p.add_argument("--mission", metavar="FILE", help="mission to draw (default: the copy in the run directory)")
    p.set_defaults(func=run)


def run(args) -> int:
    from autopilot.runlog import read_run
    from autopilot.runlog.rundir import find_run

    runs = []
    for given in [args.log, *(getattr(args, "compare", None) or ())]:
        try:
            path, note = find_run(given)
        except FileNotFoundError as e:
            print(e)
            return 1
        if note:
            print(f"note: {note}")
        run = read_run(path)
        if len(run) == 0:
            print(f"{run.run_dir}: state.csv has no rows to plot")
            return 1
        runs.append(run)
    data, others = runs[0], runs[1:]
    mission, note = _mission(data, args.mission)
    if note:
        print(f"note: {note}")
    out = Path(args.output) if args.output else data.run_dir / "plot.png"
    plot_run(data, mission, out, others)
    print(f"{out}: {len(data)} rows, {data['time_s'][-1] - data['time_s'][0]:.1f} s"
          + ("" if data.closed_cleanly else " (run did not close cleanly: crash or still running)"))
    return 0


def _mission(data, override):
    from autopilot.files.mission_files import read_mission_file
    from autopilot.vocab.schema import ConfigError

    path = Path(override) if override else data.file("mission")
    if path is None:
        return None, "no mission file in the run directory; drawing the track only"
    try:
        return read_mission_file(path).mission, None
    except ConfigError as e:
        return None, f"mission not drawn: {e}"


def plot_run(data, mission, out: Path, others=()) -> None:
    """Draw `data` (autopilot.runlog.RunData) with `mission` (MissionConfig or None) to `out`; the estimates
    of `others` (more RunData, on the same clock) are drawn over it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = data["time_s"] - data["time_s"][0]
    fig = plt.figure(figsize=(14, 9), constrained_layout=True)
    gs = fig.add_gridspec(4, 2, width_ratios=(1.1, 1))
    ax = fig.add_subplot(gs[:, 0])
    _track(ax, data, mission, others)
    axes = [fig.add_subplot(gs[i, 1]) for i in range(4)]
    for a in axes[1:]:
        a.sharex(axes[0])

    a = axes[0]
    a.plot(t, data["xte_m"], color="tab:red", lw=1)
    a.axhline(0.0, color="k", lw=0.5)
    a.set_ylabel("cross-track [m]")

    a = axes[1]
    a.plot(t, compass_deg_for_plot(data["heading_deg"]), color="tab:blue", lw=1, label="heading")
    a.plot(t, compass_deg_for_plot(data["heading_ref_deg"]), color="k", ls="--", lw=1, label="setpoint")
    for i, o in enumerate(others):
        a.plot(o["time_s"] - data["time_s"][0], compass_deg_for_plot(o["heading_deg"]), color=_other_colour(i),
               lw=1, ls=":", label=f"heading: {o.run_dir.name}")
    a.set_ylabel("heading [deg, compass]")
    a.set_ylim(0, 360)
    a.set_yticks(HEADING_TICKS_DEG)
    a.legend(loc="upper right", fontsize=7)

    a = axes[2]
    speed = np.hypot(data["surge_mps"], np.nan_to_num(data["sway_mps"]))
    a.plot(t, data["surge_mps"], color="tab:blue", lw=1, label="surge")
    a.plot(t, speed, color="tab:cyan", lw=0.8, alpha=0.7, label="speed")
    a.plot(t, data["speed_ref_mps"], color="k", ls="--", lw=1, label="setpoint")
    for i, o in enumerate(others):
        a.plot(o["time_s"] - data["time_s"][0], o["surge_mps"], color=_other_colour(i), lw=1, ls=":",
               label=f"surge: {o.run_dir.name}")
    a.set_ylabel("speed [m/s]")
    a.legend(loc="upper right", fontsize=7)

    a = axes[3]
    for i, name in enumerate(thruster_names(data)):
        a.plot(t, data[f"thrust_n_{i}"], lw=1, label=name)
    a.set_ylabel("thrust [N]")
    a.set_xlabel("time since start [s]")
    if data.thruster_count():
        a.legend(loc="upper right", fontsize=7)

    shown_modes: list = []
    shown_events: set = set()
    for a in axes:
        shown_modes = _modes(a, t, data)
        shown_events = _events(a, data)
        a.grid(alpha=0.3)
    key = shading_legend(shown_modes, shown_events)
    if key:                                       # on the cross-track panel, the one without a legend of its own
        handles, labels = zip(*key)
        axes[0].legend(handles, labels, loc="best", ncol=min(len(key), 4), fontsize=7,
                       title="background: mode; vertical lines: events", title_fontsize=7)
    title = data.meta.get("mission_name") or data.run_dir.name
    fig.suptitle(f"{data.run_dir.name}: {title}", fontsize=11)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


OTHER_COLOURS = ("tab:purple", "tab:green", "tab:brown", "tab:pink", "tab:olive")


def _other_colour(i: int) -> str:
    return OTHER_COLOURS[i % len(OTHER_COLOURS)]


def _track(ax, data, mission, others=()) -> None:
    if mission is not None:
        from autopilot.guidance.path_following import mission_frame, point_to_ned

        frame = mission_frame(mission)
        wps = np.array([point_to_ned(p, frame) for p in mission.waypoints])
        path = wps
        if mission.start is not None:
            s = point_to_ned(mission.start.point, frame)
            path = np.vstack([s, wps])
            ax.plot(s[1], s[0], "g^", ms=9, label="launch")
        ax.plot(path[:, 1], path[:, 0], "k--", lw=1, label="planned path")
        ax.plot(wps[:, 1], wps[:, 0], "ks", ms=5, mfc="none", label="waypoints")
        if mission.geofence:
            fence = np.array(
                [point_to_ned(p, frame) for p in mission.geofence] + [point_to_ned(mission.geofence[0], frame)]
            )
            ax.plot(fence[:, 1], fence[:, 0], color="tab:red", lw=1.2, label="geofence")
    if "truth_north_m" in data.columns:
        ax.plot(data["truth_east_m"], data["truth_north_m"], color="tab:blue", lw=1.5, label="true track")
    ax.plot(data["east_m"], data["north_m"], color="tab:orange", lw=1,
            label=f"estimate: {data.run_dir.name}" if others else "estimate")
    for i, o in enumerate(others):
        ax.plot(o["east_m"], o["north_m"], color=_other_colour(i), lw=1, ls="--",
                label=f"estimate: {o.run_dir.name}")
    ax.set_xlabel("east [m]")
    ax.set_ylabel("north [m]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)


def thruster_names(data) -> list:
    """The names of the run's thrusters (its vessel file's, in the order of the thrust_n_<i> columns); the
    index ("thruster 0") where the run kept no readable vessel file or it has another number of thrusters."""
    n = data.thruster_count()
    fallback = [f"thruster {i}" for i in range(n)]
    path = data.file("vessel")
    if path is None:
        return fallback
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.schema import ConfigError
    try:
        names = [t.name for t in load_vessel(path).thrusters]
    except (ConfigError, OSError):
        return fallback
    return names if len(names) == n else fallback


MODE_ALPHA = 0.6
EVENT_COLOURS = {"warn": "tab:orange", "error": "tab:red"}


def _modes(ax, t, data) -> list:
    """Shade the time axis by mode; returns the modes shown, in the order they first came."""
    modes = data.columns.get("mode")
    if modes is None or len(modes) == 0:
        return []
    shown: list = []
    start = 0
    for k in range(1, len(modes) + 1):
        if k == len(modes) or modes[k] != modes[start]:
            mode = str(modes[start])
            ax.axvspan(t[start], t[min(k, len(t) - 1)], color=_mode_colour(mode), alpha=MODE_ALPHA, lw=0,
                       zorder=0)
            if mode not in shown:
                shown.append(mode)
            start = k
    return shown


def _mode_colour(mode: str) -> str:
    return MODE_COLOURS.get(mode, "#f4f4f4")


def _events(ax, data) -> set:
    """Mark warning and error events; returns the levels marked."""
    t0 = data["time_s"][0]
    shown = set()
    for ev in data.events:
        if ev.get("level") in EVENT_COLOURS and ev.get("time_s") is not None:
            ax.axvline(ev["time_s"] - t0, color=EVENT_COLOURS[ev["level"]], lw=0.8, alpha=0.8)
            shown.add(ev["level"])
    return shown


def shading_legend(modes, event_levels) -> list:
    """(handle, label) pairs explaining the time panels' shading (one per mode shown, white AUTO included) and
    event lines (one per level shown)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    key: list = [(Patch(facecolor=_mode_colour(m), alpha=MODE_ALPHA, edgecolor="0.6", lw=0.5), m) for m in modes]
    for level in ("warn", "error"):
        if level in event_levels:
            key.append((Line2D([], [], color=EVENT_COLOURS[level], lw=0.8),
                        "warning event" if level == "warn" else "error event"))
    return key
