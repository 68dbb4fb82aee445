"""The composed boat process over real DDS (sim backend, wall clock): topics, types, frames, covariances, QoS,
commands, diagnostics, and neutral thrust when the autopilot node stops."""
import json
import math
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from autopilot.files.boat import load_boat_config
from autopilot.ros.qos import command_qos, latched_qos, sensor_qos
from autopilot.ros.runner import BoatProcess
from autopilot.vocab.config import load_mission, load_vessel
from tests.support import ros_env  # noqa: F401  (fails without rclpy)

NS = "/foka"


@pytest.fixture
def boat(tmp_path, repo_root):
    cfg_file = tmp_path / "boat.yaml"
    cfg_file.write_text(f"vessel: foka\nmission: {repo_root / 'config/missions/demo.yaml'}\nbackend: sim\n"
                        f"ros: {{namespace: {NS}}}\n"
                        "commands: {auth: off}\n")       # the arm service and bare commands, as on a closed bench
    cfg = load_boat_config(cfg_file)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    proc = BoatProcess(cfg, load_vessel("foka"), load_mission(repo_root / "config/missions/demo.yaml"), context=ctx,
                       config_file=str(cfg_file))
    probe = rclpy.create_node("probe", context=ctx)
    proc.executor.add_node(probe)
    yield proc, probe, ctx
    try:
        proc.executor.remove_node(probe)
        probe.destroy_node()
        if proc.autopilot.context.ok():
            proc.stop()
    finally:
        rclpy.shutdown(context=ctx)


def spin(executor, seconds, until=None):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
        if until is not None and until():
            return True
    return until is None


class Inbox:
    def __init__(self, node, msg_type, topic, qos):
        self.msgs = []
        node.create_subscription(msg_type, topic, self.msgs.append, qos)


def test_topics_types_frames_covariances_and_qos(boat):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import TwistWithCovarianceStamped
    from nav_msgs.msg import Odometry, Path
    from sensor_msgs.msg import Imu, MagneticField, NavSatFix
    from std_msgs.msg import Float64, String, UInt16

    proc, probe, _ = boat
    sq, cq = sensor_qos(50), command_qos(50)
    box = {name: Inbox(probe, t, f"{NS}/{topic}" if not topic.startswith("/") else topic, q) for name, t, topic, q in [
        ("fix", NavSatFix, "gnss/fix", sq), ("vel", TwistWithCovarianceStamped, "gnss/vel", sq),
        ("imu", Imu, "imu/data", sq), ("mag", MagneticField, "imu/mag", sq),
        ("odom", Odometry, "odometry/filtered", sq), ("ffix", NavSatFix, "gnss/filtered", sq),
        ("path", Path, "guidance/path", latched_qos()), ("state", String, "autopilot/state", latched_qos()),
        ("thrust", Float64, "thrusters/left/thrust", cq), ("pulse", UInt16, "thrusters/right/pulse_us", cq),
        ("diag", DiagnosticArray, "/diagnostics", cq)]}
    assert spin(proc.executor, 8.0, until=lambda: all(b.msgs for b in box.values())), \
        {k: len(b.msgs) for k, b in box.items()}

    fix = box["fix"].msgs[-1]
    assert fix.header.frame_id == "gnss_link" and fix.status.status >= 0
    assert box["vel"].msgs[-1].header.frame_id == "odom"          # ENU values, stamped with an ENU frame
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_APPROXIMATED
    sigma = 2.0 / 1.1774                                            # foka: 2.0 m CEP
    assert 0.3 * sigma ** 2 < fix.position_covariance[0] < 3 * sigma ** 2
    assert abs(fix.latitude - 51.11) < 0.01 and abs(fix.longitude - 17.06) < 0.01
    imu = box["imu"].msgs[-1]
    assert imu.header.frame_id == "imu_link" and imu.orientation_covariance[0] == -1.0
    assert imu.linear_acceleration.z == pytest.approx(9.81, abs=0.5)     # FLU: +g up when level
    assert imu.angular_velocity_covariance[0] > 0
    assert box["mag"].msgs[-1].header.frame_id == "imu_link"
    for name in ("imu", "mag"):      # one message object is reused per publisher: each sample still its own
        stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in box[name].msgs]
        assert all(b > a for a, b in zip(stamps, stamps[1:])), name
    odom = box["odom"].msgs[-1]
    assert (odom.header.frame_id, odom.child_frame_id) == ("odom", "base_link")
    assert odom.pose.covariance[0] > 0 and odom.pose.covariance[35] > 0
    path = box["path"].msgs[-1]
    assert path.header.frame_id == "odom" and len(path.poses) == 6
    assert box["pulse"].msgs[-1].data == 1500                     # disarmed: neutral pulse
    assert box["thrust"].msgs[-1].data == 0.0
    state = json.loads(box["state"].msgs[-1].data)
    assert state["mode"] == "HOLD" and state["armed"] is False and state["waypoints_total"] == 6

    diag = box["diag"].msgs[-1]
    names = {s.name: s for s in diag.status}
    for comp in ("GNSS", "IMU", "EKF", "Compass", "Turning", "ESC", "Loop timing"):
        assert f"autopilot: {comp}" in names, names.keys()
    assert {"mag_consistency_deg", "updates_accepted"} <= {kv.key for kv in names["autopilot: Compass"].values}
    assert {"turn_rate_scale", "hard_turn_samples"} <= {kv.key for kv in names["autopilot: Turning"].values}
    assert names["autopilot: GNSS"].hardware_id and names["autopilot: ESC"].hardware_id
    keys = {kv.key for kv in names["autopilot: Loop timing"].values}
    assert {"cost_p99_ms", "latency_p99_ms", "rate_hz"} <= keys

    # QoS as documented: sensors best effort, commands/actuators reliable, path and state latched
    def qos(topic):
        infos = probe.get_publishers_info_by_topic(topic)
        assert infos, f"no publisher on {topic}"
        return infos[0].qos_profile
    for topic in ("gnss/fix", "gnss/vel", "imu/data", "imu/mag"):
        assert qos(f"{NS}/{topic}").reliability == ReliabilityPolicy.BEST_EFFORT, topic
    for topic in ("thrusters/left/thrust", "thrusters/left/pulse_us", "autopilot/events", "odometry/filtered",
                  "gnss/filtered", "guidance/desired_heading_compass_deg", "guidance/desired_yaw",
                  "guidance/cross_track_error_m"):
        assert qos(f"{NS}/{topic}").reliability == ReliabilityPolicy.RELIABLE, topic
    for topic in ("guidance/path", "autopilot/state"):
        assert qos(f"{NS}/{topic}").durability == DurabilityPolicy.TRANSIENT_LOCAL, topic
    types = dict(probe.get_topic_names_and_types())
    assert types[f"{NS}/guidance/desired_heading_compass_deg"] == ["std_msgs/msg/Float64"]
    assert types[f"{NS}/guidance/yaw"] == ["std_msgs/msg/Float64"]
    assert types[f"{NS}/gnss/vel"] == ["geometry_msgs/msg/TwistWithCovarianceStamped"]


@pytest.mark.slow
def test_arm_and_mode_commands_then_neutral_when_the_node_stops(boat):
    from std_msgs.msg import Float64, String, UInt16
    from std_srvs.srv import SetBool

    proc, probe, ctx = boat
    cq = command_qos(50)
    left, pulses, events = [], [], []
    probe.create_subscription(Float64, f"{NS}/thrusters/left/thrust", lambda m: left.append(m.data), cq)
    probe.create_subscription(UInt16, f"{NS}/thrusters/left/pulse_us", lambda m: pulses.append(m.data), cq)
    probe.create_subscription(String, f"{NS}/autopilot/events", lambda m: events.append(m.data), cq)
    cmd = probe.create_publisher(String, f"{NS}/autopilot/command", cq)
    client = probe.create_client(SetBool, f"{NS}/autopilot/arm")
    assert client.wait_for_service(timeout_sec=5.0)
    fut = client.call_async(SetBool.Request(data=True))
    assert spin(proc.executor, 5.0, until=fut.done)
    assert fut.result().success, fut.result().message
    spin(proc.executor, 0.3)
    cmd.publish(String(data="mode AUTO"))
    cmd.publish(String(data="fly to the moon"))
    # with a GNSS fix (1 Hz) and a heading the boat drives: thrust leaves zero
    assert spin(proc.executor, 10.0, until=lambda: left and abs(left[-1]) > 0.5), left[-5:]
    assert any("unknown command" in e for e in events), events
    assert proc.autopilot.autopilot.mode.name == "AUTO"

    # the node stops (as on SIGTERM): 0 N and the neutral pulse go out, and nothing after them
    proc.autopilot.stop("test stop")
    tail = SingleThreadedExecutor(context=ctx)
    tail.add_node(probe)
    proc.executor.remove_node(probe)
    n_before = len(left)
    spin(tail, 1.0)
    tail.remove_node(probe)
    assert len(left) > n_before or left[-1] == 0.0
    assert left[-1] == 0.0 and pulses[-1] == 1500
    assert not proc.autopilot.autopilot.armed


def test_a_loop_that_keeps_missing_its_deadline_is_reported_and_held(boat):
    """The boat node measures its own cycles against the period; repeated overruns go to the failsafe."""
    proc, _, _ = boat
    node = proc.autopilot
    assert spin(proc.executor, 10.0, until=lambda: bool(node.arm()[0]))     # HOLD: needs only the ESC output
    backend_poll = node.backend.poll

    def slow_poll(t_s):
        time.sleep(0.05)                       # 50 ms in a 20 ms cycle: every cycle misses its deadline
        return backend_poll(t_s)

    node.backend.poll = slow_poll
    overrun = lambda: any(ev.kind == "failsafe" and "overrun" in ev.message.lower()  # noqa: E731
                          for ev in node.autopilot.events)
    assert spin(proc.executor, 10.0, until=overrun), [ev.message for ev in node.autopilot.events]


@pytest.mark.slow
def test_a_default_qos_subscriber_gets_every_derived_topic_and_a_late_volatile_one_the_path(boat):
    """What `ros2 topic echo` or a plain rclpy node (reliable, volatile, depth 10) sees."""
    from nav_msgs.msg import Odometry, Path
    from sensor_msgs.msg import NavSatFix
    from std_msgs.msg import Float64, Int32, String

    proc, probe, _ = boat
    t = proc.cfg.ros.topics
    derived = {"odom": (Odometry, t.odometry), "ffix": (NavSatFix, t.filtered_fix),
               "heading": (Float64, t.heading), "speed": (Float64, t.speed),
               "desired_heading": (Float64, t.desired_heading), "desired_speed": (Float64, t.desired_speed),
               "xte": (Float64, t.cross_track_error), "wp": (Int32, t.waypoint_index),
               "yaw": (Float64, t.yaw), "desired_yaw": (Float64, t.desired_yaw)}
    got = {k: [] for k in derived}
    for k, (msg_type, topic) in derived.items():
        probe.create_subscription(msg_type, f"{NS}/{topic}", got[k].append, 10)     # the default QoS
    from std_srvs.srv import SetBool  # setpoints flow once the boat flies AUTO
    client = probe.create_client(SetBool, f"{NS}/autopilot/arm")
    assert client.wait_for_service(timeout_sec=5.0)
    fut = client.call_async(SetBool.Request(data=True))
    assert spin(proc.executor, 5.0, until=fut.done) and fut.result().success, fut.result()
    probe.create_publisher(String, f"{NS}/autopilot/command", command_qos(10)).publish(String(data="mode AUTO"))
    assert spin(proc.executor, 10.0, until=lambda: all(got.values())), {k: len(v) for k, v in got.items()}
    # one convention on the wire: the yaw topic is odometry's yaw (ENU, rad); the compass one is the same angle
    assert spin(proc.executor, 5.0, until=lambda: len(got["odom"]) >= 3 and len(got["yaw"]) >= 3)
    o = got["odom"][-1].pose.pose.orientation                     # the textbook yaw of a quaternion (tf2's)
    odom_yaw = math.atan2(2.0 * (o.w * o.z + o.x * o.y), 1.0 - 2.0 * (o.y * o.y + o.z * o.z))
    yaws = [m.data for m in got["yaw"][-3:]]
    assert min(abs(math.remainder(y - odom_yaw, math.tau)) for y in yaws) < math.radians(1.0), (yaws, odom_yaw)
    compass = got["heading"][-1].data
    assert 0.0 <= compass < 360.0
    assert abs(math.remainder(math.radians(90.0 - compass) - yaws[-1], math.tau)) < math.radians(1.0)
    assert -math.pi <= got["desired_yaw"][-1].data <= math.pi
    late = []
    probe.create_subscription(Path, f"{NS}/{t.path}", late.append, 10)            # volatile, joins late
    assert spin(proc.executor, 8.0, until=lambda: late), "the path never reached a late volatile subscriber"
    assert len(late[-1].poses) == 6
