"""`autopilot check --config FILE [--mission FILE]`: validate the config and mission, print every problem, start
nothing.

Every problem of every file is printed in one go (all the schema mistakes of a file, not only the first), one
line each, `FILE: KEY: REASON`, on stdout. Exit status 0 when everything is fine (a short summary is printed),
1 when any problem was found, 2 for a bad command line. Notes (things skipped or worth knowing, not errors)
start with `note:`. `autopilot check CONFIG` (the file without --config) still works, with a note on stderr.
`--allow-sim-calibration`: a boat config with backend hw accepts a magnetometer calibration written by
`autopilot calibrate mag --sim` (a note says so).
"""
from __future__ import annotations

import math
import sys

from autopilot.files.check import DEFAULT_MAX_LEG_M, check_config
from autopilot.guidance.path_following import mission_frame, point_to_ned


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check", help="validate a vessel or boat config and a mission; print every problem; start nothing",
        description="Validate CONFIG (a vessel YAML or a boat config) and the mission (YAML or QGC WPL 110): "
                    "schemas, magnetometer calibration file, speeds, leg lengths, geofence. Exits 1 on any "
                    "problem.")
    p.add_argument("--config", dest="config", metavar="FILE", help="vessel YAML or boat config YAML to check")
    p.add_argument("legacy_config", metavar="CONFIG", nargs="?",
                   help="deprecated: the file to check without --config (use --config FILE)")
    p.add_argument("--mission", metavar="FILE", help="mission YAML, QGC WPL 110 waypoint file or QGroundControl "
                                                     ".plan (default: the boat config's mission)")
    p.add_argument("--max-leg-m", type=float, default=DEFAULT_MAX_LEG_M, metavar="M",
                   help=f"longest acceptable leg [m] (default {DEFAULT_MAX_LEG_M:g})")
    p.add_argument("--allow-sim-calibration", action="store_true",
                   help="accept a magnetometer calibration written by `autopilot calibrate mag --sim` for a boat "
                        "config with backend hw (a note says so); sim and gazebo accept it anyway")
    p.set_defaults(func=run)


def run(args) -> int:
    legacy = getattr(args, "legacy_config", None)
    if legacy is not None:
        if args.config is not None:
            print(f"check: give the file once: --config {args.config} (and not also {legacy})", file=sys.stderr)
            return 2
        print(f"note: `autopilot check CONFIG` is deprecated: use `autopilot check --config {legacy}`",
              file=sys.stderr)
        args.config = legacy
    if args.config is None:
        print("check: give the file to check: autopilot check --config FILE (a vessel YAML or a boat config)",
              file=sys.stderr)
        return 2
    if not args.max_leg_m > 0:
        print(f"--max-leg-m: must be > 0, got {args.max_leg_m}")
        return 2
    report = check_config(args.config, args.mission, max_leg_m=args.max_leg_m,
                          allow_sim_calibration=args.allow_sim_calibration)
    for note in report.notes:
        print(f"note: {note}")
    for problem in report.problems:
        print(problem)
    if not report.ok:
        n = len(report.problems)
        print(f"check: {n} problem{'s' if n != 1 else ''} found; nothing started")
        return 1
    print(f"check: OK: {summary(report)}")
    return 0


def summary(report) -> str:
    parts = []
    if report.vessel is not None:
        v = report.vessel
        parts.append(f"vessel {v.name} ({len(v.thrusters)} thrusters, max {v.hull.max_speed_mps:g} m/s)")
    m = report.mission
    if m is not None:
        frame = mission_frame(m)
        pts = ([point_to_ned(m.start.point, frame)] if m.start is not None else []) + \
              [point_to_ned(p, frame) for p in m.waypoints]
        length = sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(pts, pts[1:]))
        fence = f", inside a {len(m.geofence)}-point geofence" if m.geofence else ", no geofence"
        parts.append(f"mission {m.name} ({len(m.waypoints)} waypoints, {length:.0f} m at "
                     f"{m.cruise_speed_mps:g} m/s{fence}, then {m.on_complete})")
    return "; ".join(parts) or "nothing to check"
