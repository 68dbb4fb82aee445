"""The three QoS profiles the autopilot uses, in one place.

- sensors: best effort, keep-last (sensor-data QoS): a late sample is worth less than the next one. A best-effort
  subscription also matches reliable publishers (ros_gz_bridge publishes reliable).
- commands and actuator outputs: reliable, keep-last.
- latched: reliable + transient local, for things a late joiner needs once (the mission path, the state).
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def sensor_qos(depth: int = 10) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def command_qos(depth: int = 10) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def latched_qos(depth: int = 1) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def bridge_qos() -> QoSProfile:
    """What ros_gz_bridge uses on both sides by default: reliable, volatile, keep last 10."""
    return command_qos(10)


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
