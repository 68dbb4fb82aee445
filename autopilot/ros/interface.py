"""THE table of the autopilot's ROS 2 topics: name, type, QoS, frame, rate and unit of each, in one place.

The live nodes (autopilot/ros/*_node.py) take each publisher's QoS from here, the run log (run.mcap + its
metadata.yaml) writes exactly these topics with these types and offered QoS, the manual's
`docs/reference/ros.md` is generated from it (`python scripts/gen_reference.py`; a test checks the two agree),
and a test compares the table with the publishers a running boat process really has. Pure data: no rclpy.

Names are the boat config's `ros.topics` entries (relative to `ros.namespace` unless absolute); `{name}` is a
thruster's name from the vessel file. Frames are keys of the boat config's `ros.frames` (REP-105 defaults:
map, odom, base_link, gnss_link, imu_link).

`live` says where a topic appears:
- "always": published by a running boat process (the sensor topics by its gnss / imu nodes, when they run);
- "tf2_msgs": /tf and /tf_static, broadcast where tf2_msgs is importable (a system ROS 2's, or the one
  scripts/build_tf2_msgs.sh builds into a venv of PyPI's ROS wheels, which have none); the run log carries them
  everywhere;
- "log": only in the run log (the simulated plant's truth; a boat has none).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class QosKind:
    """A QoS profile as data: what rclpy's QoSProfile and rosbag2's offered_qos_profiles are made from."""

    reliability: str          # "reliable" | "best_effort"
    durability: str           # "volatile" | "transient_local"
    depth: Optional[int]      # history depth (keep last); None: the boat config's ros.qos depth of that kind
    depth_from: str = ""      # "sensor_depth" | "command_depth" when depth is None


QOS: Dict[str, QosKind] = {
    "sensor": QosKind("best_effort", "volatile", None, "sensor_depth"),
    "derived": QosKind("reliable", "volatile", None, "command_depth"),
    "command": QosKind("reliable", "volatile", None, "command_depth"),
    "events": QosKind("reliable", "volatile", 50),
    "diagnostics": QosKind("reliable", "volatile", 10),
    "latched": QosKind("reliable", "transient_local", 1),
    "tf": QosKind("reliable", "volatile", 100),                  # tf2_ros.TransformBroadcaster's default
    "tf_static": QosKind("reliable", "transient_local", 1),      # tf2_ros.StaticTransformBroadcaster's
    "rosout": QosKind("reliable", "transient_local", 1000),      # rcl's /rosout publisher
}


@dataclass(frozen=True)
class Topic:
    """One row of the interface. `key` is the ros.topics field naming it (or the fixed name when it starts
    with '/'); `publisher` the node (suffix of ros.node_prefix) that publishes it live."""

    key: str
    type: str                 # ROS 2 interface name, pkg/msg/Name
    qos: str                  # key of QOS
    frame: str                # key of ros.frames (header.frame_id), "" for headerless messages
    rate: str                 # when it is published
    unit: str                 # units and conventions of its fields
    publisher: str            # gnss | imu | autopilot | diagnostics | (every node) | simulator
    live: str = "always"      # always | tf2_msgs | log
    per_thruster: bool = False
    child_frame: str = ""


TOPICS: Tuple[Topic, ...] = (
    Topic("gnss_fix", "sensor_msgs/msg/NavSatFix", "sensor", "gnss", "each receiver epoch (sensors.gnss.rate_hz)",
          "deg (WGS84), m; position_covariance ENU [m^2], APPROXIMATED from the CEP", "gnss"),
    Topic("gnss_vel", "geometry_msgs/msg/TwistWithCovarianceStamped", "sensor", "odom",
          "each valid epoch with speed and course", "m/s, ENU axes (x east, y north)", "gnss"),
    Topic("imu", "sensor_msgs/msg/Imu", "sensor", "imu", "each IMU sample the loop reads (sensors.imu.rate_hz)",
          "rad/s, m/s^2, FLU; no orientation (orientation_covariance[0] = -1)", "imu"),
    Topic("mag", "sensor_msgs/msg/MagneticField", "sensor", "imu", "each magnetometer sample",
          "T, FLU", "imu"),
    Topic("odometry", "nav_msgs/msg/Odometry", "derived", "odom", "ros.state_rate_hz (10 Hz), while valid",
          "pose m / quaternion in odom (ENU), twist m/s, rad/s in base_link (FLU)", "autopilot",
          child_frame="base_link"),
    Topic("filtered_fix", "sensor_msgs/msg/NavSatFix", "derived", "base_link", "ros.state_rate_hz, while valid",
          "deg (WGS84); covariance m^2", "autopilot"),
    Topic("path", "nav_msgs/msg/Path", "latched", "odom", "on a new mission and every 5 s",
          "m, ENU; each pose faces along its leg", "autopilot"),
    Topic("desired_yaw", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz, with a setpoint",
          "rad, ENU yaw (from east, counter-clockwise)", "autopilot"),
    Topic("yaw", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz", "rad, ENU yaw", "autopilot"),
    Topic("desired_heading", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz, with a setpoint",
          "deg, compass (from north, clockwise) [0, 360)", "autopilot"),
    Topic("heading", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz",
          "deg, compass [0, 360)", "autopilot"),
    Topic("desired_speed", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz, with a setpoint", "m/s",
          "autopilot"),
    Topic("speed", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz", "m/s, estimated surge",
          "autopilot"),
    Topic("cross_track_error", "std_msgs/msg/Float64", "derived", "", "ros.state_rate_hz, with a setpoint",
          "m, + right of the leg", "autopilot"),
    Topic("waypoint_index", "std_msgs/msg/Int32", "derived", "", "ros.state_rate_hz", "index into the mission",
          "autopilot"),
    Topic("thrust", "std_msgs/msg/Float64", "command", "", "ros.state_rate_hz, and 0 at once on stop",
          "N, + pushes forward", "autopilot", per_thruster=True),
    Topic("pulse", "std_msgs/msg/UInt16", "command", "", "ros.state_rate_hz, and neutral at once on stop",
          "us, ESC pulse width", "autopilot", per_thruster=True),
    Topic("state", "std_msgs/msg/String", "latched", "", "on change, else every 10th state cycle",
          "JSON: mode, armed, mission, waypoint_index, waypoints_reached/total, mission_complete, time_s",
          "autopilot"),
    Topic("events", "std_msgs/msg/String", "events", "", "on each event", "text: [kind] message", "autopilot"),
    Topic("diagnostics", "diagnostic_msgs/msg/DiagnosticArray", "diagnostics", "", "ros.diagnostics_rate_hz (1 Hz)",
          "string key/values, units in the keys", "diagnostics"),
    Topic("/tf", "tf2_msgs/msg/TFMessage", "tf", "", "ros.state_rate_hz, while valid",
          "map -> odom (identity) and odom -> base_link, m / quaternion", "autopilot", live="tf2_msgs"),
    Topic("/tf_static", "tf2_msgs/msg/TFMessage", "tf_static", "", "once at start",
          "base_link -> gnss_link (antenna_x/y_m), base_link -> imu_link (identity: readings are in body axes)",
          "autopilot", live="tf2_msgs"),
    Topic("/rosout", "rcl_interfaces/msg/Log", "rosout", "", "each log line",
          "level, node name, text (events: 'kind: message')", "(every node)"),
    Topic("sim/truth/odometry", "nav_msgs/msg/Odometry", "derived", "odom", "the log's rate, simulation only",
          "the simulated plant's true pose and velocity, as odometry", "simulator", live="log",
          child_frame="base_link"),
)

BY_KEY: Dict[str, Topic] = {t.key: t for t in TOPICS}


def topic_name(ros, key: str, thruster: str = "") -> str:
    """The absolute name of the topic `key` for boat config section `ros` (autopilot.files.boat.RosConfig)."""
    from autopilot.files.boat import resolve_topic
    if key.startswith("/"):
        return key
    raw = getattr(ros.topics, key, key)
    if thruster:
        raw = raw.replace("{name}", thruster)
    return resolve_topic(ros.namespace, raw)


def qos_depth(kind: str, ros) -> int:
    q = QOS[kind]
    return q.depth if q.depth is not None else int(getattr(ros.qos, q.depth_from))


@dataclass(frozen=True)
class ResolvedTopic:
    name: str                 # absolute topic name
    topic: Topic
    thruster: str = ""        # the thruster's name for per-thruster topics
    thruster_index: int = -1


def resolved_topics(ros, thruster_names: Sequence[str], live: Sequence[str] = ("always", "tf2_msgs", "log"),
                    nodes: Optional[Sequence[str]] = None) -> List[ResolvedTopic]:
    """Every topic of the table with its absolute name for this boat (one per thruster where per_thruster).

    `live` filters by where a topic appears; `nodes` (e.g. ros.nodes) keeps only topics whose publisher runs
    (rows published by every node or by the simulator are kept).
    """
    out = []
    for t in TOPICS:
        if t.live not in live:
            continue
        if nodes is not None and t.publisher in ("gnss", "imu", "autopilot", "diagnostics") \
                and t.publisher not in nodes:
            continue
        if t.per_thruster:
            out += [ResolvedTopic(topic_name(ros, t.key, n), t, n, i) for i, n in enumerate(thruster_names)]
        else:
            out.append(ResolvedTopic(topic_name(ros, t.key), t))
    return out


def markdown() -> str:
    """docs/reference/ros.md: the table above for people."""
    lines = [
        "# The autopilot's ROS 2 interface",
        "",
        "Generated from `autopilot/ros/interface.py` (`python scripts/gen_reference.py`); a test fails when the",
        "two differ. The live nodes and the run log (`run.mcap` + `metadata.yaml`, a rosbag2",
        "directory) both use that table. Names are the boat config's `ros.topics` defaults, relative to",
        "`ros.namespace`; `{name}` is a thruster's name. Frames are `ros.frames` keys (defaults: map, odom,",
        "base_link, gnss_link, imu_link). Inside the autopilot everything is NED/FRD with compass headings; on these",
        "topics it is ENU/FLU (REP-103/105), converted in `autopilot/ros/frames.py`.",
        "",
        "| topic | type | QoS | frame | rate | unit | publisher | where |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    from autopilot.files.boat import TopicsConfig
    defaults = TopicsConfig()
    where = {"always": "live + log", "tf2_msgs": "live where tf2_msgs is installed + log", "log": "log (simulation)"}
    for t in TOPICS:
        name = t.key if t.key.startswith("/") else getattr(defaults, t.key, t.key)
        q = QOS[t.qos]
        depth = q.depth if q.depth is not None else f"ros.qos.{q.depth_from}"
        qos = f"{q.reliability}, {q.durability}, depth {depth}"
        frame = t.frame + (f" -> {t.child_frame}" if t.child_frame else "")
        lines.append(f"| `{name}` | {t.type} | {qos} | {frame or '-'} | {t.rate} | {t.unit} | {t.publisher} | "
                     f"{where[t.live]} |")
    lines += [
        "",
        "Not topics of this table: rcl's own `/parameter_events` (every node), the subscriptions `autopilot/command`",
        "(std_msgs/String), `joy` (sensor_msgs/Joy), `cmd_vel` (geometry_msgs/Twist, best effort: VELOCITY's surge",
        "speed in m/s and yaw rate in rad/s, counter-clockwise; in GUIDED its body velocity target), `goal_pose`",
        "(geometry_msgs/PoseStamped, reliable: GUIDED's position target, x east and y north in m in `map` or `odom`,",
        "orientation not used) and `/clock` (under use_sim_time), and the services `autopilot/arm`",
        "(std_srvs/SetBool) and `autopilot/hold` (std_srvs/Trigger).",
        "",
        "Azimuth pods (vessel thrusters with `azimuth:`): with backend gazebo each pod's angle leaves on its",
        "`gazebo.thrusters[].angle_topic` (std_msgs/Float64, joint position in rad = angle x `angle_scale`, every",
        "cycle, bridge QoS; VRX: `/wamv/thrusters/{name}/pos`). The autopilot's own topics and the run log do not",
        "carry the angle yet.",
        "",
        "In the run log the topics the node publishes at `ros.state_rate_hz` come at the log's rate",
        "(`logging.rate_hz`, default 10 Hz, up to every cycle), the sensors with every sample the loop read, the path",
        "once per mission, the state on change and every second (mode, armed, waypoint_index, time_s). Its",
        "`/diagnostics` carries the whole state.csv row as key/values once a second (the live one has a status per",
        "component), and its `/rosout` the run's events. On a wall-clock boat its header stamps are the published",
        "ones (the node's time base). A process without the gnss / imu nodes (`ros.nodes`, e.g. the gazebo backend,",
        "whose sensors arrive on the bridge's topics) still logs the samples it read under the names above.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
