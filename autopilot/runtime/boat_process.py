"""`autopilot run`: the boat process without ROS, and what it shares with the ROS 2 rim's.

`run_boat_plain(cfg, vessel, mission, ...)` starts the runtime (autopilot/runtime/boat_runtime.py) with its backend,
the run log and systemd notifications (FieldServices) and the boat config's MAVLink links, runs until SIGINT or
SIGTERM and always leaves the thrusters at neutral. `ros_decision(cfg)` (autopilot/files/boat.py) reads the boat
config's `ros.start`; the CLI then starts either this or the ROS 2 rim's process (autopilot/ros/runner.py):

- `auto` (the default): the rim starts when rclpy imports; either way one line says which and why.
- `on`: the rim must start; without rclpy the boat does not start (exit 2, with what to install).
- `off`: no ROS, even where it is installed.

Without the rim the runtime drives itself on the monotonic clock (core time 0 = start; the run log's stamps are
UTC through the wall-clock time taken at that moment) and logs through Python's logging to stderr (the journal,
under systemd); each component's health (autopilot/runtime/health.py: what the ROS diagnostics publish) is
logged when its level changes, armed or not. Exit codes: 0 stopped by a signal; 1 a device or link did not
open (a clear message, no run directory left behind); 2 the boat config asks for something this machine cannot
give.
"""
from __future__ import annotations

import logging
import sys
import threading
import time

from autopilot.runtime.heap import collect_before_loop, freeze_startup_heap
from autopilot.runtime.interpreter_lock import share_lock_with_loop

LOG = logging.getLogger("autopilot")
HEALTH_PERIOD_S = 1.0       # how often the components' health is looked at without ROS (its diagnostics' rate)


def startup_errors() -> tuple:
    """What a device or link that does not open raises; each carries a message saying what to do."""
    from autopilot.vocab.schema import ConfigError
    from drivers.esc.contract import EscError
    from drivers.esc.deadman import DeadmanError
    from drivers.gnss.l76k import GnssLinkError
    from drivers.gnss.l76k_commands import GnssSetupError
    from drivers.lsm9ds1 import ImuError
    return (EscError, DeadmanError, GnssLinkError, GnssSetupError, ImuError, ConfigError, OSError)


def make_services(cfg, vessel, mission, config_file: str):
    """The run log (not opened yet) and systemd notifications for this boat config."""
    from autopilot.guidance.path_following import mission_frame
    from autopilot.runtime.field_services import FieldServices
    lc = cfg.logging
    return FieldServices(vessel, mission, mission_frame(mission), log_dir=cfg.log_directory(),
                         log_rate_hz=lc.rate_hz, keep_runs=lc.keep_runs, max_total_mb=lc.max_total_mb,
                         extra_files=[config_file] if config_file else (), ros=cfg.ros)


def start_mavlink(cfg, runtime, upload_dir=None):
    """Serve the boat config's `mavlink:` links for `runtime` (a BoatRuntime, or the ROS node around one):
    commands go to its OperatorDesk and are run by its control loop between cycles. None when the config has
    no links; MavlinkError when no link opens or the signing key is unusable."""
    if cfg.mavlink is None:
        return None
    from pathlib import Path

    from autopilot.mavlink.server import LoopCalls, MavlinkServer, read_signing_key
    key_path = cfg.signing_key_path()
    key = read_signing_key(key_path) if key_path is not None else None
    if runtime.loop_calls is None:
        runtime.loop_calls = LoopCalls()
    return MavlinkServer(cfg.mavlink, runtime.desk, runtime.loop_calls, signing_key=key,
                         upload_dir=Path(upload_dir) if upload_dir else None).start()


def start_web_page(cfg, runtime, run_dir=None):
    """Serve the boat config's `web:` page for `runtime` (its desk; reads and commands run by its control loop
    between cycles). None when there is no `web:` section or no password yet (logged); WebError when it
    cannot listen."""
    if cfg.web is None:
        return None
    from autopilot.mavlink.server import LoopCalls
    from autopilot.web.server import start_web
    if runtime.loop_calls is None:
        runtime.loop_calls = LoopCalls()
    server = start_web(cfg, runtime.desk, runtime.loop_calls, log_root=cfg.log_directory(), upload_dir=run_dir,
                       on_log=LOG.info)
    if server is not None:
        LOG.info(f"web page: {server.url} (listening on {cfg.web.listen})")
    return server


def start_status_endpoint(cfg, runtime, services, mavlink=None, ros: bool = False, lock=None):
    """Serve `autopilot status` for `runtime` (a BoatRuntime) on the boat config's status socket
    (autopilot/runtime/status_endpoint.py); `lock` is what guards the runtime (default its own). None, with a
    warning, when the socket cannot be made: the boat runs on without it."""
    from autopilot.runtime.status_endpoint import StatusEndpoint, boat_status, status_socket_path
    guard = lock if lock is not None else runtime.lock
    log_dir = str(services.log.run_dir) if services is not None and services.log is not None else None

    def snapshot() -> dict:
        with guard:
            return boat_status(runtime, backend=cfg.backend, ros=ros, log_dir=log_dir, mavlink=mavlink,
                               sensor_timeout_s=cfg.ros.sensor_timeout_s)
    path = status_socket_path(cfg)
    try:
        endpoint = StatusEndpoint(path, snapshot, on_error=LOG.warning).start()
    except OSError as e:
        LOG.warning(f"no status for `autopilot status`: {path}: {e}")
        return None
    LOG.info(f"status: {path} (`autopilot status --config {cfg.source_file or 'FILE'}`)")
    return endpoint


def _log_to_stderr() -> None:
    """The log to stderr through a writer thread (autopilot/runtime/console.py): a full pipe drops lines, it
    never stops the loop or the MAVLink thread."""
    if not LOG.handlers:
        from autopilot.runtime.console import ConsoleHandler, ConsoleWriter
        handler = ConsoleHandler(ConsoleWriter(sys.stderr))
        handler.setFormatter(logging.Formatter("[%(levelname)s] [%(created).3f] [autopilot]: %(message)s"))
        LOG.addHandler(handler)
        LOG.setLevel(logging.INFO)
        LOG.propagate = False


def run_boat_plain(cfg, vessel, mission, config_file: str = "", seed: int = 1, params=None,
                   allow_sim_calibration: bool = False) -> int:
    """The boat without ROS: the runtime's own wall-clock loop, MAVLink, the run log and systemd."""
    from autopilot.mavlink.server import MavlinkError
    from autopilot.runtime.boat_runtime import BoatRuntime
    from autopilot.runtime.health import HealthLog
    from autopilot.runtime.signals import StopOnSignal
    from autopilot.web.errors import WebError

    _log_to_stderr()
    stop = threading.Event()
    signals = StopOnSignal(stop)
    services = runtime = mav = page = endpoint = None
    try:
        services = make_services(cfg, vessel, mission, config_file)
        origin_ns, epoch_ns = time.monotonic_ns(), time.time_ns()
        try:
            runtime = BoatRuntime(cfg, vessel, mission, now_ns=time.monotonic_ns, origin_ns=origin_ns,
                                  epoch_of_origin_ns=epoch_ns, services=services, params=params, seed=seed,
                                  allow_sim_calibration=allow_sim_calibration)
        except startup_errors() as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        collect_before_loop()         # a full collection stops every thread: before the loop, not while it runs
        share_lock_with_loop(1.0 / vessel.control.loop_rate_hz)   # the rims' threads yield to the loop often
        runtime.start_loop()
        with runtime.lock:                # the loop is running: open the log between two cycles
            services.start_log()
        services._warn = LOG.warning
        try:
            mav = start_mavlink(cfg, runtime, services.log.run_dir if services.log is not None else None)
        except MavlinkError as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        try:
            page = start_web_page(cfg, runtime, services.log.run_dir if services.log is not None else None)
        except WebError as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        status = (f"autopilot up: vessel {vessel.name}, mission {mission.name!r}, backend {cfg.backend}, "
                  f"without ROS 2")
        LOG.info(status)
        if services.log is not None:
            LOG.info(f"run log: {services.log.run_dir}")
        endpoint = start_status_endpoint(cfg, runtime, services, mav, ros=False)
        services.ready(status)     # the backend's devices opened: READY=1 for systemd
        freeze_startup_heap()      # start-up objects live for the whole run: keep the collector off them
        health = HealthLog(runtime, cfg.ros.sensor_timeout_s, warn=LOG.warning, info=LOG.info)
        while not stop.wait(HEALTH_PERIOD_S):     # what the ROS diagnostics would show, as log lines
            with runtime.lock:
                health.check(runtime.now_s())
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        if runtime is not None:
            runtime.stop("stopping on request")     # neutral first, then the links and the log
        if endpoint is not None:
            endpoint.close()
        if mav is not None:
            mav.stop()
        if page is not None:
            page.stop()
        if runtime is not None:
            runtime.close()
        if services is not None:
            services.close()
        signals.close()
