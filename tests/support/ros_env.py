"""Isolation for the ROS 2 tests: one DDS domain per test session (per worker under pytest-xdist), discovery kept
on this machine.

Imported first by every tests/test_ros_*.py. It imports rclpy on purpose: a machine without rclpy FAILS the ROS
tests (ImportError at collection) instead of skipping them.
"""
import os
import zlib


def _session_domain() -> int:
    """10..89: one per pytest session, and under pytest-xdist one per worker of the session (its workers share
    PYTEST_XDIST_TESTRUNUID and are numbered gw0, gw1, ...), so parallel workers never hear each other."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return 10 + os.getpid() % 80
    run = zlib.crc32(os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getppid())).encode())
    return 10 + (run % 20) * 4 + int(worker.lstrip("gw") or 0) % 4


os.environ["ROS_DOMAIN_ID"] = os.environ.get("AUTOPILOT_TEST_DOMAIN_ID") or str(_session_domain())
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ["AUTOPILOT_TEST_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"]   # child processes share the session's

import rclpy  # noqa: E402,F401  (must fail loudly when missing)

DOMAIN_ID = int(os.environ["ROS_DOMAIN_ID"])
