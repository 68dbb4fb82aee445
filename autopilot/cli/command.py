"""`autopilot command --config FILE WORDS...`: arm, disarm, change mode or load a mission on a running boat."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "command", help="send a command to the running autopilot (arm, disarm, mode NAME, mission PATH)",
        description="Send one command to the autopilot started by `autopilot run --config FILE` (same boat "
                    "config: namespace, topics, ROS_DOMAIN_ID from the environment) and print its answer. "
                    "Examples: `arm`, `disarm`, `mode RTL`, `mode LOITER`, `mission /path/lake.waypoints`, "
                    "`manual 0.3 -0.2`.")
    p.add_argument("--config", required=True, metavar="FILE", help="the boat config the autopilot runs with")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="how long to wait for the answer")
    p.add_argument("words", nargs="+", help="the command, e.g. mode AUTO")
    p.set_defaults(func=run)


def run(args) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.schema import ConfigError

    try:
        cfg = load_boat_config(args.config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        from autopilot.ros.command_client import is_refusal, send_command
    except ImportError as e:
        print(f"error: ROS 2 is not available ({e}): source /opt/ros/$ROS_DISTRO/setup.bash", file=sys.stderr)
        return 2
    text = " ".join(args.words)
    if cfg.commands.auth == "token":
        import getpass
        import socket

        from autopilot.commands.auth import TokenError, read_token, sign
        try:
            token = read_token(cfg.token_path())
        except TokenError as e:
            print(f"error: cannot sign the command: {e}", file=sys.stderr)
            return 2
        text = sign(token, f"{getpass.getuser()}@{socket.gethostname()}", text)
    answer = send_command(cfg, text, timeout_s=args.timeout)
    if answer is None:
        print(f"error: no autopilot answered on {cfg.ros.namespace or '/'} within {args.timeout:g} s "
              f"(is `autopilot run --config {args.config}` running, with the same ROS_DOMAIN_ID?)", file=sys.stderr)
        return 1
    print(answer)
    return 1 if is_refusal(answer) else 0
