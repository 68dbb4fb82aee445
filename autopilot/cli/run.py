"""`autopilot run --config FILE [--mission FILE]`: the boat process (ROS 2 nodes, one executor) from a boat config."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the autopilot on ROS 2 from a boat config (boat, sim or Gazebo)",
                              description="Start the nodes the boat config lists (GNSS, IMU, autopilot, "
                                          "diagnostics) in one process with one executor, on the backend it "
                                          "names (hw, sim or gazebo). Needs rclpy: the system's ROS 2 on a boat, "
                                          "or `pip install .[ros]` on a laptop.")
    p.add_argument("--config", required=True, metavar="FILE", help="boat config YAML (e.g. config/boat.yaml)")
    p.add_argument("--mission", metavar="FILE",
                   help="mission YAML or QGroundControl/Mission Planner `QGC WPL 110` file (overrides the boat "
                        "config's mission); checked against the vessel and geofence before anything starts")
    p.add_argument("--seed", type=int, default=1, help="random seed of the sim backend")
    p.set_defaults(func=run)


def run(args) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.files.check import check_mission
    from autopilot.files.mission_files import load_mission_file
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.schema import ConfigError

    try:
        cfg = load_boat_config(args.config)
        vessel = load_vessel(str(cfg.vessel_path()))
        mission_path = args.mission or cfg.mission_path()
        if mission_path is None:
            print(f"error: {args.config}: no mission: give `mission:` in the boat config or --mission FILE",
                  file=sys.stderr)
            return 2
        mission = load_mission_file(mission_path)
        from autopilot.files.tunables import load_with_overlay, overlay_path_for
        params = load_with_overlay(vessel, mission, overlay_path_for(args.config))
        vessel, mission = params.vessel, params.mission
        if params.overlay:
            print(f"parameters from {params.overlay_path}: "
                  + ", ".join(f"{k}={v}" for k, v in params.overlay.items()))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problems = check_mission(mission, vessel)
    if problems:
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        print(f"error: mission {mission_path} refused ({len(problems)} problem(s)); nothing started",
              file=sys.stderr)
        return 2
    try:
        from autopilot.ros.runner import run_boat
    except ImportError as e:
        print(f"error: ROS 2 is not available ({e}). On a boat: `source /opt/ros/$ROS_DISTRO/setup.bash` "
              "before starting; on a laptop: `pip install .[ros]`.", file=sys.stderr)
        return 2
    return run_boat(cfg, vessel, mission, config_file=str(args.config), seed=args.seed, params=params)
