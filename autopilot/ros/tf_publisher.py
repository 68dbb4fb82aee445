"""/tf and /tf_static as tf2_msgs/msg/TFMessage, published directly: no tf2_ros needed.

tf2_msgs comes with a system ROS 2, or, in a venv of PyPI's ROS wheels, from scripts/build_tf2_msgs.sh (there is
no tf2_msgs wheel). QoS as tf2_ros's broadcasters offer it (autopilot/ros/interface.py: "tf" reliable, volatile,
depth 100; "tf_static" reliable, transient local, depth 1, all static transforms in one message), so rviz2,
Foxglove and tf2 listeners see the same graph either way.

Transforms follow REP-105: map -> odom (identity: both ENU about the mission origin), odom -> base_link (the
estimate: position [m], orientation quaternion x, y, z, w), base_link -> gnss_link / imu_link (the vessel file's
sensor placement, FLU [m]).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from autopilot.ros.interface import topic_name
from autopilot.ros.qos import qos_for, quiet_publisher


def tf_message_type():
    """tf2_msgs.msg.TFMessage, or None where tf2_msgs is not installed."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


def transform_stamped(stamp, parent: str, child: str, xyz_m: Sequence[float],
                      quat_xyzw: Sequence[float] = (0.0, 0.0, 0.0, 1.0)):
    """A geometry_msgs/TransformStamped: `child`'s pose in `parent` (translation [m], rotation quaternion)."""
    from geometry_msgs.msg import TransformStamped
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id, t.child_frame_id = parent, child
    tr, r = t.transform.translation, t.transform.rotation
    tr.x, tr.y, tr.z = (float(v) for v in xyz_m)
    r.x, r.y, r.z, r.w = (float(v) for v in quat_xyzw)
    return t


def odometry_transforms(odom, map_frame: str) -> list:
    """[map -> odom (identity), odom -> base_link] from a nav_msgs/Odometry (frames and stamp from its header)."""
    p, q = odom.pose.pose.position, odom.pose.pose.orientation
    stamp = odom.header.stamp
    return [transform_stamped(stamp, map_frame, odom.header.frame_id, (0.0, 0.0, 0.0)),
            transform_stamped(stamp, odom.header.frame_id, odom.child_frame_id, (p.x, p.y, p.z),
                              (q.x, q.y, q.z, q.w))]


def static_transforms(stamp, placements: Sequence[Tuple[str, str, Sequence[float], Sequence[float]]]) -> list:
    """TransformStamped for each (parent, child, xyz [m], quaternion xyzw) of autopilot.ros.frames.sensor_transforms."""
    return [transform_stamped(stamp, parent, child, xyz, quat) for parent, child, xyz, quat in placements]


class TfPublisher:
    """The node's /tf and /tf_static publishers. `create` returns None where tf2_msgs is not installed."""

    def __init__(self, node, ros, tf_message) -> None:
        self._msg = tf_message
        self._tf = quiet_publisher(node, tf_message, topic_name(ros, "/tf"), qos_for("tf", ros))
        self._static = quiet_publisher(node, tf_message, topic_name(ros, "/tf_static"), qos_for("tf_static", ros))

    @classmethod
    def create(cls, node, ros) -> Optional["TfPublisher"]:
        msg = tf_message_type()
        return None if msg is None else cls(node, ros, msg)

    def send(self, transforms: Sequence) -> None:
        """One TFMessage on /tf with these TransformStamped."""
        self._tf.publish(self._msg(transforms=list(transforms)))

    def send_static(self, transforms: Sequence) -> None:
        """All static transforms in one latched TFMessage on /tf_static (a late joiner gets this one)."""
        self._static.publish(self._msg(transforms=list(transforms)))
