"""`autopilot sim MISSION --mavlink LINK --realtime`: the simulated boat as a MAVLink vehicle.

The ground station does what the simulator's stand-in operator does otherwise: it arms (the pre-arm checks
decide), picks the modes, uploads missions and sends the heartbeat the operator-link failsafe watches. The run
starts in HOLD (or --mode), lasts --duration simulated seconds (default 1 h) or until SIGINT/SIGTERM, and
prints the usual summary at the end. Every answer and event is printed as it happens.
"""
from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from pathlib import Path

DEFAULT_DURATION_S = 3600.0


def _web_setup(args):
    """(WebConfig, PasswordHash, password shown or "") for --web, or None; ConfigError for a bad address or
    password file."""
    if not args.web:
        return None
    import secrets

    from autopilot.files.boat import WebConfig
    from autopilot.vocab.schema import ConfigError, build
    from autopilot.web.passwords import PasswordFileError, hash_password, read_password_file
    web_cfg = build(WebConfig, {"listen": args.web}, "--web")
    if args.web_password_file:
        try:
            return web_cfg, read_password_file(args.web_password_file), ""
        except PasswordFileError as e:
            raise ConfigError("--web-password-file", "file", str(e)) from None
    shown = secrets.token_urlsafe(9)
    return web_cfg, hash_password(shown), shown


def fly_with_mavlink(vessel, mission, opts, args, env) -> int:
    from autopilot.cli.sim_summary import format_summary
    from autopilot.files.boat import MavlinkConfig
    from autopilot.mavlink.server import MavlinkError, read_signing_key
    from autopilot.mavlink.sim_session import SimMavlink
    from autopilot.vocab.schema import ConfigError, build
    from autopilot.web.errors import WebError
    from hil.sim.runner import run_sim

    cfg = None
    try:
        if args.mavlink:
            cfg = build(MavlinkConfig, {"links": list(args.mavlink), "system_id": args.mavlink_sysid}, "--mavlink")
        web = _web_setup(args)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    key = None
    try:
        if args.mavlink_key:
            key = read_signing_key(args.mavlink_key)
    except MavlinkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    params = None
    try:
        from autopilot.files.tunables import load_with_overlay
        params = load_with_overlay(vessel, mission, Path(args.params) if args.params else None)
        vessel, mission = params.vessel, params.mission
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.realtime:
        print("note: without --realtime the simulated boat runs faster than a ground station expects",
              file=sys.stderr)

    # printed by a writer thread, refusals from one origin once a second: a stdout nobody reads (a full pipe)
    # must never stop the loop or the MAVLink thread (autopilot/runtime/console.py)
    from autopilot.commands.limits import RepeatQuieter, origin_of
    from autopilot.runtime.console import ConsoleWriter
    console = ConsoleWriter(sys.stdout)
    quieter = RepeatQuieter()

    def say(text: str, error: bool) -> None:
        if error:
            logged = quieter(origin_of(text), text)
            if logged is not None:
                console.write("! " + logged)
        else:
            console.write("  " + text)

    upload_dir = Path(args.log) if args.log else None
    pages: list = []

    def start_page(desk, calls) -> None:
        from autopilot.web.server import BoatLink, WebServer
        web_cfg, password, shown = web
        server = WebServer(web_cfg, BoatLink(desk, calls, log_root=upload_dir, upload_dir=upload_dir), password,
                           on_log=lambda text: say(text, False))
        try:
            pages.append(server.start())
        except WebError as e:
            failed.append(str(e))
            stop.set()
            return
        console.write(f"web page: {server.url}" + (f" (password for this run: {shown})" if shown else ""))

    failed: list = []
    session = SimMavlink(cfg, vessel, signing_key=key, upload_dir=upload_dir, params=params, on_event=say,
                         on_start=start_page if web is not None else None)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    opts = dataclasses.replace(opts, auto_arm=False, operator_link=False, stop=stop, on_cycle=session.on_cycle,
                               initial_mode=args.mode or "HOLD",
                               duration_s=args.duration or DEFAULT_DURATION_S)
    if cfg is not None:
        print(f"MAVLink: serving {', '.join(cfg.links)} as system {cfg.system_id}"
              f"{' (signed)' if key else ''}; Ctrl-C ends the run", flush=True)
    try:
        result = run_sim(vessel, mission, opts)
    except MavlinkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        session.close()
        for page in pages:
            page.stop()
        for s, h in old.items():
            signal.signal(s, h)
        console.close()
    if failed:
        print(f"error: {failed[0]}", file=sys.stderr)
        return 2
    print(format_summary(result.report, env), flush=True)
    if args.report:
        import json

        from autopilot.cli.sim_summary import jsonable
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(jsonable(result.report), indent=2) + "\n")
        print(f"report: {args.report}")
    return 0
