"""`autopilot run --config FILE [--mission FILE]`: the boat process from a boat config, with its ROS 2 rim when
`ros.start` asks for it (autopilot/runtime/boat_process.py)."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the autopilot from a boat config (boat, sim or Gazebo)",
                              description="Run the boat the config describes on the backend it names (hw, sim "
                                          "or gazebo): the control loop, the operator desk, MAVLink, the run log "
                                          "and systemd notifications, on Python alone. With ROS 2 (rclpy) the "
                                          "nodes the config lists are started around it (`ros.start: auto | "
                                          "on | off`; gazebo needs ROS 2).")
    p.add_argument("--config", required=True, metavar="FILE", help="boat config YAML (e.g. config/boat.yaml)")
    p.add_argument("--mission", metavar="FILE",
                   help="mission YAML or QGroundControl/Mission Planner `QGC WPL 110` file (overrides the boat "
                        "config's mission); checked against the vessel and geofence before anything starts")
    p.add_argument("--seed", type=int, default=1, help="random seed of the sim backend")
    p.add_argument("--allow-sim-calibration", action="store_true",
                   help="accept a magnetometer calibration written by `autopilot calibrate mag --sim` on the hw "
                        "backend (refused otherwise: a simulator's fit is not this boat's iron)")
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
    from autopilot.files.boat import ros_decision
    from autopilot.runtime.boat_process import run_boat_plain
    use_ros, line = ros_decision(cfg)
    print(line, file=sys.stderr, flush=True)
    if use_ros is None:
        return 2
    kw = dict(config_file=str(args.config), seed=args.seed, params=params,
              allow_sim_calibration=args.allow_sim_calibration)
    if use_ros:
        from autopilot.ros.runner import run_boat_on_ros
        return run_boat_on_ros(cfg, vessel, mission, **kw)
    return run_boat_plain(cfg, vessel, mission, **kw)
