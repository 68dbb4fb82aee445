"""A stand-in for Gazebo + ros_gz_bridge: our plant behind exactly the topics the bridge would publish.

This node runs hil.sim.plant.Plant with the typed sensor models and speaks the ROS side of a ros_gz_bridge
config:
- the same topic names and message types (NavSatFix, Imu, MagneticField from the boat config's gazebo section,
  /clock as rosgraph_msgs/Clock);
- the same frame ids: Gazebo names a sensor's frame `MODEL::LINK::SENSOR` and the bridge turns `::` into `/`, so
  the frame is read off the bridge config's gz_topic_name (`/world/W/model/M/link/L/sensor/S/...` -> `M/L/S`);
- the same (absent) covariances: NavSatFix type UNKNOWN and zeros, Imu and MagneticField covariances all zero,
  NavSatStatus STATUS_FIX with service unset; the Imu carries Gazebo's orientation (FLU in ENU, noiseless);
- with gazebo.gnss.velocity_topic set, the GNSS velocity as geometry_msgs/TwistWithCovarianceStamped (ENU, the
  fix's speed over ground and course, just before each fix), as a receiver's driver gives it beside the fix
  (Gazebo's NavSat sensor models the velocity but ros_gz_bridge's NavSatFix drops it);
- the same QoS as the bridge (reliable, volatile, depth 10), and it consumes std_msgs/Float64 thrust in newtons
  and, for azimuth pods, std_msgs/Float64 joint positions in radians (each thruster's angle_topic).

Time: the stand-in owns /clock. Each step it advances the plant by `step_s`, publishes the step's sensor
samples, then the clock. In lockstep (default) it waits until every thruster topic has answered before the next
step, so a run goes as fast as the autopilot keeps up; with `realtime` it paces steps to the wall clock instead.
A lockstep window of k steps lets k steps be in flight: before each step the plant needs the answer to the
sensors it published k - 1 steps earlier (k = 1: strict lockstep; a round trip up to about k * step_s does not
stall). An answer to the newest step also releases it (the autopilot ran on sensors that crossed the link after
their clock and has nothing newer to say until the next clock).

Link figures (autopilot/ros/link_figures.py), the same in both modes: `latencies_s` holds, per sensor stamp, the
time from publishing it to the DDS reception of the first thrust the autopilot computed from it (the gazebo
backend sends that stamp with each cycle's thrust on `thrust_stamp_topic`); `link_figures()` adds the loss per
topic from the autopilot's link reports. Why: docs/design-notes/simulator-and-rims.md, "HIL links".
Run it on its own: `python -m hil.ros.gazebo_standin --config config/gazebo/foka_boat.yaml [--realtime]`.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Deque, List, Optional, Tuple

import rclpy
from geometry_msgs.msg import TwistWithCovarianceStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState, MagneticField, NavSatFix, NavSatStatus
from std_msgs.msg import Float64, String

from autopilot.files.boat import BoatConfig, GazeboConfig, resolve_topic
from autopilot.ros import frames
from autopilot.ros.link_figures import (
    NS,
    PublishedStamps,
    StampedLatency,
    clock_offset_ms,
    lockstep_breakdown_ms,
    loss_per_topic,
)
from autopilot.ros.messages import TimeBase
from autopilot.ros.qos import bridge_qos
from autopilot.vocab.schema import ConfigError

CATCH_UP_GRACE_S = 0.1     # wall seconds a lockstep window waits for a cycle's stamp message after its thrusts
OUTAGE_AFTER_S = 0.3      # wall seconds without a message from the autopilot: the link is down (15 cycles at 50 Hz)
PAUSE_PROBE_S = 0.5       # while paused by an outage, one step this often, so the autopilot can answer
OUTAGE_MODES = ("pause", "run")
MAX_DRAIN_CALLBACKS = 50  # pending callbacks run, at most, to find an answer before calling the link down

BRIDGE_KEYS = {"ros_topic_name", "gz_topic_name", "ros_type_name", "gz_type_name", "direction",
               "topic_name", "lazy", "subscriber_queue", "publisher_queue", "qos_profile"}
DIRECTIONS = ("BIDIRECTIONAL", "GZ_TO_ROS", "ROS_TO_GZ")


@dataclass(frozen=True)
class BridgeEntry:
    ros_topic_name: str
    gz_topic_name: str
    ros_type_name: str
    gz_type_name: str
    direction: str = "BIDIRECTIONAL"


def load_bridge_config(path) -> list:
    """Read a ros_gz_bridge YAML (a list of topic entries), checking the keys ros_gz_bridge knows."""
    import yaml
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(path, "", f"cannot read bridge config: {exc}") from None
    if not isinstance(data, list):
        raise ConfigError(path, "", "a ros_gz_bridge config is a YAML list of topic entries")
    out = []
    for i, e in enumerate(data):
        if not isinstance(e, dict):
            raise ConfigError(path, f"[{i}]", "must be a mapping")
        unknown = set(e) - BRIDGE_KEYS
        if unknown:
            raise ConfigError(
                path, f"[{i}].{sorted(unknown)[0]}", f"unknown key (known: {', '.join(sorted(BRIDGE_KEYS))})"
            )
        ros = e.get("ros_topic_name", e.get("topic_name"))
        gz = e.get("gz_topic_name", e.get("topic_name"))
        for key, val in (("ros_topic_name", ros), ("gz_topic_name", gz), ("ros_type_name", e.get("ros_type_name")),
                         ("gz_type_name", e.get("gz_type_name"))):
            if not isinstance(val, str) or not val:
                raise ConfigError(path, f"[{i}].{key}", "is required (a non-empty string)")
        assert isinstance(ros, str) and isinstance(gz, str)     # checked just above
        direction = e.get("direction", "BIDIRECTIONAL")
        if direction not in DIRECTIONS:
            raise ConfigError(path, f"[{i}].direction", f"must be one of {', '.join(DIRECTIONS)}; got {direction!r}")
        out.append(BridgeEntry(ros, gz, e["ros_type_name"], e["gz_type_name"], direction))
    return out


def gz_sensor_frame_id(gz_topic: str) -> Optional[str]:
    """The frame id ros_gz_bridge gives a Gazebo sensor's messages: MODEL/LINK/SENSOR from its topic."""
    if "/model/" not in gz_topic or "/link/" not in gz_topic or "/sensor/" not in gz_topic:
        return None
    after_model = gz_topic.split("/model/", 1)[1]
    model, rest = after_model.split("/link/", 1)
    link, rest = rest.split("/sensor/", 1)
    sensor = rest.split("/", 1)[0]
    return f"{model}/{link}/{sensor}"


class GazeboStandin:
    """The plant + sensors behind bridge-shaped topics. Drive it with `step()` / `run()` from one thread."""

    def __init__(self, vessel, gazebo: GazeboConfig, frame, start_ned_heading, env=None, seed: int = 1,
                 gps_noise: str = "realistic", gps_rate_hz: Optional[float] = None, namespace: str = "",
                 bridge_entries: Optional[list] = None, step_s: Optional[float] = None, context=None,
                 node_name: str = "gazebo_standin", plant_spec=None):
        """`plant_spec` (hil.sim.plant_spec.PlantSpec): the true boat, when it is not `vessel` as filed (another
        vessel file, mismatch factors, extras); the sensors stay `vessel`'s, as in the in-process simulator."""
        from hil.sim.environment import EnvironmentConfig
        from hil.sim.plant import Plant
        from hil.sim.sensor_models import TypedSensorSuite

        self.vessel = vessel
        self.gazebo = gazebo
        n0, e0, psi0 = start_ned_heading
        if plant_spec is None:
            self.plant = Plant(vessel, env or EnvironmentConfig(), seed, n0, e0, psi0)
        else:
            self.plant = Plant(plant_spec.vessel, env or EnvironmentConfig(), seed, n0, e0, psi0,
                               extras=plant_spec.extras, thrust_scale=plant_spec.thrust_scale())
        self.plant_spec = plant_spec
        self.sensors = TypedSensorSuite(vessel, frame, seed, gps_noise=gps_noise, gps_rate_hz=gps_rate_hz)
        self.step_s = step_s or 1.0 / vessel.control.loop_rate_hz
        self.tb = TimeBase(0)
        self.truth = self.plant.truth
        self.k = 0
        self.silence_after_s: dict = {}          # sensor kind ("gnss", "imu", "mag") -> sim time it stops
        kw = {"context": context} if context is not None else {}
        self.node = Node(node_name, **kw)
        entries = {e.ros_topic_name: e for e in (bridge_entries or [])}

        def frame_for(topic: str, kind: str) -> str:
            e = entries.get(topic)
            fid = gz_sensor_frame_id(e.gz_topic_name) if e is not None else None
            return fid or f"{vessel.name}/base_link/{kind}"

        q = bridge_qos()
        self.topics = {"gnss": resolve_topic(namespace, gazebo.gnss.topic),
                       "imu": resolve_topic(namespace, gazebo.imu.topic), "clock": gazebo.clock_topic}
        self.frame_ids = {"gnss": frame_for(self.topics["gnss"], "navsat"),
                          "imu": frame_for(self.topics["imu"], "imu")}
        self.clock_pub = self.node.create_publisher(Clock, gazebo.clock_topic, q)
        self.fix_pub = self.node.create_publisher(NavSatFix, self.topics["gnss"], q)
        self.vel_pub = None
        if gazebo.gnss.velocity_topic:
            self.topics["gnss_vel"] = resolve_topic(namespace, gazebo.gnss.velocity_topic)
            self.vel_pub = self.node.create_publisher(TwistWithCovarianceStamped, self.topics["gnss_vel"], q)
        self.imu_pub = self.node.create_publisher(Imu, self.topics["imu"], q)
        self.mag_pub = None
        if gazebo.mag.topic:
            self.topics["mag"] = resolve_topic(namespace, gazebo.mag.topic)
            self.frame_ids["mag"] = frame_for(self.topics["mag"], "magnetometer")
            self.mag_pub = self.node.create_publisher(MagneticField, self.topics["mag"], q)
        by_name = {t.name: t for t in gazebo.thrusters}
        self._thr_cfg = [by_name[t.name] for t in vessel.thrusters]
        self.thrust_n = [0.0] * len(self._thr_cfg)
        self._thrust_seen = [0] * len(self._thr_cfg)
        self.thrust_topics = []
        for i, t in enumerate(self._thr_cfg):
            topic = resolve_topic(namespace, t.topic)
            self.thrust_topics.append(topic)
            self.node.create_subscription(Float64, topic, lambda m, i=i: self._on_thrust(i, m), q)
        self.stamped = StampedLatency()
        self._last_heard: Optional[float] = None     # perf_counter() of the autopilot's last message
        self._up_min_ns: Optional[int] = None        # smallest (our reception - the autopilot's send) stamp
        self._outage: Optional[dict] = None
        self.outages: list = []                     # {start_sim_s, end_sim_s, wall_s, mode} per link outage
        self.published_stamps = PublishedStamps()
        self.thrust_stamps_rx: list = []            # stamps [ns] of the thrust-stamp messages received
        self._newest_answer_ns = -1                 # the newest sensor stamp a received thrust was computed from
        self.link_report: Optional[dict] = None     # the autopilot side's newest link report
        self.node.create_subscription(JointState, resolve_topic(namespace, gazebo.thrust_stamp_topic),
                                      self._on_thrust_stamp, q)
        self.node.create_subscription(String, resolve_topic(namespace, gazebo.link_report_topic),
                                      self._on_link_report, q)
        # azimuth pods: joint positions [rad] on angle_topic, as Gazebo's thruster joints take them
        self.angle_rad = None
        self.angle_topics = []
        if all(t.angle_topic for t in self._thr_cfg):
            self.angle_rad = [0.0] * len(self._thr_cfg)
            for i, t in enumerate(self._thr_cfg):
                topic = resolve_topic(namespace, t.angle_topic)
                self.angle_topics.append(topic)
                self.node.create_subscription(Float64, topic, lambda m, i=i: self._on_angle(i, m), q)
        self.executor = SingleThreadedExecutor(**kw)
        self.executor.add_node(self.node)
        self.latencies_s = self.stamped.latencies_s
        self.missed_steps = 0
        self.caught_up_releases = 0      # lockstep window: steps released by the newest step's answer (see run)
        # lockstep's cost per step [s]: our step (plant, sensors, publishing) and the wait for every thruster's
        # answer (the link both ways, the autopilot's DDS reception, cycle and reply)
        self.lockstep_step_s: list = []
        self.lockstep_wait_s: list = []
        self.lockstep_window = 1
        # lockstep: the oldest [s of sim time] the newest answered sensor stamp was when the plant stepped on
        self.answer_age_max_s: Optional[float] = None
        self.gps_truth_errors_m: list = []
        self.published = {"gnss": 0, "imu": 0, "mag": 0}

    # ------------------------------------------------------------------ inputs
    def _on_thrust(self, i: int, msg: Float64) -> None:
        scale = self._thr_cfg[i].scale
        self.thrust_n[i] = float(msg.data) / scale if scale else 0.0
        self._thrust_seen[i] += 1
        self._last_heard = time.perf_counter()

    def _on_thrust_stamp(self, msg: JointState, info) -> None:
        st = msg.header.stamp
        stamp_ns = st.sec * NS + st.nanosec
        self.thrust_stamps_rx.append(stamp_ns)
        self._newest_answer_ns = max(self._newest_answer_ns, stamp_ns)
        self._last_heard = time.perf_counter()
        d = info["received_timestamp"] - info["source_timestamp"]
        if self._up_min_ns is None or d < self._up_min_ns:
            self._up_min_ns = d
        self.stamped.thrust_received(stamp_ns, info["received_timestamp"])

    def _on_link_report(self, msg: String) -> None:
        import json
        try:
            self.link_report = json.loads(msg.data)
        except ValueError:
            self.node.get_logger().warning(f"link report is not JSON: {msg.data[:80]!r}")

    def _stamp_out(self, kind: str, stamp) -> None:
        """Note a published stamp: for the loss count, and its wall time for the latency (DDS receptions are
        stamped on the system clock, so this is too)."""
        ns = stamp.sec * NS + stamp.nanosec
        self.published_stamps.add(kind, ns)
        self.stamped.published(ns, time.time_ns())

    def link_figures(self) -> dict:
        """Latency p50/p90/p99/max [ms] from stamps, and loss per topic (fraction) up to the autopilot's last
        settled report (empty `loss` when no report came: an autopilot without the gazebo backend's reports)."""
        out = self.stamped.summary()
        rep = self.link_report
        received = None
        if rep:
            upto = int(rep["upto_ns"])
            received = {"thrust_stamped": sum(1 for s in self.thrust_stamps_rx if s <= upto)}
            out["stamps_unanswered"] = self.stamped.unanswered(before_ns=upto)
        out["loss"] = loss_per_topic(self.published_stamps, rep, received)
        out["clock_offset_ms"] = clock_offset_ms((rep or {}).get("down_min_ns"), self._up_min_ns)
        out["outages"] = list(self.outages)
        if self.lockstep_wait_s:
            out["lockstep_ms"] = lockstep_breakdown_ms(self.lockstep_step_s, self.lockstep_wait_s, self.step_s)
            out["lockstep_ms"]["window_steps"] = self.lockstep_window
            out["lockstep_ms"]["caught_up_releases"] = self.caught_up_releases
            if self.answer_age_max_s is not None:
                out["lockstep_ms"]["answer_age_max_steps"] = round(self.answer_age_max_s / self.step_s, 2)
        return out

    def _on_angle(self, i: int, msg: Float64) -> None:
        assert self.angle_rad is not None               # subscribed to only when the angles are kept
        scale = self._thr_cfg[i].angle_scale
        value = float(msg.data) / scale if scale else 0.0
        if math.isfinite(value):
            self.angle_rad[i] = value

    def add_node(self, node) -> None:
        """Spin another node (an observer) on the stand-in's executor."""
        self.executor.add_node(node)

    def spin_for(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.executor.spin_once(timeout_sec=max(0.0, min(0.01, end - time.perf_counter())))

    def wait_for_peers(self, timeout_s: float = 20.0) -> bool:
        """Until every sensor topic and the clock have a subscriber and every thrust topic a publisher."""
        end = time.perf_counter() + timeout_s
        while time.perf_counter() < end:
            if self.peers_matched():
                self.spin_for(0.2)      # let the matching finish on the other side too
                return True
            self.executor.spin_once(timeout_sec=0.05)
        return False

    def peers_matched(self) -> bool:
        pubs = [self.clock_pub, self.fix_pub, self.imu_pub] + ([self.mag_pub] if self.mag_pub else []) + \
            ([self.vel_pub] if self.vel_pub else [])
        return all(p.get_subscription_count() > 0 for p in pubs) and \
            all(self.node.count_publishers(t) > 0 for t in self.thrust_topics)

    # ------------------------------------------------------------------ outputs
    def _silent(self, kind: str, t: float) -> bool:
        after = self.silence_after_s.get(kind)
        return after is not None and t >= after

    def _publish_fix(self, fix) -> None:
        if self.vel_pub is not None and fix.sog_mps is not None and fix.cog_rad is not None:
            vel = TwistWithCovarianceStamped()
            vel.header.stamp = self.tb.to_stamp(fix.time_s)
            vel.header.frame_id = self.frame_ids["gnss"]
            vel.twist.twist.linear.x = fix.sog_mps * math.sin(fix.cog_rad)        # east
            vel.twist.twist.linear.y = fix.sog_mps * math.cos(fix.cog_rad)        # north
            self.vel_pub.publish(vel)
        msg = NavSatFix()
        msg.header.stamp = self.tb.to_stamp(fix.time_s)
        msg.header.frame_id = self.frame_ids["gnss"]
        msg.status.status = NavSatStatus.STATUS_FIX
        msg.latitude, msg.longitude, msg.altitude = fix.lat_deg, fix.lon_deg, fix.alt_m
        msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_UNKNOWN
        self._stamp_out("gnss", msg.header.stamp)
        self.fix_pub.publish(msg)
        self.published["gnss"] += 1

    def _publish_imu(self, s, heading_rad: float) -> None:
        msg = Imu()
        msg.header.stamp = self.tb.to_stamp(s.time_s)
        msg.header.frame_id = self.frame_ids["imu"]
        q = frames.heading_to_quat_enu(heading_rad)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
        gx, gy, gz = frames.frd_to_flu(s.gyro_rps)
        ax, ay, az = frames.frd_to_flu(s.accel_mps2)
        msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = gx, gy, gz
        msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = ax, ay, az
        self._stamp_out("imu", msg.header.stamp)
        self.imu_pub.publish(msg)
        self.published["imu"] += 1

    def _publish_mag(self, m) -> None:
        assert self.mag_pub is not None                 # called only with a magnetometer topic
        msg = MagneticField()
        msg.header.stamp = self.tb.to_stamp(m.time_s)
        msg.header.frame_id = self.frame_ids["mag"]
        x, y, z = frames.frd_to_flu(m.field_t)
        msg.magnetic_field.x, msg.magnetic_field.y, msg.magnetic_field.z = x, y, z
        self._stamp_out("mag", msg.header.stamp)
        self.mag_pub.publish(msg)
        self.published["mag"] += 1

    def step(self) -> None:
        """Advance one step: plant, sensors, then /clock."""
        self.k += 1
        t = self.k * self.step_s
        truth = (self.plant.step_to(t, list(self.thrust_n)) if self.angle_rad is None
                 else self.plant.step_to(t, list(self.thrust_n), list(self.angle_rad)))
        self.truth = truth
        batch = self.sensors.sample(truth)
        self.gps_truth_errors_m.extend(self.sensors.gps_truth_errors_m)
        if self.mag_pub is not None and not self._silent("mag", t):
            for m in batch.mag:
                self._publish_mag(m)
        if not self._silent("gnss", t):
            for fix in batch.gps:
                if fix.valid:                       # Gazebo's NavSat has no "no fix": it just says nothing
                    self._publish_fix(fix)
        if not self._silent("imu", t):
            for s in batch.imu:
                self._publish_imu(s, truth.heading_rad - truth.yaw_rate_rps * (t - s.time_s))
        clock = Clock(clock=self.tb.to_stamp(t))
        self.published_stamps.add("clock", clock.clock.sec * NS + clock.clock.nanosec)
        self.clock_pub.publish(clock)

    def wait_for_thrust(self, since_counts: list, timeout_s: float, after_ns: int = -1,
                        newest_counts: Optional[list] = None) -> bool:
        """Spin until every thruster topic got a message after `since_counts` and a thrust computed from a sensor
        stamped after `after_ns` [ns] has arrived, or (with `newest_counts`) until every thruster topic got a
        message after `newest_counts`, the counts before the newest step went out: the autopilot then has nothing
        newer to answer (it ran its cycle on sensors that crossed the link after their clock), and its stamp
        message has not come within CATCH_UP_GRACE_S. Lockstep pacing; False after timeout_s of wall time."""
        end = time.perf_counter() + timeout_s
        caught_up_at = None
        while True:
            if (self._newest_answer_ns > after_ns
                    and all(n > s for n, s in zip(self._thrust_seen, since_counts))):
                return True
            if caught_up_at is None and newest_counts is not None and \
                    all(n > s for n, s in zip(self._thrust_seen, newest_counts)):
                caught_up_at = time.perf_counter()
            # the cycle's stamp message goes out after its thrusts: give it CATCH_UP_GRACE_S to come
            if caught_up_at is not None and time.perf_counter() - caught_up_at >= CATCH_UP_GRACE_S:
                self.caught_up_releases += 1
                return True
            now = time.perf_counter()
            remaining = end - now
            if remaining <= 0:
                self.missed_steps += 1
                return False
            if caught_up_at is not None:
                remaining = min(remaining, caught_up_at + CATCH_UP_GRACE_S - now + 1e-4)
            self.executor.spin_once(timeout_sec=min(remaining, 0.05))

    def _link_down(self) -> bool:
        """Nothing (thrust or its stamp) came from the autopilot for OUTAGE_AFTER_S of wall time, after it had
        answered once."""
        return self._last_heard is not None and time.perf_counter() - self._last_heard > OUTAGE_AFTER_S

    def _link_down_confirmed(self) -> bool:
        """_link_down() after taking what DDS already holds for us: a stand-in that was itself kept off the CPU
        that long (a loaded machine) has not yet run the callbacks of the answers that did come."""
        heard = self._last_heard
        for _ in range(MAX_DRAIN_CALLBACKS):
            if self._last_heard != heard:
                break
            self.executor.spin_once(timeout_sec=0.0)
        return self._link_down()

    def run(self, until_s: float, realtime: bool = False, lockstep_timeout_s: float = 1.0,
            on_step=None, on_outage: str = "pause", lockstep_window: int = 1) -> None:
        """Step until sim time `until_s` (or `on_step(t, truth)` returns True).

        Lockstep (not `realtime`): before the next step, wait (at most lockstep_timeout_s of wall time) until every
        thruster topic has answered the sensors published `lockstep_window` (>= 1) steps ago, counting this one.

        A link outage (`_link_down`) is recorded in `outages` either way. `on_outage`: "pause" holds the plant and
        /clock (one probe step per PAUSE_PROBE_S, so the autopilot's answer shows when the link is back; real-time
        pacing then resumes from there without catching up), so sim time does not jump on either side; "run" lets
        the plant run on (real time: the autopilot sees the outage as its sensors falling silent)."""
        if on_outage not in OUTAGE_MODES:
            raise ValueError(f"on_outage: one of {', '.join(OUTAGE_MODES)}; got {on_outage!r}")
        if int(lockstep_window) < 1:
            raise ValueError(f"lockstep_window: at least 1 step; got {lockstep_window!r}")
        # per step in flight: the thrust counts before its sensors went out and its start [ns] (its sensors are
        # stamped after it)
        in_flight: Deque[Tuple[List[int], int]] = deque(maxlen=int(lockstep_window))
        self.lockstep_window = int(lockstep_window)
        wall0 = time.perf_counter() - self.k * self.step_s
        while self.k * self.step_s < until_s - 1e-9:
            down = self._link_down()
            if down and self._outage is None:
                down = self._link_down_confirmed()
            if down and self._outage is None:
                self._outage = {"start_sim_s": round(self.k * self.step_s, 3), "start_wall": time.perf_counter()}
            elif not down and self._outage is not None:
                o = self._outage
                self.outages.append({"start_sim_s": o["start_sim_s"], "end_sim_s": round(self.k * self.step_s, 3),
                                     "wall_s": round(time.perf_counter() - o["start_wall"] + OUTAGE_AFTER_S, 3),
                                     "mode": on_outage})
                self._outage = None
                wall0 = time.perf_counter() - self.k * self.step_s       # no catching up after a pause
            paused = down and on_outage == "pause"
            if paused:
                self.spin_for(PAUSE_PROBE_S)
            since = list(self._thrust_seen)
            step_start_ns = round(self.k * self.step_s * NS)
            t_step = time.perf_counter()
            self.step()
            t = self.k * self.step_s
            if paused:
                self.wait_for_thrust(since, PAUSE_PROBE_S)
                wall0 = time.perf_counter() - t
            elif realtime:
                while True:
                    lag = wall0 + t - time.perf_counter()
                    if lag <= 0:
                        break
                    self.executor.spin_once(timeout_sec=lag)
            else:
                in_flight.append((since, step_start_ns))
                t_wait = time.perf_counter()
                if len(in_flight) == in_flight.maxlen:
                    oldest_since, oldest_start_ns = in_flight.popleft()
                    if in_flight.maxlen == 1:
                        self.wait_for_thrust(oldest_since, lockstep_timeout_s)
                    else:
                        self.wait_for_thrust(oldest_since, lockstep_timeout_s, after_ns=oldest_start_ns,
                                             newest_counts=since)
                if self._newest_answer_ns >= 0:
                    age_s = t - self._newest_answer_ns / NS
                    self.answer_age_max_s = age_s if self.answer_age_max_s is None else max(self.answer_age_max_s,
                                                                                            age_s)
                self.lockstep_step_s.append(t_wait - t_step)
                self.lockstep_wait_s.append(time.perf_counter() - t_wait)
            if on_step is not None and on_step(t, self.truth):
                break
        if self._outage is not None:         # the run ended in an outage
            o = self._outage
            self.outages.append({"start_sim_s": o["start_sim_s"], "end_sim_s": None,
                                 "wall_s": round(time.perf_counter() - o["start_wall"] + OUTAGE_AFTER_S, 3),
                                 "mode": on_outage})
            self._outage = None

    def destroy(self) -> None:
        self.executor.remove_node(self.node)
        self.node.destroy_node()
        self.executor.shutdown()


def standin_for_boat_config(cfg: BoatConfig, vessel, mission, context=None, **kw) -> GazeboStandin:
    """A stand-in speaking the bridge config named by a boat config's gazebo section."""
    from autopilot.guidance.path_following import mission_frame, point_to_ned
    from hil.sim.runner import initial_pose

    assert cfg.gazebo is not None                       # a boat config for the gazebo backend has the section
    frame = mission_frame(mission)
    wps = [point_to_ned(p, frame) for p in mission.waypoints]
    entries = []
    if cfg.gazebo.bridge_config:
        bridge = Path(cfg.gazebo.bridge_config)
        if not bridge.is_absolute() and cfg.source_file:
            bridge = Path(cfg.source_file).resolve().parent / bridge
        entries = load_bridge_config(bridge)
    return GazeboStandin(vessel, cfg.gazebo, frame, initial_pose(mission, frame, wps), namespace=cfg.ros.namespace,
                         bridge_entries=entries, context=context, **kw)


def main(argv=None) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.config import load_mission, load_vessel

    p = argparse.ArgumentParser(prog="python -m hil.ros.gazebo_standin",
                                description="Run our plant behind ros_gz_bridge-shaped topics (a Gazebo stand-in).")
    p.add_argument("--config", required=True, help="boat config with a gazebo section (config/gazebo/*.yaml)")
    p.add_argument("--mission", help="mission (for the launch point); default: the boat config's")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=3600.0, help="simulated seconds")
    p.add_argument("--realtime", action="store_true", help="pace /clock to the wall clock")
    args = p.parse_args(argv)
    try:
        cfg = load_boat_config(args.config)
        vessel = load_vessel(str(cfg.vessel_path()))
        mission_path = args.mission or cfg.mission_path()
        if mission_path is None:
            print(f"error: {args.config}: names no mission; give --mission FILE", file=sys.stderr)
            return 2
        mission = load_mission(mission_path)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if cfg.gazebo is None:
        print(f"error: {args.config}: has no gazebo section", file=sys.stderr)
        return 2
    rclpy.init()
    standin = standin_for_boat_config(cfg, vessel, mission, seed=args.seed)
    try:
        standin.wait_for_peers(timeout_s=math.inf if not args.realtime else 0.0)
        standin.run(args.duration, realtime=args.realtime)
    except KeyboardInterrupt:
        pass
    finally:
        standin.destroy()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
