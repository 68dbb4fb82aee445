"""`python tests/support/no_ros.py ARGS...`: the autopilot CLI as on a machine without ROS 2 (Raspberry Pi OS):
rclpy, rmw, rosidl and every ROS message package fail to import, as they do where they are not installed. At
exit it says on stderr which of them were imported anyway (none, or the test fails). With NO_ROS_HIDE=0 nothing
is hidden and only that is said: what a process imports of ROS on a machine that has it."""
from __future__ import annotations

import atexit
import importlib.abc
import os
import sys
from pathlib import Path

ROS_PACKAGES = ("rclpy", "rpyutils", "rcl_interfaces", "builtin_interfaces", "std_msgs", "std_srvs", "sensor_msgs",
                "geometry_msgs", "nav_msgs", "diagnostic_msgs", "rosgraph_msgs", "tf2_msgs", "unique_identifier_msgs",
                "action_msgs", "service_msgs", "type_description_interfaces", "lifecycle_msgs")
ROS_PREFIXES = ("rosidl", "rmw", "rcl_", "ament")


def is_ros(name: str) -> bool:
    top = name.split(".")[0]
    return top in ROS_PACKAGES or top.startswith(ROS_PREFIXES)


class NoRos(importlib.abc.MetaPathFinder):
    """Finds every ROS module as missing."""

    def find_spec(self, fullname, path, target=None):
        if is_ros(fullname):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def _report() -> None:
    print(f"no_ros: ROS modules imported: {sorted(m for m in sys.modules if is_ros(m))}", file=sys.stderr)


if __name__ == "__main__":
    if os.environ.get("NO_ROS_HIDE", "1") != "0":
        sys.meta_path.insert(0, NoRos())
    sys.path[0] = str(Path(__file__).resolve().parents[2])     # the repository, not tests/support/
    atexit.register(_report)
    from autopilot.cli.main import main
    sys.exit(main(sys.argv[1:]))
