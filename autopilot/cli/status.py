"""`autopilot status --config FILE [--json]`: how the running boat is, asked on its local status socket.

Works with and without ROS 2 (`autopilot command` needs ROS): the boat process serves a read-only unix socket
(autopilot/runtime/status_endpoint.py; where it is follows from the boat config). Printed: the mode and whether
armed, the mission's progress, each component's health, what would refuse arming now, the operator link and
the MAVLink links, and the run log's directory; --json prints the status object as the boat sent it. Exit status
0 when the boat answered, 1 when no boat answers (the message says where it asked), 2 for a boat config that
does not validate.
"""
from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("status", help="show the running boat's mode, arming, health and log (with or "
                                             "without ROS)", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, metavar="FILE",
                   help="the boat config the boat runs with (it says where the boat's status socket is)")
    p.add_argument("--json", action="store_true", help="print the status as one JSON object")
    p.add_argument("--timeout-s", type=float, default=3.0, metavar="S",
                   help="how long to wait for the boat's answer (default 3 s)")
    p.set_defaults(func=run)


def _boat_config(path):
    """The boat config's own sections (the vessel and mission files it names are not read: the boat runs
    with the ones it loaded)."""
    import dataclasses

    from autopilot.files.boat import BoatConfig, normalise_boat_yaml
    from autopilot.vocab.config import read_yaml
    from autopilot.vocab.schema import build
    cfg = build(BoatConfig, normalise_boat_yaml(read_yaml(path)), str(path))
    return dataclasses.replace(cfg, source_file=str(path))


def run(args) -> int:
    from autopilot.runtime.status_endpoint import StatusUnavailable, read_status, status_socket_path
    from autopilot.vocab.schema import ConfigError
    try:
        cfg = _boat_config(args.config)
    except ConfigError as e:
        print(f"status: {e}", file=sys.stderr)
        return 2
    path = status_socket_path(cfg)
    try:
        status = read_status(path, timeout_s=max(0.1, args.timeout_s))
    except StatusUnavailable as e:
        print(f"status: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(status))
    else:
        print("\n".join(describe(status)))
    return 0


def describe(s: dict) -> list:
    """The status object as lines for people."""
    if "error" in s:
        return [f"boat: {s['error']}"]
    lines = [f"boat: {s.get('vessel')} (backend {s.get('backend')}, {'with' if s.get('ros') else 'without'} "
             f"ROS 2), pid {s.get('pid')}, up {s.get('core_time_s')} s",
             f"mode: {s.get('mode')}, {'ARMED' if s.get('armed') else 'disarmed'}",
             f"mission: {s.get('mission')}: waypoint {s.get('waypoint_index')} of {s.get('waypoints_total')}, "
             f"{s.get('waypoints_reached')} reached{', complete' if s.get('mission_complete') else ''}"]
    lines.append("health:")
    for h in s.get("health", []):
        lines.append(f"  {h.get('component')}: {h.get('level')}: {h.get('message')}")
    reasons = s.get("prearm_failures") or []
    lines.append("pre-arm: all checks pass" if not reasons else "pre-arm: arming would be refused:")
    lines.extend(f"  {r}" for r in reasons)
    link = s.get("link") or {}
    age = link.get("operator_heartbeat_age_s")
    heard = "no operator heartbeat yet" if age is None else f"operator heartbeat {age:g} s ago"
    mav = ", ".join(link.get("mavlink") or []) or "none"
    lines.append(f"link: {heard}{' (link-loss failsafe active)' if link.get('link_loss_failsafe') else ''}; "
                 f"MAVLink links: {mav}")
    if s.get("failsafes_active"):
        lines.append(f"failsafes active: {', '.join(s['failsafes_active'])}")
    lines.append(f"log: {s.get('log_dir') or 'not logging'}")
    return lines
