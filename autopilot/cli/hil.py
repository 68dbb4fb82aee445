"""`autopilot hil serve|discovery`: the PC side of a two-machine HIL bench.

    autopilot hil serve --config config/gazebo/foka_boat.yaml [--realtime] [--on-outage pause|run] [--report R.json]
    autopilot hil discovery --pc-ip 192.168.1.10 --pi-ip 192.168.1.20 [--domain-id 7] [--out hil-discovery]

`serve` runs the Gazebo stand-in for the boat config's gazebo section on this machine, waits for the Pi's autopilot
(`autopilot run --config boat.yaml` with backend: gazebo, same namespace and topics) to appear, arms it and asks
for AUTO over its command topic (signed with the config's command token: copy the Pi's token file here), records
truth, and prints/writes the same report as `autopilot sim` plus the link's figures (hil/ros/hil_bench.py).
`discovery` writes the unicast discovery files for both machines (autopilot/ros/discovery.py).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def register(subparsers) -> None:
    from autopilot.cli.sim import add_plant_arguments, add_weather_arguments, lockstep_steps

    p = subparsers.add_parser("hil", help="two-machine HIL bench: the simulator side (serve), discovery files",
                              description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="hil_command", metavar="WHAT")
    sub.required = True
    s = sub.add_parser("serve", help="simulate the boat for an autopilot running on another machine",
                       description="Run the Gazebo stand-in for CONFIG's gazebo section, wait for the autopilot, "
                                   "arm it, start its mission and report the run and the link.")
    s.add_argument("--config", required=True, metavar="FILE",
                   help="boat config with a gazebo section (the Pi's, with this machine's paths)")
    s.add_argument("--mission", metavar="FILE", help="the mission the Pi flies (launch point and legs for the "
                                                     "report); default: the config's")
    s.add_argument("--realtime", action="store_true", help="pace /clock to the wall clock (default: lockstep)")
    s.add_argument("--on-outage", choices=("pause", "run"), default="pause",
                   help="a link outage pauses the plant and /clock (default) or lets them run on")
    s.add_argument("--lockstep-window", type=lockstep_steps, default=1, metavar="STEPS",
                   help="without --realtime: steps in flight before the plant waits for the Pi's answer (default 1: "
                        "strict lockstep, one link round trip per step; a link of round trip R needs about "
                        "R / 20 ms to run near real time)")
    s.add_argument("--duration", type=float, metavar="S", help="simulated seconds (default: until complete)")
    s.add_argument("--wait", type=float, default=300.0, metavar="S", help="how long to wait for the autopilot")
    s.add_argument("--seed", type=int, default=1,
                   help="random seed of the simulated sensors' noise and the waves (default 1)")
    s.add_argument("--gps-noise", choices=("realistic", "white", "none"), default="realistic",
                   help="realistic (default): white noise plus a Gauss-Markov bias; white: the noise only; none: "
                        "exact fixes")
    add_weather_arguments(s)
    add_plant_arguments(s)
    s.add_argument("--report", metavar="FILE.json", help="write the report here")
    s.add_argument("--latency-log", metavar="FILE.csv",
                   help="write every sensor stamp's latency here (stamp, published and thrust-received wall ns)")
    s.set_defaults(func=serve)
    d = sub.add_parser("discovery", help="write unicast discovery config (no multicast) for the PC and the Pi",
                       description="Write pc.env, pi.env (ROS_STATIC_PEERS) and pc_fastdds.xml, pi_fastdds.xml "
                                   "(Fast DDS initial peers) so the two machines find each other without multicast.")
    d.add_argument("--pc-ip", required=True, help="this machine's address on the bench network")
    d.add_argument("--pi-ip", required=True, help="the Pi's address")
    d.add_argument("--domain-id", type=int, default=0, help="ROS_DOMAIN_ID for both (0..232)")
    d.add_argument("--security-keystore", metavar="DIR", help="SROS2 keystore: turn DDS security on (Enforce)")
    d.add_argument("--out", default="hil-discovery", metavar="DIR",
                   help="folder the four files are written to (default hil-discovery)")
    d.set_defaults(func=discovery)


def discovery(args) -> int:
    from autopilot.ros.discovery import write_discovery
    try:
        paths = write_discovery(args.pc_ip, args.pi_ip, args.out, args.domain_id, args.security_keystore)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"wrote {p}")
    print("copy pi.env (and pi_fastdds.xml) to the Pi; on each machine: set -a; . ./SIDE.env; set +a")
    return 0


def serve(args) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import ConfigError

    try:
        cfg = load_boat_config(args.config)
        vessel = load_vessel(str(cfg.vessel_path()))
        mission_path = args.mission or cfg.mission_path()
        if mission_path is None:
            print(f"error: {args.config}: mission: is required here, or give --mission FILE (the launch point "
                  f"and legs the report scores)", file=sys.stderr)
            return 2
        mission = load_mission(mission_path)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from autopilot.cli.sim import _plant_spec, environment_from_args
    try:
        args.plant_spec = _plant_spec(vessel, args)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if cfg.gazebo is None:
        print(f"error: {args.config}: gazebo: is required (the topics the simulator speaks)", file=sys.stderr)
        return 2
    if cfg.commands.auth == "token":
        from autopilot.commands.auth import TokenError, read_token
        try:
            read_token(cfg.token_path())
        except TokenError as e:
            print(f"error: {args.config}: commands: cannot sign the arm and mode commands: {e} (copy the Pi's "
                  f"token file here)", file=sys.stderr)
            return 2
    try:
        from hil.ros.hil_bench import BenchError, bench_options, fly_bench_in_own_context
    except ImportError as e:
        print(f"error: hil serve needs rclpy ({e}): source /opt/ros/$ROS_DISTRO/setup.bash", file=sys.stderr)
        return 2
    from autopilot.cli.sim_summary import format_summary
    from autopilot.cli.sim_summary import jsonable as _jsonable

    env = environment_from_args(args)
    print(f"hil serve: waiting up to {args.wait:g} s for the autopilot on {cfg.ros.namespace or '/'} "
          f"(ROS domain {os.environ.get('ROS_DOMAIN_ID', '0')})", flush=True)
    try:
        report = fly_bench_in_own_context(cfg, vessel, mission, env, bench_options(args), wait_s=args.wait)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(format_summary(report, env))
    print(f"  link: sensor->thrust latency p50 {report['latency_p50_ms']:.1f} ms, p99 {report['latency_p99_ms']:.1f}"
          f" ms, max {report['latency_max_ms']:.1f} ms; loss {json.dumps(report['loss'])}")
    for w in report["link_warnings"]:
        print(f"  warning: {w}")
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(_jsonable(report), indent=2) + "\n")
        print(f"report: {args.report}")
    return 0 if report["mission_complete"] or args.duration is not None else 1
