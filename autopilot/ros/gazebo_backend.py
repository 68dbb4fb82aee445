"""The `gazebo` backend: sensors from the topics ros_gz_bridge publishes, thrust out in newtons, time from /clock.

Which topics carry what comes from the boat config's `gazebo:` section (configuration, not code):
- GNSS: sensor_msgs/NavSatFix (ros_gz_bridge sends no covariance: the configured or CEP-derived sigma is used),
  optionally a TwistWithCovarianceStamped ENU velocity.
- IMU: sensor_msgs/Imu in FLU; converted to FRD. With `mag.from_imu_orientation` its orientation (FLU in ENU)
  also yields a magnetometer reading of the vessel's configured Earth field, so the estimator gets a heading
  from models without a magnetometer (the VRX WAM-V).
- Magnetometer: sensor_msgs/MagneticField in FLU [T].
- Thrust: one std_msgs/Float64 per thruster [N] (times the configured `scale`), reliable QoS like the bridge.
- For a HIL bench (autopilot/ros/link_figures.py): with each cycle's thrust, a sensor_msgs/JointState on
  `thrust_stamp_topic` carrying the thrust and the stamp of the newest sensor sample it was computed from; and each
  simulated second a JSON link report on `link_report_topic` (messages received and sent, counted by stamp).
  Real Gazebo ignores both (nothing subscribes to them); they cost one message per cycle.
- Pod angle (azimuth thrusters): one std_msgs/Float64 per pod on its `angle_topic`, the joint position [rad]
  (the allocator's angle times `angle_scale`, -1 for VRX's z-up joints). A vessel with pods needs every
  thruster's angle_topic: ValueError otherwise, rather than a boat whose angles go nowhere.

Runs inside the autopilot's node and executor; the autopilot node owns the clock (use_sim_time, /clock) and calls
`poll`/`write`/`neutral`.
"""
from __future__ import annotations

import json
import time

from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, String

from autopilot.files.boat import GazeboConfig, resolve_topic
from autopilot.ros.link_figures import NS, SETTLE_S, StampCounts
from autopilot.ros.messages import TimeBase
from autopilot.ros.qos import bridge_qos, quiet_publisher
from autopilot.ros.topic_source import TopicSensorSource, cep_sigma_m, earth_field_for


class GazeboBackend(TopicSensorSource):
    """SensorSource over the bridge's sensor topics + one Float64 thrust publisher per thruster [N]."""

    consumes = "thrust"

    def __init__(self, node, cfg: GazeboConfig, vessel, time_base: TimeBase, namespace: str = "",
                 sensor_depth: int = 10, perf_clock=time.perf_counter):
        g = cfg.gnss
        super().__init__(node, time_base,
                         gnss_topic=resolve_topic(namespace, g.topic),
                         imu_topic=resolve_topic(namespace, cfg.imu.topic),
                         mag_topic=resolve_topic(namespace, cfg.mag.topic) if cfg.mag.topic else "",
                         gnss_vel_topic=resolve_topic(namespace, g.velocity_topic) if g.velocity_topic else "",
                         gps_std_m=g.std_m if g.std_m is not None else cep_sigma_m(vessel.sensors.gnss.cep_m),
                         assumed_sats=g.assumed_sats,
                         mag_field_ned_t=earth_field_for(vessel) if cfg.mag.from_imu_orientation else None,
                         depth=sensor_depth, perf_clock=perf_clock, on_stamp=self._count_rx)
        self._down_min_ns = None
        self.cfg = cfg
        by_name = {t.name: t for t in cfg.thrusters}
        self._thrusters = [by_name[t.name] for t in vessel.thrusters]      # vessel order
        self._pubs = [quiet_publisher(node, Float64, resolve_topic(namespace, t.topic), bridge_qos())
                      for t in self._thrusters]
        self.thrust_topics = [p.topic_name for p in self._pubs]
        self._angle_pubs = []
        if any(t.azimuth is not None for t in vessel.thrusters):
            missing = [t.name for t in self._thrusters if not t.angle_topic]
            if missing:
                raise ValueError(f"gazebo.thrusters: vessel {vessel.name!r} has azimuth pods but "
                                 f"{', '.join(missing)} has no angle_topic for the pod's joint position")
            self._angle_pubs = [quiet_publisher(node, Float64, resolve_topic(namespace, t.angle_topic), bridge_qos())
                                for t in self._thrusters]
        self.angle_topics = [p.topic_name for p in self._angle_pubs]
        self.hardware_ids = {"gnss": f"gazebo {self.topics['gnss']}", "imu": f"gazebo {self.topics['imu']}",
                             "esc": "gazebo " + ",".join(self.thrust_topics)}
        self._rx = StampCounts()          # filled from the subscriptions' callbacks (only when spun)
        self._tx = StampCounts()
        self._stamp_pub = quiet_publisher(node, JointState, resolve_topic(namespace, cfg.thrust_stamp_topic),
                                          bridge_qos())
        self._stamp_msg = JointState(name=[t.name for t in self._thrusters])
        self._report_pub = quiet_publisher(node, String, resolve_topic(namespace, cfg.link_report_topic),
                                           bridge_qos())
        self._report_every = max(1, int(round(vessel.control.loop_rate_hz)))
        self._writes = 0
        self._closed = False

    # rclpy hands the MessageInfo to a callback that takes two arguments (Subscription.callback binds the signature)
    def _on_imu(self, msg, info) -> None:  # type: ignore[override]  # info must stay required: see above
        # DDS stamps the writer's clock (the simulator's machine) and the reception on ours: the smallest
        # difference is the clock offset plus the shortest one-way delay (autopilot/ros/link_figures.py: clock offset)
        d = info["received_timestamp"] - info["source_timestamp"]
        if self._down_min_ns is None or d < self._down_min_ns:
            self._down_min_ns = d
        TopicSensorSource._on_imu(self, msg)

    def _count_rx(self, kind: str, stamp_ns: int) -> None:
        self._rx.add(kind, stamp_ns)

    def clock_received(self, stamp_ns: int) -> None:
        """The autopilot node tells each /clock message it got (counted like the sensors, for loss)."""
        self._rx.add("clock", stamp_ns)

    def _publish_link(self, thrust_n) -> None:
        if self.newest_polled_s is None:
            return
        stamp_ns = int(round(self.newest_polled_s * 1e9)) + self.tb.origin_ns
        m = self._stamp_msg
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp_ns, NS)
        m.effort = [float(f) for f in thrust_n]
        self._stamp_pub.publish(m)
        self._tx.add("thrust_stamped", stamp_ns)
        self._writes += 1
        if self._writes % self._report_every == 0 and self._rx.newest_ns is not None:
            upto = self._rx.newest_ns - int(SETTLE_S * NS)
            self._report_pub.publish(String(data=json.dumps(
                {"upto_ns": upto, "first_ns": self._rx.first_ns, "rx": self._rx.settle(upto),
                 "tx": self._tx.settle(upto), "down_min_ns": self._down_min_ns})))

    def write(self, t_s: float, thrust_n, pulses_us=None, angle_rad=None) -> None:
        """Publish one Float64 [N] per thruster (vessel order) and, for pods, one joint position [rad] per pod."""
        if self._closed:
            return
        for pub, cfg, f in zip(self._pubs, self._thrusters, thrust_n):
            pub.publish(Float64(data=float(f) * cfg.scale))
        if angle_rad is not None:
            for pub, cfg, a in zip(self._angle_pubs, self._thrusters, angle_rad):
                pub.publish(Float64(data=float(a) * cfg.angle_scale))
        self._publish_link(thrust_n)

    def neutral(self) -> None:
        if self._closed:
            return
        for pub in self._pubs:
            pub.publish(Float64(data=0.0))

    @property
    def connected(self) -> bool:
        """True while every thrust topic has a subscriber (the bridge, Gazebo or the stand-in)."""
        return all(p.get_subscription_count() > 0 for p in self._pubs)

    def ready(self, t_s: float) -> bool:
        """Gazebo's thrusters arm nothing: always ready."""
        return True

    def close(self) -> None:
        self._closed = True
