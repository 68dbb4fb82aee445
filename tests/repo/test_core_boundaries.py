"""The core (vehicle, guidance, control, allocation, estimation, the plant and the thrust maps) imports no
ROS, no serial port, no pigpio and no I2C library: it runs and tests anywhere. Checked in a fresh interpreter."""
import json
import subprocess
import sys

import pytest

from tests.support.paths import REPO

CORE = [
    "autopilot.vehicle",
    "autopilot.guidance.path_following",
    "autopilot.control.heading_speed",
    "autopilot.control.allocation",
    "autopilot.modes",
    "estimation.navekf.ekf",
    "estimation.heading.mag_calibration",
    "estimation.heading.tilt_compensated",
    "autopilot.vocab.geodesy",
    "drivers.thrust_map",
    "hil.sim.plant",
    "hil.sim.sensor_models",
    "autopilot.cli",
]
HARDWARE_AND_ROS = ("rclpy", "serial", "pigpio", "smbus2", "adafruit_lsm9ds1", "board", "busio", "RPi")


def _modules_after_import(modules):
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "from autopilot.cli.main import build_parser; build_parser()\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_core_and_cli_import_no_hardware_or_ros_library():
    loaded = _modules_after_import(CORE)
    leaks = sorted(m for m in loaded if m.split(".")[0] in HARDWARE_AND_ROS)
    assert not leaks, f"the core pulled in {leaks}"


@pytest.mark.slow
def test_the_check_would_catch_a_leak():
    loaded = _modules_after_import(["drivers.lsm9ds1"])    # a driver: it wraps the Adafruit library
    assert any(m.split(".")[0] == "adafruit_lsm9ds1" for m in loaded)
