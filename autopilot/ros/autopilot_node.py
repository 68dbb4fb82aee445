"""The autopilot node: the ROS 2 rim around the boat runtime (autopilot/runtime/boat_runtime.py).

The runtime owns the core, the backend, the operator desk and the control loop; this node observes its cycles
and events and publishes them, and hands ROS commands to its desk under the runtime's lock. Time is the node's
ROS clock (wall time on the boat, /clock under use_sim_time), mapped to small core seconds by a TimeBase taken
at start. Cycle timing:
- wall clock: the runtime's control-loop thread (not an rclpy timer) on a fixed grid at the vessel's loop rate;
  the executor wakes only for commands and the 1 Hz diagnostics.
- sim time: cycles sit on a grid of the loop period in simulated time and run as soon as /clock reaches the next
  grid point (a simulator publishes a step's sensors, then its clock), so a cycle consumes the step's samples.
- /clock silent for `gazebo.clock_timeout_s` of wall time (a HIL link outage, a stopped simulator): thrusters to
  neutral at once and a `[clock] time source lost` event. When /clock returns, the jump is accepted explicitly
  (Autopilot.clock_jump: an event with its size, the estimator predicts across it with the thrust unknown; a
  jump over `clock_jump_s` takes the IMU-loss action as one clock-jump failsafe instead of lost-sensor failsafes).

Published (names from the boat config, relative to the namespace), all reliable with a small depth
(autopilot/ros/qos.py: derived), so default-QoS subscribers get them:
- thrusters/{name}/thrust std_msgs/Float64 [N] and thrusters/{name}/pulse_us std_msgs/UInt16 [us] at the state
  rate (the backend's actuators get every cycle) and at once on stop (0 N, neutral pulse);
- odometry/filtered nav_msgs/Odometry (pose in odom ENU, twist in base_link FLU), gnss/filtered NavSatFix;
- guidance/path nav_msgs/Path (latched, and republished every LATCHED_REPUBLISH_S); desired and estimated
  heading [deg, compass] and speed [m/s], cross-track error [m], waypoint index: plottable std_msgs;
- autopilot/state std_msgs/String JSON (latched) and autopilot/events std_msgs/String;
- map -> odom -> base_link on /tf and base_link -> gnss_link / imu_link on /tf_static as tf2_msgs/TFMessage
  (autopilot/ros/tf_publisher.py, no tf2_ros) when tf2_msgs is importable and publish_tf is set.
Topics, types, QoS, frames, rates and units: autopilot/ros/interface.py (docs/reference/ros.md).
Commands: autopilot/arm (std_srvs/SetBool), autopilot/hold (std_srvs/Trigger), autopilot/command (std_msgs/String:
`arm`, `disarm`, `mode NAME`, `mission PATH`, `heartbeat` (the operator's station is alive, for the link-loss
failsafe), `manual THROTTLE STEERING` (MANUAL, each in -1..1; also a heartbeat), `joystick NODE` (signed: which
publisher's sensor_msgs/Joy is the operator's gamepad, pinned by its DDS gid)), each checked and answered by
autopilot/commands/desk.py. On stop (shutdown, SIGTERM, exception) the thrusters go to neutral and 0 N / neutral
pulses are published. Why: docs/design-notes/simulator-and-rims.md, "ROS".
"""
from __future__ import annotations

import json
import math
import threading
import time
from typing import Callable, Optional

from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Float64, Int32, String, UInt16
from std_srvs.srv import SetBool, Trigger

from autopilot.files.boat import BoatConfig, resolve_topic
from autopilot.ros import frames, messages
from autopilot.ros.interface import BY_KEY
from autopilot.ros.messages import TimeBase
from autopilot.ros.qos import command_qos, qos_for, quiet_publisher, quiet_subscription, sensor_qos
from autopilot.ros.tf_publisher import TfPublisher, odometry_transforms, static_transforms
from autopilot.runtime.boat_runtime import BoatRuntime
from autopilot.vocab.modes import ModeName

LATCHED_REPUBLISH_S = 5.0     # the mission path again, for subscribers that joined late without transient local


def _locked(method):
    """Run a command method under the node's lock (the control loop steps the core in its own thread)."""
    def wrapper(self, *args, **kwargs):
        with self.lock:
            return method(self, *args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    return wrapper


# what the graph names a publisher whose endpoint DDS has discovered before its node's name (rmw's placeholder)
UNKNOWN_NODE_NAME = "_NODE_NAME_UNKNOWN_"

def _with_info(callback):
    """A subscription callback that gets (msg, message info) where rclpy gives the publisher's gid (Iron and
    later), else (msg, None): who sent a message is then unknown."""
    try:
        from rclpy.subscription import MessageInfo  # noqa: F401
    except ImportError:
        return lambda msg: callback(msg, None)
    return lambda msg, info: callback(msg, info)


class AutopilotNode(Node):
    """Runs the autopilot core for one boat config; the backend is made by `backend_factory(node, time_base)`."""

    def __init__(self, cfg: BoatConfig, vessel, mission, backend_factory: Callable,
                 use_sim_time: bool = False, config_file: str = "", on_batch: Optional[Callable] = None,
                 autopilot_factory: Optional[Callable] = None, context=None, services=None, params=None,
                 allow_sim_calibration: bool = False):
        ros = cfg.ros
        super().__init__(ros.node_prefix, namespace=ros.namespace or None, context=context,
                         parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, use_sim_time)])
        self.cfg = cfg
        self.vessel = vessel
        self.use_sim_time = use_sim_time
        self._clock_watch: Optional[threading.Thread] = None
        self._loop_stop = threading.Event()       # the clock watch's (the runtime has its own for the loop)
        # Parameters come from the YAML files; they are declared read-only so `ros2 param` shows where they came
        # from, never as a second copy to edit.
        for name, value in (("config_file", config_file), ("vessel_file", vessel.source_file),
                            ("mission_file", mission.source_file), ("backend", cfg.backend),
                            ("loop_rate_hz", float(vessel.control.loop_rate_hz))):
            self.declare_parameter(name, value)
        self.tb = TimeBase(0 if use_sim_time else self.get_clock().now().nanoseconds)
        self._events_pub = None
        self.thrust_pubs: list = []
        self.pulse_pubs: list = []
        self._on_batch = on_batch
        self._cycles_seen = 0
        clock = self.get_clock()
        # the runtime (core, backend, desk, loop) with this node as an observer of its cycles and events
        self.runtime = BoatRuntime(cfg, vessel, mission, now_ns=lambda: clock.now().nanoseconds,
                                   origin_ns=self.tb.origin_ns,
                                   epoch_of_origin_ns=None if use_sim_time else self.tb.origin_ns,
                                   backend_factory=lambda rt: backend_factory(self, self.tb, rt.frame),
                                   services=services, params=params, log=self.get_logger(), observers=[self],
                                   autopilot_factory=autopilot_factory,
                                   allow_sim_calibration=allow_sim_calibration)
        self.runtime.keep_running = lambda: self.context.ok()
        self.params = params
        self.period_s = self.runtime.period_s
        self._next_due: Optional[float] = None
        self._state_every = max(1, int(round(vessel.control.loop_rate_hz / ros.state_rate_hz)))
        self._last_state_json = ""

        t, ns = ros.topics, ros.namespace
        self.topic = lambda name: resolve_topic(ns, name)
        depth = ros.qos.command_depth
        q = lambda key: qos_for(BY_KEY[key].qos, ros)       # noqa: E731 -- QoS from the interface table
        names = [th.name for th in vessel.thrusters]
        self.thrust_pubs = [quiet_publisher(self, Float64, t.thrust_topic(n), q("thrust")) for n in names]
        self.pulse_pubs = [quiet_publisher(self, UInt16, t.pulse_topic(n), q("pulse")) for n in names]
        self.odom_pub = quiet_publisher(self, Odometry, t.odometry, q("odometry"))
        self.fix_pub = quiet_publisher(self, NavSatFix, t.filtered_fix, q("filtered_fix"))
        self.path_pub = quiet_publisher(self, Path, t.path, q("path"))
        self._path_every = max(1, int(round(vessel.control.loop_rate_hz * LATCHED_REPUBLISH_S)))
        self.plot_pubs = {key: quiet_publisher(self, Float64, getattr(t, key), q(key))
                          for key in ("desired_heading", "heading", "desired_yaw", "yaw", "desired_speed", "speed",
                                      "cross_track_error")}
        self.wp_pub = quiet_publisher(self, Int32, t.waypoint_index, q("waypoint_index"))
        self.state_pub = quiet_publisher(self, String, t.state, q("state"))
        self._events_pub = quiet_publisher(self, String, t.events, q("events"))
        self.create_service(SetBool, t.arm, self._srv_arm)
        self.create_service(Trigger, t.hold, self._srv_hold)
        self.gate = self._command_gate(cfg)
        self._sender_names: dict = {}         # publisher gid -> node name, refreshed on a miss
        self._joy_refused: set = set()       # (what, node) already told off
        self._joy_gids: dict = {}            # publisher gid -> node name: the gamepad streams bound by the operator
        quiet_subscription(self, String, t.command, _with_info(self._on_command), command_qos(depth))
        if t.joystick:
            from sensor_msgs.msg import Joy
            quiet_subscription(self, Joy, t.joystick, _with_info(self._on_joy), sensor_qos(ros.qos.sensor_depth))
        if t.cmd_vel:       # best effort: it matches a teleop publisher of either reliability
            from geometry_msgs.msg import Twist
            quiet_subscription(self, Twist, t.cmd_vel, _with_info(self._on_cmd_vel), sensor_qos(ros.qos.sensor_depth))
        if t.goal:          # reliable, as RViz's and nav2's goal publishers are
            from geometry_msgs.msg import PoseStamped
            quiet_subscription(self, PoseStamped, t.goal, _with_info(self._on_goal), command_qos(depth))

        self._tf = None
        if ros.publish_tf:
            self._tf = TfPublisher.create(self, ros)
            if self._tf is None:
                self.get_logger().info("tf2_msgs is not installed (scripts/build_tf2_msgs.sh builds it): /tf and "
                                       "/tf_static are not broadcast (Odometry still carries the pose)")
            else:
                self._tf.send_static(self._static_transforms())

        self._clock_t: Optional[float] = None           # core time of the latest /clock
        self._clock_wall: Optional[float] = None        # time.monotonic() when it came
        self._clock_lost = False
        self._clock_went_back = False    # a simulator reset was seen and said (see _on_clock)
        if use_sim_time:
            from dataclasses import MISSING

            from rosgraph_msgs.msg import Clock

            from autopilot.files.boat import GazeboConfig
            clock_topic = cfg.gazebo.clock_topic if cfg.gazebo is not None else "/clock"
            defaults = GazeboConfig.__dataclass_fields__
            timeout_default, jump_default = defaults["clock_timeout_s"].default, defaults["clock_jump_s"].default
            assert timeout_default is not MISSING and jump_default is not MISSING   # GazeboConfig defaults both
            self.clock_timeout_s = (cfg.gazebo.clock_timeout_s if cfg.gazebo is not None
                                    else timeout_default)
            self.clock_jump_s = cfg.gazebo.clock_jump_s if cfg.gazebo is not None else jump_default
            # created after the backend's sensor subscriptions, so a wait that finds both handles the samples first
            quiet_subscription(self, Clock, clock_topic, self._on_clock, command_qos(10))
        self.publish_path()
        self._publish_state(force=True)
        if not use_sim_time:
            self.runtime.start_loop()
        else:
            self._clock_watch = threading.Thread(target=self._watch_clock, name="clock-watch", daemon=True)
            self._clock_watch.start()

    # ------------------------------------------------------------------ time and the cycle
    def now_s(self) -> float:
        return self.tb.from_ns(self.get_clock().now().nanoseconds)

    def _watch_clock(self) -> None:
        """Sim time: /clock silent for clock_timeout_s of wall time is a lost time source (see the module doc)."""
        while not self._loop_stop.wait(self.clock_timeout_s / 5.0):
            if self._clock_wall is None or self._clock_lost:
                continue
            silent = time.monotonic() - self._clock_wall
            if silent <= self.clock_timeout_s:
                continue
            with self.lock:
                if (self.runtime.stopped or self._clock_lost
                        or time.monotonic() - self._clock_wall <= self.clock_timeout_s):
                    continue
                self._clock_lost = True
                try:
                    self.runtime.neutral_outputs()
                    lost = getattr(self.autopilot, "clock_lost", None)
                    if lost is not None:
                        lost(self._clock_t, silent)
                except Exception as e:      # the context went down under us
                    if not self.context.ok():
                        return
                    self.get_logger().error(f"clock watch: {e!r}")

    def _on_clock(self, msg) -> None:
        note = getattr(self.backend, "clock_received", None)
        if note is not None:             # a HIL backend counts /clock messages for the link's loss figures
            note(msg.clock.sec * 1_000_000_000 + msg.clock.nanosec)
        t = self.tb.from_stamp(msg.clock)
        now = time.monotonic()
        with self.lock:
            prev_t, prev_wall = self._clock_t, self._clock_wall
            if prev_t is not None and t < prev_t - 1e-9:
                # an old /clock overtaken by a newer one (a link that reorders) is dropped; time going back by more
                # than a jump (a simulator reset) cannot be followed: neutral, disarmed and said once, then a
                # silent time source until its time passes ours again
                if prev_t - t > self.clock_jump_s and not self._clock_went_back:
                    self._clock_went_back = self._clock_lost = True
                    try:
                        self.runtime.neutral_outputs()
                        went_back = getattr(self.autopilot, "clock_went_back", None)
                        if went_back is not None:
                            went_back(prev_t, t)
                    except Exception as e:      # a backend fault must not kill the clock callback
                        self.get_logger().error(f"clock went back: {e!r}")
                return
            self._clock_t, self._clock_wall = t, now
            self._clock_went_back = False
            if self._clock_lost or (prev_t is not None and t - prev_t > self.clock_jump_s):
                self._clock_lost = False
                jump = getattr(self.autopilot, "clock_jump", None)
                if jump is not None:
                    assert prev_wall is not None    # a clock lost or jumping had come before: prev_t, prev_wall set
                    jump(prev_t, t, self.clock_jump_s, now - prev_wall)
        if self._next_due is None:
            self._next_due = math.ceil(t / self.period_s - 1e-6) * self.period_s
        if t + 1e-9 < self._next_due:
            return
        with self.lock:
            self.run_cycle(t)
        self._next_due = (math.floor(t / self.period_s + 1e-6) + 1) * self.period_s

    def run_cycle(self, t_s: float) -> None:
        """One control cycle at core time t_s (simulated time: from /clock). Never raises."""
        self.runtime.run_cycle(t_s)

    def cycle_done(self, t_s: float, batch, result) -> None:
        """The runtime's observer: the sensor nodes' samples, and what observers plot at the state rate."""
        self._cycles_seen += 1
        if self._on_batch is not None:
            self._on_batch(batch)
        if self._cycles_seen % self._state_every == 0:
            self._publish_outputs(result)
        if self._cycles_seen % self._path_every == 0:      # latched, and again for volatile late joiners
            self.publish_path()

    def _publish_outputs(self, result) -> None:
        """What observers plot and record, at the state rate (the actuators themselves get every cycle)."""
        for pub, f in zip(self.thrust_pubs, result.thrust.thrust_n):
            pub.publish(Float64(data=float(f)))
        for pub, p in zip(self.pulse_pubs, result.pulses.pulse_us):
            pub.publish(UInt16(data=int(p)))
        nav, sp = result.nav, result.setpoint
        fr = self.cfg.ros.frames
        health = self._estimator_health(result.time_s)
        odom = None
        if nav.valid:               # no estimate, no message: consumers must not see a made-up pose
            odom = messages.nav_state_to_odometry(nav, fr.odom, fr.base_link, self.tb,
                                                  speed_std_mps=getattr(health, "velocity_std_mps", None))
            self.odom_pub.publish(odom)
            self.fix_pub.publish(messages.nav_state_to_navsatfix(nav, self.frame, fr.base_link, self.tb))
        self.plot_pubs["heading"].publish(Float64(data=math.degrees(nav.heading_rad) % 360.0))
        self.plot_pubs["yaw"].publish(Float64(data=frames.heading_to_enu_yaw(nav.heading_rad)))
        self.plot_pubs["speed"].publish(Float64(data=float(nav.surge_mps)))
        if sp is not None:
            self.plot_pubs["desired_heading"].publish(Float64(data=math.degrees(sp.heading_rad) % 360.0))
            self.plot_pubs["desired_yaw"].publish(Float64(data=frames.heading_to_enu_yaw(sp.heading_rad)))
            self.plot_pubs["desired_speed"].publish(Float64(data=float(sp.speed_mps)))
            self.plot_pubs["cross_track_error"].publish(Float64(data=float(sp.xte_m)))
        self.wp_pub.publish(Int32(data=int(self._guidance().index)))
        if self._tf is not None and odom is not None:
            self._tf.send(odometry_transforms(odom, fr.map))
        self._publish_state()

    def _static_transforms(self) -> list:
        """base_link -> gnss_link and imu_link from the vessel file's sensor placement (TransformStamped)."""
        return static_transforms(self.get_clock().now().to_msg(),
                                 frames.sensor_transforms(self.vessel, self.cfg.ros.frames))

    def _guidance(self):
        return self.autopilot.guidance

    def _estimator_health(self, t_s: float):
        return self.runtime.estimator_health(t_s)

    def state_dict(self) -> dict:
        return self.runtime.state_dict()

    def _publish_state(self, force: bool = False) -> None:
        d = self.state_dict()
        key = json.dumps({k: v for k, v in d.items() if k != "time_s"}, sort_keys=True)
        if force or key != self._last_state_json or self.stats.cycles % (self._state_every * 10) == 0:
            self._last_state_json = key
            self.state_pub.publish(String(data=json.dumps(d, sort_keys=True)))

    def publish_path(self) -> None:
        g = self._guidance()
        start = self.autopilot.start_point_ned() if hasattr(self.autopilot, "start_point_ned") else None
        self.path_pub.publish(messages.mission_to_path(g.waypoints_ned, self.cfg.ros.frames.odom, self.tb,
                                                       self.now_s(), start_ned=start))

    # ------------------------------------------------------------------ commands
    def core_event(self, ev) -> None:
        """The runtime's observer: each core event on the events topic (the runtime has logged it)."""
        if self._events_pub is not None:
            self._events_pub.publish(String(data=f"[{ev.kind}] {ev.message}"))

    def desk_event(self, text: str, error: bool = False) -> None:
        """The runtime's observer: each operator-desk answer on the events topic (the runtime has logged it)."""
        if self._events_pub is not None:
            self._events_pub.publish(String(data=text))

    def _event(self, text: str, error: bool = False) -> None:
        """An answer of this rim's own (a refused joystick node): logged and on the events topic."""
        if error:       # rclpy ties a severity to each logging call site: one call per severity
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)
        self.desk_event(text, error)

    def mission_loaded(self) -> None:
        """The runtime's observer: a new mission's path and the state, at once."""
        self.publish_path()
        self._publish_state(force=True)

    @_locked
    def arm(self) -> tuple[bool, str]:
        a = self.desk.arm("a caller of AutopilotNode.arm")
        self._publish_state(force=True)
        return a.ok, a.text

    @_locked
    def disarm(self, reason: str) -> tuple[bool, str]:
        a = self.desk.disarm(reason, "a caller of AutopilotNode.disarm")
        self._publish_state(force=True)
        return a.ok, a.text

    @_locked
    def set_mode(self, name: str, reason: str) -> tuple[bool, str]:
        a = self.desk.set_mode(name, "a caller of AutopilotNode.set_mode", reason)
        return a.ok, a.text

    def load_mission_file(self, path: str) -> tuple[bool, str]:
        """Load a mission (YAML, QGC WPL 110 or .plan) by path; refused, with every reason, if it fails its
        checks or lies outside the mission folders. Read and checked outside the lock; swapped in under it."""
        load = self.desk.prepare_mission_file(path)
        with self.lock:
            a = self.desk.swap_mission(load, "a caller of AutopilotNode.load_mission_file")
        return a.ok, a.text

    def _srv_arm(self, request, response):
        with self.lock:
            origin = "a caller of the arm service"
            if request.data and self.gate.auth != "off":
                a = self.desk.refuse("arming refused: the arm service cannot carry a signature and commands.auth "
                                     "is token; use `autopilot command --config FILE arm`", origin)
            else:
                a = self.desk.arm(origin) if request.data else self.desk.disarm("disarm requested over ROS", origin)
            self._publish_state(force=True)
        response.success, response.message = a.ok, f"{a.text} (from {origin})"
        return response

    def _srv_hold(self, request, response):
        with self.lock:
            a = self.desk.set_mode(ModeName.HOLD, "a caller of the hold service", "hold requested over ROS")
        response.success, response.message = a.ok, a.text
        return response

    # ------------------------------------------------------------------ who commands
    def _command_gate(self, cfg: BoatConfig):
        from autopilot.commands.auth import CommandGate, TokenError, read_token
        c = cfg.commands
        token, problem = None, ""
        if c.auth == "token":
            try:
                token = read_token(cfg.token_path())
            except TokenError as e:
                problem = str(e)
                self.get_logger().warning(f"commands: {problem}; only disarm and mode HOLD will be obeyed")
        else:
            self.get_logger().warning("commands.auth is off: anyone on this ROS domain can arm and steer the boat")
        nonce_file = None
        if c.auth == "token":       # used signatures outlive a restart (auth.py): beside the token, as private
            tp = cfg.token_path()
            nonce_file = tp.with_name(tp.name + ".nonces")
        gate = CommandGate(auth=c.auth, token=token, allowed_nodes=c.allowed_nodes, max_age_s=c.max_age_s,
                           nonce_file=nonce_file, on_problem=self.get_logger().warning)
        gate.token_problem = problem
        return gate

    def _sender_node(self, info, topic: str) -> Optional[str]:
        """The full name of the node that published a message, from its publisher gid (None if unknown)."""
        gid = ((info or {}).get("publisher_gid") or {}).get("data")
        if not gid:
            return None
        gid = bytes(gid)
        if gid not in self._sender_names:
            for e in self.get_publishers_info_by_topic(self.topic(topic)):
                if e.node_name == UNKNOWN_NODE_NAME:
                    continue        # its endpoint is discovered but not yet its node: ask again next message
                ns = e.node_namespace.rstrip("/")
                self._sender_names[bytes(e.endpoint_gid)[:len(gid)]] = f"{ns}/{e.node_name}"
        return self._sender_names.get(gid)

    def _on_command(self, msg: String, info=None) -> None:
        with self.lock:
            sender = self._sender_node(info, self.cfg.ros.topics.command)
            adm = self.gate.admit(msg.data, sender)
        # a 'mission PATH' is read and checked outside the lock (a large fence takes a while); only the swap
        # holds up the loop
        load = None
        if adm.command is not None and adm.command.split(maxsplit=1)[:1] != ["joystick"]:
            load = self.desk.prepare_text(adm.command)
        with self.lock:
            if adm.command is None:
                self.desk.refuse(adm.reason, adm.origin)
            elif adm.command.split(maxsplit=1)[:1] == ["joystick"] and self.cfg.ros.topics.joystick:
                self._bind_joystick(adm.command.split(maxsplit=1)[1:], adm.origin)
            else:
                self.desk.text(adm.command, adm.origin, load)
            self._publish_state()

    def _bind_joystick(self, args: list, origin: str) -> None:
        """`joystick NODE` (a signed command): from now on the gamepad stream is the sensor_msgs/Joy of the one
        publisher on the joystick topic that the ROS graph names NODE ('/ns/name', or a bare name in any
        namespace), which must also be in commands.joystick_nodes. What is pinned is its publisher gid, which
        DDS gives every endpoint and no other node shares: a node that merely calls itself NODE later, or
        beside it, drives nothing. Refused when no publisher, or more than one, has that name (then one of them
        is not the operator's: stop it and bind again). `joystick off` unbinds."""
        from autopilot.commands.auth import node_allowed
        from autopilot.commands.limits import clip
        want = args[0].strip() if args else ""
        if want == "off":
            self._joy_gids.clear()
            self.desk.log(f"joystick unbound: no gamepad stream drives now (from {origin})")
            return
        if not want or " " in want:
            self.desk.refuse(f"joystick {clip(want, 80)!r} refused: expected 'joystick NODE' (the joy node's name, "
                             f"e.g. /boat/joy_node) or 'joystick off'", origin)
            return
        if not node_allowed(want, self.cfg.commands.joystick_nodes or ("",)):
            self.desk.refuse(f"joystick {clip(want, 80)} refused: not in commands.joystick_nodes", origin)
            return
        found = {}
        for e in self.get_publishers_info_by_topic(self.topic(self.cfg.ros.topics.joystick)):
            if e.node_name == UNKNOWN_NODE_NAME:
                continue
            name = f"{e.node_namespace.rstrip('/')}/{e.node_name}"
            if node_allowed(name, (want,)):
                found[bytes(e.endpoint_gid)] = name
        if len(found) != 1:
            why = "no node of that name publishes" if not found else \
                f"{len(found)} publishers are named so (one is not yours: stop it and bind again)"
            self.desk.refuse(f"joystick {clip(want, 80)} refused: {why} on {self.topic(self.cfg.ros.topics.joystick)}",
                             origin)
            return
        self._joy_gids = dict(found)
        self._joy_refused.clear()
        (gid, name), = found.items()
        self.desk.log(f"joystick bound: the gamepad stream is {name}'s publisher {gid[:8].hex()} (from {origin})")

    def _joy_sender(self, info) -> tuple:
        """(bound, node name) of a Joy message's publisher: bound when its gid is one the operator bound."""
        gid = ((info or {}).get("publisher_gid") or {}).get("data")
        if gid:
            gid = bytes(gid)
            for pinned, name in self._joy_gids.items():
                if pinned[:len(gid)] == gid:
                    return True, name
        return False, self._sender_node(info, self.cfg.ros.topics.joystick)

    def _stick_sender_allowed(self, sender: Optional[str], what: str) -> bool:
        """With commands.auth on, only nodes in commands.joystick_nodes may drive; each refused node is said
        once."""
        if self.gate.auth == "off":
            return True
        from autopilot.commands.auth import node_allowed
        if node_allowed(sender, self.cfg.commands.joystick_nodes or ("",)):
            return True
        if (what, sender) not in self._joy_refused:
            self._joy_refused.add((what, sender))
            self._event(f"refused: {what} from node {sender or '(unknown)'}: not in commands.joystick_nodes",
                        error=True)
        return False

    def _on_cmd_vel(self, msg, info=None) -> None:
        """geometry_msgs/Twist in the body frame (REP-103 FLU): linear.x is VELOCITY's surge speed, angular.z
        its yaw rate counter-clockwise, so the autopilot's starboard-positive rate is -angular.z; in GUIDED the
        same is its body velocity target. Outside VELOCITY and GUIDED it is refused (the desk says so once per
        stream, not per message)."""
        sender = self._sender_node(info, self.cfg.ros.topics.cmd_vel)
        if not self._stick_sender_allowed(sender, "cmd_vel"):
            return
        with self.lock:
            self.desk.velocity(float(msg.linear.x), -float(msg.angular.z), f"cmd_vel node {sender or '(unknown)'}")

    def _on_goal(self, msg, info=None) -> None:
        """geometry_msgs/PoseStamped: GUIDED's position target. header.frame_id must be frames.map or frames.odom
        (ENU, REP-105; the node publishes map -> odom as identity and odom's origin is the mission's), so x is
        east and y north [m] of the mission origin; the orientation is not used (the boat arrives on the line it
        ran). Refused, with the reason on the events topic, outside GUIDED, in another frame, for values that are
        not finite numbers, outside the geofence; with commands.auth on, from a node not in commands.goal_nodes."""
        sender = self._sender_node(info, self.cfg.ros.topics.goal)
        origin = f"goal node {sender or '(unknown)'}"
        if self.gate.auth != "off":
            from autopilot.commands.auth import node_allowed
            if not node_allowed(sender, self.cfg.commands.goal_nodes or ("",)):
                with self.lock:
                    self.desk.refuse(f"goal from node {sender or '(unknown)'} refused: not in commands.goal_nodes",
                                     origin)
                return
        f = self.cfg.ros.frames
        p = msg.pose.position
        where = frames.goal_to_ned(msg.header.frame_id, float(p.x), float(p.y), (f.map, f.odom))
        with self.lock:
            if isinstance(where, str):
                self.desk.refuse(f"goal refused: {where}", origin)
            else:
                self.desk.goto(where[0], where[1], origin)
            self._publish_state()

    def _on_joy(self, msg, info=None) -> None:
        """A gamepad (sensor_msgs/Joy): with the enable button held, its sticks are MANUAL's throttle and
        steering (in VELOCITY: a speed and a turn rate) and count as operator heartbeats; released, nothing is
        sent (MANUAL and VELOCITY time out to neutral). With commands.auth on, only the publisher bound by a
        signed `joystick NODE` (see _bind_joystick) is listened to: a Joy message carries no token, and a node
        name is anyone's to take. Nothing else feeds the link-loss failsafe, so a stream that was never the
        operator's cannot send the boat anywhere when it stops. Each refused node is said once."""
        if self.gate.auth == "off":
            sender: Optional[str] = self._sender_node(info, self.cfg.ros.topics.joystick)
        else:
            bound, sender = self._joy_sender(info)
            if not bound:
                if ("joystick input", sender) not in self._joy_refused:
                    if len(self._joy_refused) > 256:
                        self._joy_refused.clear()
                    self._joy_refused.add(("joystick input", sender))
                    self._event(f"refused: joystick input from node {sender or '(unknown)'}: not the gamepad "
                                f"stream the operator bound (`autopilot command --config FILE joystick "
                                f"{sender or '/NS/joy_node'}`, signed, binds it)", error=True)
                return
        j = self.cfg.ros.joystick
        axes, buttons = msg.axes, msg.buttons
        if j.enable_button >= 0 and (j.enable_button >= len(buttons) or not buttons[j.enable_button]):
            return
        if max(j.throttle_axis, j.steering_axis) >= len(axes):
            return
        steering = -axes[j.steering_axis] if j.invert_steering else axes[j.steering_axis]
        with self.lock:
            self.desk.manual(float(axes[j.throttle_axis]), float(steering), f"joystick node {sender or '(unknown)'}")

    # ------------------------------------------------------------------ stop
    def outputs_neutral(self, neutral_pulses_us) -> None:
        """The runtime's observer: the outputs went to neutral, so the topics say 0 N and the neutral pulses."""
        for pub in self.thrust_pubs:
            pub.publish(Float64(data=0.0))
        if neutral_pulses_us is not None:
            for pub, p in zip(self.pulse_pubs, neutral_pulses_us):
                pub.publish(UInt16(data=int(p)))

    def stop(self, reason: str = "autopilot node stopping") -> None:
        """No more cycles, thrusters to neutral (backend and topics). Safe to call twice."""
        self._loop_stop.set()
        watch = self._clock_watch
        if watch is not None and watch is not threading.current_thread():
            watch.join(timeout=2.0)
        runtime = getattr(self, "runtime", None)     # absent: a device did not open, nothing was ever driven
        if runtime is not None:
            runtime.stop(reason)

    def destroy_node(self):
        runtime = getattr(self, "runtime", None)
        if runtime is not None:
            runtime.close()
        return super().destroy_node()

    # ------------------------------------------------------------------ the runtime's parts, as they were here
    @property
    def autopilot(self):
        return self.runtime.autopilot

    @property
    def backend(self):
        return self.runtime.backend

    @property
    def desk(self):
        return self.runtime.desk

    @property
    def lock(self):
        return self.runtime.lock

    @property
    def stats(self):
        return self.runtime.stats

    @property
    def sensors(self):
        return self.runtime.sensors

    @property
    def last_result(self):
        return self.runtime.last_result

    @property
    def frame(self):
        return self.runtime.frame

    @property
    def loop_calls(self):
        return self.runtime.loop_calls

    @loop_calls.setter
    def loop_calls(self, calls) -> None:
        self.runtime.loop_calls = calls

    def applied_thrust_n(self) -> Optional[tuple]:
        return self.runtime.applied_thrust_n()
