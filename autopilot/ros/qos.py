"""The QoS profiles the autopilot uses, by kind of topic, in one place.

- sensors (GNSS, IMU, magnetometer as the drivers read them): best effort, keep-last (sensor-data QoS, REP-2003):
  a late sample is worth less than the next one. A best-effort subscription also matches reliable publishers
  (ros_gz_bridge publishes reliable).
- derived (estimate, setpoints, errors, waypoint index), commands and actuator outputs: reliable, keep-last with
  a small depth, so a subscriber with the default QoS (reliable) receives them as well as a best-effort one.
- latched: reliable + transient local, for what a late joiner needs (the mission path, the state); the node also
  republishes them on change and at a slow rate, for volatile late subscribers.
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def sensor_qos(depth: int = 10) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def command_qos(depth: int = 10) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def derived_qos(depth: int = 10) -> QoSProfile:
    """What the autopilot computes (odometry, setpoints, errors): reliable, volatile, keep last `depth`."""
    return command_qos(depth)


def latched_qos(depth: int = 1) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def bridge_qos() -> QoSProfile:
    """What ros_gz_bridge uses on both sides by default: reliable, volatile, keep last 10."""
    return command_qos(10)


def qos_for(kind: str, ros) -> QoSProfile:
    """The profile of a topic kind of autopilot.ros.interface.QOS (depths of sensor/command kinds from `ros`,
    the boat config's RosConfig): the one table the run log's offered QoS comes from too."""
    from autopilot.ros.interface import QOS, qos_depth
    q = QOS[kind]
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=qos_depth(kind, ros),
                      reliability=ReliabilityPolicy.RELIABLE if q.reliability == "reliable"
                      else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if q.durability == "transient_local"
                      else DurabilityPolicy.VOLATILE)


def quiet_publisher(node, msg_type, topic: str, qos: QoSProfile):
    """A publisher without rclpy's default QoS-event handlers: each handler is a waitable the executor rebuilds
    into its wait set on every spin, which costs the Pi CPU for every one of our ~40 publishers."""
    from rclpy.event_handler import PublisherEventCallbacks
    return node.create_publisher(msg_type, topic, qos,
                                 event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


def quiet_subscription(node, msg_type, topic: str, callback, qos: QoSProfile):
    from rclpy.event_handler import SubscriptionEventCallbacks
    return node.create_subscription(msg_type, topic, callback, qos,
                                    event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))
