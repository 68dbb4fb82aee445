"""The one table of ROS 2 topics (autopilot/ros/interface.py): the doc is generated from it, every type in it
can be written to run.mcap, and names follow the boat config."""

from mcap_ros2._dynamic import serialize_dynamic

from autopilot.files.boat import RosConfig, TopicsConfig
from autopilot.ros.interface import QOS, TOPICS, markdown, resolved_topics
from autopilot.runlog.ros2_schemas import schema_text
from tests.support.paths import REPO


def test_the_interface_doc_is_the_table():
    doc = (REPO / "docs" / "reference" / "ros.md").read_text(encoding="utf-8")
    assert doc == markdown(), "docs/reference/ros.md is stale: run python scripts/gen_reference.py to update"


def test_every_row_names_a_config_topic_a_known_qos_and_a_writable_type():
    fields = set(TopicsConfig.__dataclass_fields__)
    for t in TOPICS:
        assert t.key.startswith("/") or t.key in fields or t.live == "log", t.key
        assert t.qos in QOS, t.key
        serialize_dynamic(t.type, schema_text(t.type))          # raises on a type run.mcap cannot encode


def test_names_resolve_under_the_namespace_with_one_topic_per_thruster():
    names = {r.name for r in resolved_topics(RosConfig(namespace="/wamv"), ["left", "right"], live=("always",))}
    assert {"/wamv/thrusters/left/thrust", "/wamv/thrusters/right/pulse_us", "/wamv/imu/data", "/diagnostics",
            "/rosout"} <= names
    assert "/tf" not in names and "/wamv/sim/truth/odometry" not in names
    only = {r.name for r in resolved_topics(RosConfig(), [], live=("always",), nodes=("autopilot",))}
    assert "/imu/data" not in only and "/diagnostics" not in only and "/odometry/filtered" in only
