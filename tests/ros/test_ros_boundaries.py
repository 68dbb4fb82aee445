"""rclpy (and the ROS message packages) stay inside autopilot/ros/ and hil/ros/ (the ROS stand-ins)."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ros_env  # noqa: F401  (fails without rclpy)
from tests.support.paths import REPO

ROS_MODULES = {"rclpy", "std_msgs", "std_srvs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs",
               "rosgraph_msgs", "builtin_interfaces", "tf2_ros", "tf2_msgs", "launch", "launch_ros"}
PACKAGES = ("autopilot", "drivers", "estimation", "hil", "benchmarks")


def allowed(rel: Path) -> bool:
    parts = rel.parts
    if parts[:2] in (("autopilot", "ros"), ("hil", "ros")):
        return True
    return parts[0] == "benchmarks" and "ros" in rel.stem.split("_")


def ros_imports(path: Path) -> list:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.relative_to(REPO)}:{node.lineno} imports {n}" for n in names
                  if n.split(".")[0] in ROS_MODULES]
    return found


@pytest.mark.slow
def test_no_ros_import_outside_the_ros_adapters():
    offenders = []
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            rel = path.relative_to(REPO)
            if not allowed(rel):
                offenders += ros_imports(path)
    assert not offenders, ("ROS imported outside autopilot/ros, hil/ros and the ROS-named benchmark files:\n"
                           + "\n".join(offenders))


def test_the_scan_would_catch_an_offender(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import math\nfrom rclpy.node import Node\n")
    tree_hits = [n for n in ast.walk(ast.parse(bad.read_text())) if isinstance(n, ast.ImportFrom)]
    assert tree_hits and tree_hits[0].module.split(".")[0] in ROS_MODULES
    assert not allowed(Path("autopilot/vehicle.py")) and not allowed(Path("hil/sim/plant.py"))
    assert allowed(Path("autopilot/ros/frames.py")) and allowed(Path("hil/ros/gazebo_standin.py"))


@pytest.mark.slow
def test_importing_the_core_and_the_cli_loads_no_ros():
    code = (
        "import sys, autopilot.vehicle, autopilot.cli.main, autopilot.files.boat, hil.sim.runner\n"
        "import estimation.navekf.ekf\n"
        "autopilot.cli.main.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in %r)\n"
        "print(','.join(bad)); sys.exit(1 if bad else 0)" % (ROS_MODULES,)
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"ROS modules loaded by the core: {r.stdout} {r.stderr[-2000:]}"
