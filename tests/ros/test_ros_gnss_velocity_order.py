"""A GNSS fix takes its own epoch's velocity (autopilot/ros/topic_source.py): DDS does not order messages across
topics, so over the sim's ROS transport a third of the fixes took the previous second's speed and course when
their velocity came after them. Fed by hand here (the callbacks as DDS would call them, in either order)."""
from geometry_msgs.msg import TwistWithCovarianceStamped
from sensor_msgs.msg import NavSatFix, NavSatStatus

import tests.support.ros_env  # noqa: F401  (fails without rclpy)
from autopilot.ros.messages import TimeBase
from autopilot.ros.topic_source import TopicSensorSource


class _Node:
    def __init__(self):
        self.callbacks = {}

    def create_subscription(self, msg_type, topic, callback, qos, event_callbacks=None):
        self.callbacks[topic] = callback


def _fix(tb, t):
    m = NavSatFix()
    m.header.stamp = tb.to_stamp(t)
    m.status.status = NavSatStatus.STATUS_FIX
    m.latitude, m.longitude = 51.11, 17.06
    return m


def _vel(tb, t, east, north):
    m = TwistWithCovarianceStamped()
    m.header.stamp = tb.to_stamp(t)
    m.twist.twist.linear.x, m.twist.twist.linear.y = east, north
    return m


def test_a_fix_takes_the_velocity_of_its_own_epoch_in_whichever_order_they_arrive():
    tb, node = TimeBase(0), _Node()
    src = TopicSensorSource(node, tb, "fix", "imu", gnss_vel_topic="vel")
    on_fix, on_vel = node.callbacks["fix"], node.callbacks["vel"]
    on_vel(_vel(tb, 1.0, 0.0, 1.0))            # epoch 1: velocity first
    on_fix(_fix(tb, 1.0))
    on_fix(_fix(tb, 2.0))                      # epoch 2: the fix first; epoch 1's velocity must not stick to it
    on_vel(_vel(tb, 2.0, 2.0, 0.0))
    fixes = src.poll(2.5).gps
    assert [round(f.sog_mps, 3) for f in fixes] == [1.0, 2.0]
    assert abs(fixes[1].cog_rad - 1.5708) < 1e-3              # east
    on_fix(_fix(tb, 3.0))                      # epoch 3's velocity never comes: no speed rather than a stale one
    assert src.poll(3.5).gps[0].sog_mps is None
