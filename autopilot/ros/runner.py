"""One process, one executor: the nodes a boat config asks for, composed.

`BoatProcess(cfg, vessel, mission)` builds the autopilot node (with its backend), and the GNSS, IMU and
diagnostics nodes the config lists, all on ONE SingleThreadedExecutor (a Pi 4 has little CPU and memory to
spare; one thread also means no locking between the control loop and its publishers). In the composed process
the GNSS and IMU nodes publish the samples the autopilot node polled from the backend, so the control loop never
waits on DDS. `run_boat()` is what `autopilot run` calls: it spins until SIGINT/SIGTERM and always leaves the
thrusters at neutral.
"""
from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional, TypedDict, Union

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from autopilot.ros.autopilot_node import AutopilotNode
from autopilot.ros.backends import make_backend

if TYPE_CHECKING:
    from rclpy.guard_condition import GuardCondition

    from autopilot.ros.sensor_nodes import GnssNode, ImuNode

# The executor wakes for its timers and messages; with nothing to do it returns this often to check for a stop
# request. Each idle wake-up costs rclpy's executor a few hundred microseconds of Python, so it is long; a stop
# request wakes it at once through a guard condition (StopOnSignal).
IDLE_SPIN_S = 1.0


class StopOnSignal:
    """SIGINT and SIGTERM set `stop` and call the waker at once.

    Python runs a signal handler only when the main thread is back in Python, not while it sits in the executor's
    wait; the C-level handler writes the signal number to the wakeup fd immediately, so a small thread reading it
    does the waking (the Python handler, when it runs later, only sets `stop` again)."""

    def __init__(self, stop: threading.Event):
        self.stop = stop
        self.waker: Optional[Callable[[], None]] = None
        self._r, self._w = socket.socketpair()
        self._w.setblocking(False)
        signal.set_wakeup_fd(self._w.fileno(), warn_on_full_buffer=False)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        threading.Thread(target=self._watch, name="signal-wake", daemon=True).start()

    def _on_signal(self, signum, frame) -> None:
        self.stop.set()

    def _watch(self) -> None:
        while True:
            try:
                if not self._r.recv(64):
                    return
            except OSError:
                return
            self.stop.set()
            waker = self.waker
            if waker is not None:
                waker()

    def close(self) -> None:
        signal.set_wakeup_fd(-1)
        self._w.close()
        self._r.close()


class _NodeKw(TypedDict, total=False):
    context: Context        # the ROS context of every node and the executor (absent: rclpy's default one)


class BoatProcess:
    def __init__(self, cfg, vessel, mission, context: Optional[Context] = None, config_file: str = "",
                 seed: int = 1, backend_factory=None, services=None, params=None):
        self.cfg = cfg
        self._wake_guard: Optional[GuardCondition] = None    # created by spin(); wake() triggers it
        self.context = context
        use_sim_time = cfg.backend == "gazebo"
        self.sensor_nodes: List[Union[GnssNode, ImuNode]] = []
        if backend_factory is None:
            def backend_factory(node, tb):
                return make_backend(cfg, vessel, mission, node.autopilot.frame, node, tb, seed=seed)
        kw: _NodeKw = {"context": context} if context is not None else {}
        self.autopilot = AutopilotNode(cfg, vessel, mission, backend_factory,
                                       use_sim_time=use_sim_time, config_file=config_file,
                                       on_batch=self._publish_sensors,
                                       on_cycle=services.on_cycle if services is not None else None,
                                       on_event=services.on_event if services is not None else None,
                                       params=params, **kw)
        if services is not None:
            services.applied_thrust_fn = self.autopilot.applied_thrust_n     # read only when a log row is due
            services.estimator = self.autopilot.autopilot.estimator          # its inputs are logged for replay
            if not use_sim_time:         # stamps in run.mcap = the published ones (wall-clock ROS time)
                services.time_offset_ns = self.autopilot.tb.origin_ns
            core = self.autopilot.autopilot
            services.path_fn = lambda: (core.guidance.waypoints_ned,
                                        core.start_point_ned() if hasattr(core, "start_point_ned") else None)
        tb = self.autopilot.tb
        nodes = set(cfg.ros.nodes)
        if "gnss" in nodes:
            from autopilot.ros.sensor_nodes import GnssNode
            self.sensor_nodes.append(GnssNode(cfg, vessel, tb, **kw))
        if "imu" in nodes:
            from autopilot.ros.sensor_nodes import ImuNode
            self.sensor_nodes.append(ImuNode(cfg, vessel, tb, **kw))
        self.diagnostics = None
        if "diagnostics" in nodes:
            from autopilot.ros.diagnostics_node import DiagnosticsNode
            self.diagnostics = DiagnosticsNode(cfg, self.autopilot, use_sim_time=use_sim_time, **kw)
        self.executor = SingleThreadedExecutor(**kw)
        for n in self.nodes:
            self.executor.add_node(n)
        self.mavlink = None                  # the MAVLink server, once serve_mavlink() started it

    @property
    def nodes(self) -> list:
        return [self.autopilot] + self.sensor_nodes + ([self.diagnostics] if self.diagnostics else [])

    def _publish_sensors(self, batch) -> None:
        for n in self.sensor_nodes:
            n.publish_batch(batch)

    def spin(self, stop_event: Optional[threading.Event] = None) -> None:
        """Spin until the context shuts down or `stop_event` is set. Call `wake()` after setting the event from
        another thread: the executor otherwise notices only at its next event or after IDLE_SPIN_S."""
        if self._wake_guard is None:
            self._wake_guard = self.autopilot.create_guard_condition(lambda: None)
        while (self.context is None and rclpy.ok()) or (self.context is not None and self.context.ok()):
            if stop_event is not None and stop_event.is_set():
                break
            self.executor.spin_once(timeout_sec=IDLE_SPIN_S)

    def wake(self) -> None:
        """Make a spin_once waiting in `spin()` return now (thread-safe)."""
        if self._wake_guard is not None:
            self._wake_guard.trigger()

    def serve_mavlink(self, upload_dir=None) -> None:
        """Serve the boat config's `mavlink:` links (nothing when it has none); uploads are kept in upload_dir."""
        if self.cfg.mavlink is not None and self.mavlink is None:
            self.mavlink = start_mavlink(self.cfg, self.autopilot, upload_dir)

    def stop(self) -> None:
        """Neutral thrust first, then tear the nodes down."""
        self.autopilot.stop()
        if self.mavlink is not None:
            self.mavlink.stop()
        # let the neutral commands leave before the publishers are destroyed
        for _ in range(3):
            try:
                self.executor.spin_once(timeout_sec=0.01)
            except Exception:
                break
        for n in self.nodes:
            self.executor.remove_node(n)
            n.destroy_node()
        self.executor.shutdown()


@contextmanager
def own_context() -> Iterator[Context]:
    """An rclpy context of the caller's own (a bench or tool beside other ROS users in one process), shut down
    on leaving; no signal handlers are installed for it."""
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        if ctx.ok():
            rclpy.shutdown(context=ctx)


def start_mavlink(cfg, node: AutopilotNode, upload_dir=None):
    """Serve the boat config's `mavlink:` links for `node`: commands go to its OperatorDesk, run by its control
    loop between cycles. MavlinkError when no link opens or the signing key is unusable."""
    from pathlib import Path

    from autopilot.mavlink.server import LoopCalls, MavlinkServer, read_signing_key
    key_path = cfg.signing_key_path()
    key = read_signing_key(key_path) if key_path is not None else None
    node.loop_calls = LoopCalls()
    return MavlinkServer(cfg.mavlink, node.desk, node.loop_calls, signing_key=key,
                         upload_dir=Path(upload_dir) if upload_dir else None).start()


def _startup_errors() -> tuple:
    """What a device that does not open raises; each carries a message saying what to do."""
    from drivers.esc.contract import EscError
    from drivers.esc.deadman import DeadmanError
    from drivers.gnss.l76k import GnssLinkError
    from drivers.gnss.l76k_commands import GnssSetupError
    from drivers.lsm9ds1 import ImuError
    return (EscError, DeadmanError, GnssLinkError, GnssSetupError, ImuError, OSError)


STARTUP_ERRORS = _startup_errors()


def run_boat(cfg, vessel, mission, config_file: str = "", seed: int = 1, params=None) -> int:
    """`autopilot run`: spin the composed process until SIGINT/SIGTERM; thrusters neutral on the way out."""
    opts = _no_signal_handlers()
    rclpy.init(**({"signal_handler_options": opts} if opts is not None else {}))
    stop = threading.Event()
    signals = StopOnSignal(stop)
    proc = None
    services = None
    try:
        from autopilot.guidance.path_following import mission_frame
        from autopilot.runtime.field_services import FieldServices
        lc = cfg.logging
        services = FieldServices(vessel, mission, mission_frame(mission), log_dir=cfg.log_directory(),
                                 log_rate_hz=lc.rate_hz, keep_runs=lc.keep_runs, max_total_mb=lc.max_total_mb,
                                 extra_files=[config_file] if config_file else (), ros=cfg.ros)
        try:
            proc = BoatProcess(cfg, vessel, mission, config_file=config_file, seed=seed, services=services,
                               params=params)
        except STARTUP_ERRORS as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        with proc.autopilot.lock:                # the loop is running: open the log between two cycles
            services.start_log()
        log = proc.autopilot.get_logger()
        services._warn = log.warning
        from autopilot.mavlink.server import MavlinkError
        try:
            proc.serve_mavlink(services.log.run_dir if services.log is not None else None)
        except MavlinkError as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        status = (f"autopilot up: vessel {vessel.name}, mission {mission.name!r}, backend {cfg.backend}, "
                  f"nodes {', '.join(cfg.ros.nodes)}, namespace {cfg.ros.namespace or '/'}, "
                  f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}")
        log.info(status)
        if services.log is not None:
            log.info(f"run log: {services.log.run_dir}")
        services.ready(status)   # the backend's sensors opened in BoatProcess: READY=1 for systemd
        gc.collect()
        gc.freeze()         # start-up objects live for the whole run: keep the collector from rescanning them
        signals.waker = proc.wake
        proc.spin(stop)
        return 0
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        if proc is not None:
            proc.stop()
        if services is not None:
            services.close()
        if rclpy.ok():
            rclpy.shutdown()
        signals.close()


def _no_signal_handlers():
    """rclpy's own SIGINT handler would shut the context down before we send neutral; we install ours."""
    try:
        from rclpy.signals import SignalHandlerOptions
        return SignalHandlerOptions.NO
    except ImportError:
        return None
