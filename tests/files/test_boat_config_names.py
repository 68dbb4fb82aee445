"""ROS names in the boat config are checked as rclpy checks them, so `autopilot check` refuses what would
otherwise pass it and then stop `autopilot run` with an rclpy InvalidNamespace traceback."""
from __future__ import annotations

import pytest

from autopilot.cli.main import main
from tests.support.paths import REPO

DEMO = REPO / "config" / "missions" / "demo.yaml"


@pytest.mark.parametrize("ros, key, words", [
    ('{namespace: "/foka; rm -rf /"}', "ros.namespace", "is not a ROS namespace"),
    ("{namespace: /foka//x}", "ros.namespace", "'//'"),
    ("{node_prefix: 9lives}", "ros.node_prefix", "is not a ROS node name"),
    ("{topics: {command: ''}}", "ros.topics.command", "is not a ROS topic name: empty"),
    ("{topics: {odometry: 'odom etry'}}", "ros.topics.odometry", "is not a ROS topic name"),
])
def test_check_refuses_a_name_rclpy_would_refuse(tmp_path, capsys, ros, key, words):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {DEMO}\nbackend: sim\nros: {ros}\n")
    assert main(["check", str(cfg)]) == 1
    out = capsys.readouterr()
    line = next(ln for ln in (out.out + out.err).splitlines() if key in ln)
    assert str(cfg) in line and words in line


def test_names_rclpy_takes_pass(tmp_path, capsys):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {DEMO}\nbackend: sim\n"
                   "ros: {namespace: /lake_2/foka, topics: {joystick: '', cmd_vel: '~/cmd_vel', "
                   "diagnostics: /diagnostics}}\n")
    assert main(["check", str(cfg)]) == 0, capsys.readouterr()
