"""GUIDED from ROS 2 over real DDS: a geometry_msgs/PoseStamped goal in `map` (REP-105 ENU: x east, y north) is
the position target, reached by the simulated boat; goals in another frame, from a node not allowed, or outside
GUIDED are refused with the reason; cmd_vel in GUIDED is its body velocity target (REP-103: angular.z
counter-clockwise)."""
import math
import time

import pytest
from geometry_msgs.msg import PoseStamped, Twist

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.files.boat import load_boat_config
from autopilot.ros import frames
from tests.ros.test_ros_commands import BoatWithOperator, _config

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

ACCEPT_M = 2.0          # config/missions/demo.yaml's acceptance radius


def _goal(frame_id, x, y):
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.pose.position.x, msg.pose.position.y = float(x), float(y)
    msg.pose.orientation.w = 1.0
    return msg


def test_goal_to_ned_takes_enu_x_as_east_and_refuses_other_frames():
    assert frames.goal_to_ned("map", 3.0, 7.0, ("map", "odom")) == (7.0, 3.0)
    assert frames.goal_to_ned("/odom", -2.0, 1.0, ("map", "odom")) == (1.0, -2.0)
    assert "not 'map' or 'odom'" in frames.goal_to_ned("base_link", 1.0, 1.0, ("map", "odom"))
    assert "finite" in frames.goal_to_ned("map", math.nan, 1.0, ("map", "odom"))


def test_a_goal_pose_in_map_is_reached_in_guided_and_cmd_vel_is_its_velocity_target(tmp_path):
    cfg = load_boat_config(_config(tmp_path, "/gd", "commands: {joystick_nodes: [planner], goal_nodes: [planner]}\n"))
    boat = BoatWithOperator(cfg, "planner")
    stranger = None
    try:
        node, spin = boat.node, boat.spin
        ap = node.autopilot
        said = []
        node.desk.add_listener(lambda text, err: said.append(text))
        goals = boat.operator.create_publisher(PoseStamped, "/gd/goal_pose", 10)
        import rclpy
        stranger = rclpy.create_node("stranger", context=boat.ctx)
        boat.proc.executor.add_node(stranger)
        stranger_goals = stranger.create_publisher(PoseStamped, "/gd/goal_pose", 10)

        def until_said(fragment, pub, msg, seconds=10.0):
            end = time.monotonic() + seconds         # until discovery has matched the publisher
            while time.monotonic() < end and not any(fragment in t for t in said):
                pub.publish(msg)
                spin(0.3)
            return next((t for t in said if fragment in t), None)

        def beating(seconds, until):
            """Spin while the operator's station sends its heartbeat (as `autopilot command heartbeat` does)."""
            end = time.monotonic() + seconds
            while time.monotonic() < end and not until():
                with node.lock:
                    node.desk.heartbeat("test station")
                spin(0.5, until)
            return until()

        # outside GUIDED: refused
        assert until_said("not GUIDED", goals, _goal("map", 5.0, 5.0)), said[-5:]
        assert node.set_mode("GUIDED", "test")[0]
        assert spin(60, lambda: bool(node.arm()[0]) and ap.nav is not None and ap.nav.valid), said[-5:]
        assert spin(30, lambda: node.last_result.mode == "GUIDED" and ap.armed and not ap._enter_pending)
        n0, e0 = ap.nav.north_m, ap.nav.east_m
        # a frame that is not a world frame, and a node not in commands.goal_nodes: refused with the reason
        assert until_said("is not 'map' or 'odom'", goals, _goal("base_link", 3.0, 0.0)), said[-5:]
        assert until_said("not in commands.goal_nodes", stranger_goals, _goal("map", e0, n0 + 5.0)), said[-5:]
        assert ap.guided_target is None
        # 8 m north and 6 m east of the boat, in ENU: x = east, y = north
        target_n, target_e = n0 + 8.0, e0 + 6.0
        assert until_said("m E accepted", goals, _goal("map", target_e, target_n)), said[-5:]
        (tn, te), _ = ap.guided_target
        assert abs(tn - target_n) < 1e-6 and abs(te - target_e) < 1e-6
        # the goal counted as a heartbeat; the station goes on beating (the link-loss failsafe watches it)
        assert beating(60, lambda: math.hypot(ap.nav.north_m - target_n, ap.nav.east_m - target_e) <= ACCEPT_M), \
            (ap.nav.north_m - target_n, ap.nav.east_m - target_e, [ev.message for ev in ap.events[-5:]])
        assert beating(10, lambda: any("reached" in ev.message for ev in ap.events[-20:]))
        assert node.last_result.mode == "GUIDED"
        # cmd_vel in GUIDED: ahead and (angular.z < 0) to starboard, as VELOCITY flies it
        vel = boat.operator.create_publisher(Twist, "/gd/cmd_vel", 10)
        msg = Twist()
        msg.linear.x, msg.angular.z = 0.6, -0.15
        boat.publish_for(vel, msg, 3.0)
        w = node.last_result.wrench
        assert node.last_result.mode == "GUIDED" and w.surge_n > 0.0 and w.yaw_nm > 0.0, w
        assert ap.guided_target is None                      # the velocity target replaced the position one
        assert spin(5, lambda: sum(abs(f) for f in node.last_result.thrust.thrust_n) == 0.0)   # and times out
    finally:
        if stranger is not None:
            stranger.destroy_node()
        boat.close()
