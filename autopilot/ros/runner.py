"""One process, one executor: the nodes a boat config asks for, composed.

`BoatProcess(cfg, vessel, mission)` builds the autopilot node (with its backend), and the GNSS, IMU and
diagnostics nodes the config lists, all on ONE SingleThreadedExecutor (a Pi 4 has little CPU and memory to
spare; one thread also means no locking between the control loop and its publishers). In the composed process
the GNSS and IMU nodes publish the samples the autopilot node polled from the backend, so the control loop never
waits on DDS. `run_boat_on_ros()` is what `autopilot run` calls when the ROS 2 rim starts
(autopilot/runtime/boat_process.py decides): it spins until SIGINT/SIGTERM and always leaves the thrusters at neutral.
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, List, Optional, TypedDict, Union

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

from autopilot.ros.autopilot_node import AutopilotNode
from autopilot.ros.backends import make_backend
from autopilot.runtime.heap import collect_before_loop, freeze_startup_heap
from autopilot.runtime.interpreter_lock import share_lock_with_loop

if TYPE_CHECKING:
    from rclpy.guard_condition import GuardCondition

    from autopilot.ros.sensor_nodes import GnssNode, ImuNode

# The executor wakes for its timers and messages; with nothing to do it returns this often to check for a stop
# request. Each idle wake-up costs rclpy's executor a few hundred microseconds of Python, so it is long; a stop
# request wakes it at once through a guard condition (StopOnSignal).
IDLE_SPIN_S = 1.0


class _NodeKw(TypedDict, total=False):
    context: Context        # the ROS context of every node and the executor (absent: rclpy's default one)


class BoatProcess:
    """The boat runtime's ROS 2 nodes on one executor; `autopilot` is the node, `autopilot.runtime` the runtime.
    `backend_factory(node, time_base, frame)` overrides the boat config's backend."""

    def __init__(self, cfg, vessel, mission, context: Optional[Context] = None, config_file: str = "",
                 seed: int = 1, backend_factory=None, services=None, params=None,
                 allow_sim_calibration: bool = False):
        self.cfg = cfg
        self._wake_guard: Optional[GuardCondition] = None    # created by spin(); wake() triggers it
        self.context = context
        use_sim_time = cfg.backend == "gazebo"
        self.sensor_nodes: List[Union[GnssNode, ImuNode]] = []
        if backend_factory is None:
            def backend_factory(node, tb, frame):
                return make_backend(cfg, vessel, mission, frame, node, tb, seed=seed,
                                    allow_sim_calibration=allow_sim_calibration)
        kw: _NodeKw = {"context": context} if context is not None else {}
        self.autopilot = AutopilotNode(cfg, vessel, mission, backend_factory,
                                       use_sim_time=use_sim_time, config_file=config_file,
                                       on_batch=self._publish_sensors, services=services, params=params, **kw)
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
        self.web = None                      # the web page's server, once serve_web() started it

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
        if self.mavlink is None:
            from autopilot.runtime.boat_process import start_mavlink
            self.mavlink = start_mavlink(self.cfg, self.autopilot, upload_dir)

    def serve_web(self, upload_dir=None) -> None:
        """Serve the boat config's `web:` page (nothing without one, or without a password yet)."""
        if self.web is None:
            from autopilot.runtime.boat_process import start_web_page
            self.web = start_web_page(self.cfg, self.autopilot.runtime, upload_dir)

    def stop(self) -> None:
        """Neutral thrust first, then tear the nodes down."""
        self.autopilot.stop()
        if self.mavlink is not None:
            self.mavlink.stop()
        if self.web is not None:
            self.web.stop()
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


def run_boat_on_ros(cfg, vessel, mission, config_file: str = "", seed: int = 1, params=None,
                    allow_sim_calibration: bool = False) -> int:
    """`autopilot run` with the ROS 2 rim: spin the composed process until SIGINT/SIGTERM; thrusters neutral on
    the way out. Exit codes as autopilot.runtime.boat_process.run_boat_plain."""
    from autopilot.mavlink.server import MavlinkError
    from autopilot.runtime.boat_process import make_services, start_status_endpoint, startup_errors
    from autopilot.runtime.signals import StopOnSignal
    from autopilot.web.errors import WebError

    opts = _no_signal_handlers()
    rclpy.init(**({"signal_handler_options": opts} if opts is not None else {}))
    stop = threading.Event()
    signals = StopOnSignal(stop)
    proc = None
    services = None
    endpoint = None
    try:
        services = make_services(cfg, vessel, mission, config_file)
        collect_before_loop()    # BoatProcess starts the loop; a full collection stops every thread
        share_lock_with_loop(1.0 / vessel.control.loop_rate_hz)   # the rims' threads yield to the loop often
        try:
            proc = BoatProcess(cfg, vessel, mission, config_file=config_file, seed=seed, services=services,
                               params=params, allow_sim_calibration=allow_sim_calibration)
        except startup_errors() as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        with proc.autopilot.lock:                # the loop is running: open the log between two cycles
            services.start_log()
        log = proc.autopilot.get_logger()
        services._warn = log.warning
        try:
            run_dir = services.log.run_dir if services.log is not None else None
            proc.serve_mavlink(run_dir)
            proc.serve_web(run_dir)
        except (MavlinkError, WebError) as e:
            print(f"error: the boat could not start: {e}", file=sys.stderr)
            return 1
        status = (f"autopilot up: vessel {vessel.name}, mission {mission.name!r}, backend {cfg.backend}, "
                  f"nodes {', '.join(cfg.ros.nodes)}, namespace {cfg.ros.namespace or '/'}, "
                  f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')}")
        log.info(status)
        if services.log is not None:
            log.info(f"run log: {services.log.run_dir}")
        endpoint = start_status_endpoint(cfg, proc.autopilot.runtime, services, proc.mavlink, ros=True)
        services.ready(status)   # the backend's sensors opened in BoatProcess: READY=1 for systemd
        freeze_startup_heap()    # start-up objects live for the whole run: keep the collector from rescanning them
        signals.waker = proc.wake
        proc.spin(stop)
        return 0
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        if proc is not None:
            proc.stop()
        if endpoint is not None:
            endpoint.close()
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
