"""Isolation for the ROS 2 tests: one DDS domain per test session, discovery kept on this machine.

Imported first by every tests/test_ros_*.py. It imports rclpy on purpose: a machine without rclpy FAILS the ROS
tests (ImportError at collection) instead of skipping them.
"""
import os

os.environ["ROS_DOMAIN_ID"] = os.environ.get("AUTOPILOT_TEST_DOMAIN_ID") or str(10 + os.getpid() % 90)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ["AUTOPILOT_TEST_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"]   # child processes share the session's

import rclpy  # noqa: E402,F401  (must fail loudly when missing)

DOMAIN_ID = int(os.environ["ROS_DOMAIN_ID"])
