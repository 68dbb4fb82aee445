"""Boat config validation: each mistake is an error naming the file, the key and the reason."""
import pytest

from autopilot.files.boat import load_boat_config, resolve_topic
from autopilot.vocab.config import ConfigError
from tests.support import ros_env  # noqa: F401  (the ROS test group fails without rclpy)

GAZEBO = """
gazebo:
  gnss: {topic: /x/gnss/fix}
  imu: {topic: /x/imu/data}
  mag: {from_imu_orientation: true}
  thrusters:
    - {name: left, topic: /model/x/joint/l/cmd_thrust}
    - {name: right, topic: /model/x/joint/r/cmd_thrust}
"""


def write(tmp_path, text):
    p = tmp_path / "boat.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, key, reason", [
    ("vessel: foka\nbackend: boat\n", "backend", "must be one of"),
    ("vessel: foka\nbackend: gazebo\n", "gazebo", "required when backend is gazebo"),
    ("vessel: foka\nros: {namespace: foka}\n", "ros.namespace", "must start with '/'"),
    ("vessel: foka\nros: {nodes: [gnss, imu]}\n", "ros.nodes", "must include 'autopilot'"),
    ("vessel: foka\nros: {nodes: [autopilot, radar]}\n", "ros.nodes[1]", "must be one of"),
    ("vessel: foka\nros: {qos: {sensor_depth: 0}}\n", "ros.qos.sensor_depth", "at least 1"),
    ("vessel: foka\nros: {frames: {odom: odom, bse_link: b}}\n", "ros.frames.bse_link", "unknown key"),
    ("vessel: nosuchboat\n", "", "file not found"),
    ("vessel: foka\nbackend: gazebo\n" + GAZEBO.replace("name: right", "name: starboard"),
     "gazebo.thrusters[1].name", "no thruster 'starboard'"),
    ("vessel: foka\nbackend: gazebo\n" + GAZEBO.replace("mag: {from_imu_orientation: true}", "mag: {}"),
     "gazebo.mag", "give a topic or set from_imu_orientation"),
    ("vessel: foka\nbackend: gazebo\nros: {namespace: /model/x/joint/l, topics: {thrust: cmd_thrust}}\n" + GAZEBO,
     "gazebo.thrusters[0].topic", "also the autopilot's own thrust topic"),
])
def test_bad_boat_configs_name_file_key_and_reason(tmp_path, text, key, reason):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_boat_config(path)
    assert e.value.key == key and reason in e.value.reason, str(e.value)


def test_shipped_boat_configs_load_and_resolve(repo_root):
    for f in ("config/boat.yaml", "config/gazebo/wamv_boat.yaml", "config/gazebo/foka_boat.yaml"):
        cfg = load_boat_config(repo_root / f)
        assert cfg.vessel_path().exists() and cfg.mission_path().exists()
    cfg = load_boat_config(repo_root / "config/gazebo/wamv_boat.yaml")
    assert cfg.backend == "gazebo" and cfg.gazebo.mag.from_imu_orientation
    assert (
        resolve_topic(cfg.ros.namespace, cfg.ros.topics.thrust_topic("left")) == "/wamv/autopilot/thrusters/left/thrust"
    )
    assert resolve_topic("", "gnss/fix") == "/gnss/fix" and resolve_topic("/a", "/abs") == "/abs"


def test_run_logs_go_beside_the_boat_config_never_to_the_working_directory(tmp_path, monkeypatch):
    from autopilot.files.boat import load_boat_config
    boat = tmp_path / "boat" / "boat.yaml"
    boat.parent.mkdir()
    boat.write_text("vessel: foka\nbackend: sim\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("AUTOPILOT_LOG_DIR", raising=False)
    assert load_boat_config(boat).log_directory() == str(boat.parent.resolve() / "runs")
    monkeypatch.setenv("AUTOPILOT_LOG_DIR", "/var/lib/autopilot/runs")
    assert load_boat_config(boat).log_directory() == "/var/lib/autopilot/runs"
    boat.write_text("vessel: foka\nbackend: sim\nlogging: {dir: logs}\n")
    assert load_boat_config(boat).log_directory() == str(boat.parent.resolve() / "logs")
    boat.write_text("vessel: foka\nbackend: sim\nlogging: {enabled: false}\n")
    assert load_boat_config(boat).log_directory() is None
