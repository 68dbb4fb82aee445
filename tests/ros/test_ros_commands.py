"""Commanding a running boat: `autopilot command` from another process, and a gamepad driving MANUAL."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rclpy
from sensor_msgs.msg import Joy

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.files.boat import load_boat_config
from autopilot.ros.qos import sensor_qos
from autopilot.ros.runner import BoatProcess
from autopilot.vocab.config import load_mission, load_vessel
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def _config(tmp_path: Path, ns: str, extra: str = "") -> Path:
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: sim\n"
                   f"ros: {{namespace: {ns}, nodes: [autopilot]}}\nlogging: {{enabled: false}}\n{extra}")
    return cfg


class BoatWithOperator:
    """A composed boat process (demo mission, FOKA, sim backend) and an operator's node (`name`) on its executor,
    in a context of their own; `spin`, `publish_for` drive both from the test's thread."""

    def __init__(self, cfg, operator_name: str):
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.proc = BoatProcess(cfg, load_vessel("foka"), load_mission(REPO / "config/missions/demo.yaml"),
                                context=self.ctx)
        self.node = self.proc.autopilot
        self.operator = rclpy.create_node(operator_name, context=self.ctx)
        self.proc.executor.add_node(self.operator)

    def spin(self, seconds: float, until=lambda: False) -> bool:
        """Spin for up to `seconds` [s] or until `until()` holds; return whether it holds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            self.proc.executor.spin_once(timeout_sec=0.01)
        return until()

    def publish_for(self, pub, msg, seconds: float) -> None:
        """Publish `msg` every 0.1 s for `seconds`, as a teleop or joy node streams."""
        end = time.monotonic() + seconds
        while True:
            pub.publish(msg)
            self.spin(0.1)
            if time.monotonic() >= end:
                return

    def close(self) -> None:
        self.proc.stop()
        rclpy.shutdown(context=self.ctx)


def _cli(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "autopilot.cli", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def test_cli_commands_reach_the_running_autopilot_and_refusals_exit_non_zero(tmp_path):
    cfg = _config(tmp_path, f"/cmd{os.getpid()}")
    made = _cli("keys", "token", "--config", str(cfg))
    assert made.returncode == 0 and (tmp_path / "command.token").stat().st_mode & 0o777 == 0o600, made.stderr
    boat = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ok = None
        for _ in range(20):                       # the ESCs need their arming time before HOLD can arm
            ok = _cli("command", "--config", str(cfg), "arm")
            if ok.returncode == 0:
                break
            time.sleep(0.5)
        assert ok.returncode == 0 and "armed" in ok.stdout, ok.stdout + ok.stderr
        bad = _cli("command", "--config", str(cfg), "mode", "DRIFT")
        assert bad.returncode == 1 and "DRIFT" in bad.stdout, bad.stdout + bad.stderr
        manual = _cli("command", "--config", str(cfg), "mode", "MANUAL")
        assert manual.returncode == 0 and "MANUAL" in manual.stdout, manual.stdout + manual.stderr
    finally:
        boat.terminate()
        out, _ = boat.communicate(timeout=30)
    assert boat.returncode == 0, out
    assert "HOLD -> MANUAL" in out


def test_no_autopilot_running_is_a_clear_error(tmp_path):
    cfg = str(_config(tmp_path, "/nobody_home"))
    r = _cli("command", "--config", cfg, "--timeout", "1", "arm")
    assert r.returncode == 2 and "cannot sign" in r.stderr and "autopilot keys token" in r.stderr
    assert _cli("keys", "token", "--config", cfg).returncode == 0
    r = _cli("command", "--config", cfg, "--timeout", "1", "arm")
    assert r.returncode == 1 and "no autopilot answered" in r.stderr


def test_gamepad_drives_manual_only_while_the_enable_button_is_held(tmp_path):
    from std_msgs.msg import String

    from autopilot.commands.auth import read_token, sign, write_new_token
    from autopilot.ros.qos import command_qos
    write_new_token(tmp_path / "command.token")
    boat = BoatWithOperator(load_boat_config(_config(tmp_path, "/joy", "commands: {joystick_nodes: [gamepad]}\n")),
                            "gamepad")
    try:
        node = boat.node
        pub = boat.operator.create_publisher(Joy, "/joy/joy", sensor_qos(10))
        # the operator binds the gamepad's publisher (a signed command): a Joy message carries no token
        cmd = boat.operator.create_publisher(String, "/joy/autopilot/command", command_qos(10))
        assert boat.spin(10, lambda: cmd.get_subscription_count() > 0 and pub.get_subscription_count() > 0)
        cmd.publish(String(data=sign(read_token(tmp_path / "command.token"), "op", "joystick gamepad")))
        assert boat.spin(5, lambda: bool(node._joy_gids))
        assert boat.spin(10, lambda: bool(node.arm()[0]))
        assert node.set_mode("MANUAL", "test")[0]
        boat.publish_for(pub, Joy(axes=[0.0, 0.8, 0.0, 0.0], buttons=[0, 0, 0, 0, 1]), 1.0)
        assert node.last_result.mode == "MANUAL"
        assert sum(node.last_result.thrust.thrust_n) > 5.0          # throttle forward
        boat.publish_for(pub, Joy(axes=[0.0, 0.8, 0.0, 0.0], buttons=[0, 0, 0, 0, 0]), 2.0)
        assert sum(abs(f) for f in node.last_result.thrust.thrust_n) == 0.0     # released: times out to neutral
    finally:
        boat.close()


def test_cmd_vel_drives_velocity_mode_and_is_refused_in_other_modes(tmp_path):
    """A teleop node's geometry_msgs/Twist (REP-103: angular.z counter-clockwise) over real DDS: refused in HOLD,
    in VELOCITY a negative angular.z turns the boat to starboard."""
    from geometry_msgs.msg import Twist
    boat = BoatWithOperator(load_boat_config(_config(tmp_path, "/vel", "commands: {joystick_nodes: [teleop]}\n")),
                            "teleop")
    try:
        node, spin = boat.node, boat.spin
        pub = boat.operator.create_publisher(Twist, "/vel/cmd_vel", 10)   # default (reliable) QoS, as teleop uses

        def send(x, z, seconds):
            msg = Twist()
            msg.linear.x, msg.angular.z = x, z
            boat.publish_for(pub, msg, seconds)

        said = []
        node.desk.add_listener(lambda text, err: said.append(text))
        assert spin(10, lambda: bool(node.arm()[0]))
        end = time.monotonic() + 10.0          # until discovery has matched the teleop and a refusal came back
        while time.monotonic() < end and not any("velocity command refused" in t for t in said):
            send(0.8, 0.0, 0.2)
        send(0.8, 0.0, 0.5)                     # and a stream of them is refused once, not per message
        assert node.last_result.mode == "HOLD" and sum(abs(f) for f in node.last_result.thrust.thrust_n) == 0.0
        assert node.set_mode("VELOCITY", "test")[0]
        assert spin(10, lambda: node.last_result.mode == "VELOCITY")
        send(0.8, -0.15, 3.0)
        w = node.last_result.wrench
        assert node.last_result.mode == "VELOCITY" and w.surge_n > 0.0 and w.yaw_nm > 0.0
        refusals = [t for t in said if "velocity command refused" in t]
        assert len(refusals) == 1 and "HOLD" in refusals[0] and "teleop" in refusals[0]   # once, not per message
    finally:
        boat.close()
