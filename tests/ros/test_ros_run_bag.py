"""The run log is the live graph: a boat process (sim backend, real DDS) logs a rosbag2 directory whose topics,
types and QoS are those its nodes publish, and whose messages are the ones it published; rosbags (an
independent reader) opens the run directory."""
import importlib.util
import json
import time

import pytest
import rclpy
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from autopilot.files.boat import load_boat_config
from autopilot.guidance.path_following import mission_frame
from autopilot.ros.qos import sensor_qos
from autopilot.ros.runner import BoatProcess
from autopilot.runtime.field_services import FieldServices
from autopilot.vocab.config import load_mission, load_vessel
from tests.support import ros_env  # noqa: F401  (fails without rclpy)

NS = "/foka"
RCL_ONLY = {"/parameter_events"}          # rcl's own, on every node: not part of the autopilot's interface
TF_TOPICS = {"/tf", "/tf_static"}         # live only where tf2_msgs is installed (scripts/build_tf2_msgs.sh)


@pytest.mark.slow
def test_the_bag_has_the_live_graphs_topics_types_qos_and_messages(tmp_path, repo_root):
    from nav_msgs.msg import Odometry
    cfg_file = tmp_path / "boat.yaml"
    mission_file = repo_root / "config/missions/demo.yaml"
    vessel_file = tmp_path / "foka.yaml"          # an antenna 0.4 m forward, 0.15 m to starboard (FRD)
    text = (repo_root / "config/vessels/foka.yaml").read_text()
    assert text.count("antenna_x_m: 0.0") == 1
    vessel_file.write_text(text.replace("antenna_x_m: 0.0", "antenna_x_m: 0.4, antenna_y_m: 0.15"))
    cfg_file.write_text(f"vessel: {vessel_file}\nmission: {mission_file}\nbackend: sim\n"
                        f"ros: {{namespace: {NS}}}\ncommands: {{auth: off}}\n")
    cfg = load_boat_config(cfg_file)
    vessel, mission = load_vessel(vessel_file), load_mission(mission_file)
    services = FieldServices(vessel, mission, mission_frame(mission), log_dir=str(tmp_path / "runs"),
                             log_rate_hz=50.0, ros=cfg.ros, env={})       # every 50 Hz cycle is logged
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        proc = BoatProcess(cfg, vessel, mission, context=ctx, config_file=str(cfg_file), services=services)
        with proc.autopilot.lock:
            services.start_log()
        probe = rclpy.create_node("probe", context=ctx)
        proc.executor.add_node(probe)
        live_odom = []
        probe.create_subscription(Odometry, f"{NS}/odometry/filtered", live_odom.append, sensor_qos(100))
        end = time.monotonic() + 12.0
        while time.monotonic() < end and len(live_odom) < 25:
            proc.executor.spin_once(timeout_sec=0.01)
        live = {}
        qos = {}
        for n in proc.nodes:
            for name, types in n.get_publisher_names_and_types_by_node(n.get_name(), n.get_namespace()):
                live.setdefault(name, set()).update(types)
                if name not in RCL_ONLY:
                    info = [i for i in n.get_publishers_info_by_topic(name) if i.node_name == n.get_name()]
                    qos[name] = info[0].qos_profile
        static_live = {t.child_frame_id: t for t in proc.autopilot._static_transforms()}   # what /tf_static sends
        proc.executor.remove_node(probe)
        probe.destroy_node()
        proc.stop()
    finally:
        services.close()
        rclpy.shutdown(context=ctx)
    assert len(live_odom) >= 25

    run_dir = services.log.run_dir
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(run_dir) as bag:           # the run directory, not the bare MCAP
        conns = {c.topic: c for c in bag.connections}
        bag_types = {t: {c.msgtype} for t, c in conns.items()}
        tf_live = importlib.util.find_spec("tf2_msgs") is not None
        expected = {t: v for t, v in bag_types.items() if tf_live or t not in TF_TOPICS}
        assert {t: v for t, v in live.items() if t not in RCL_ONLY} == expected
        assert TF_TOPICS <= set(bag_types)             # in the log whether or not tf2_msgs is here
        for topic, profile in qos.items():             # offered QoS as the live publishers offer it
            offered = conns[topic].ext.offered_qos_profiles[0]
            assert offered.reliability.name == ReliabilityPolicy(profile.reliability).name.upper(), topic
            assert offered.durability.name == DurabilityPolicy(profile.durability).name.upper(), topic
        msgs = {}
        for conn, _t, raw in bag.messages():
            msgs.setdefault(conn.topic, []).append(store.deserialize_cdr(raw, conn.msgtype))
    for topic in (f"{NS}/imu/data", f"{NS}/imu/mag", f"{NS}/gnss/fix", f"{NS}/odometry/filtered", "/tf",
                  "/tf_static", f"{NS}/guidance/path", f"{NS}/thrusters/left/thrust", "/diagnostics"):
        assert msgs.get(topic), topic
    imu = msgs[f"{NS}/imu/data"][-1]
    assert imu.header.frame_id == "imu_link" and imu.orientation_covariance[0] == -1.0
    assert 9.0 < -imu.linear_acceleration.z < 10.6 or 9.0 < imu.linear_acceleration.z < 10.6   # gravity
    static = {t.child_frame_id: t for t in msgs["/tf_static"][0].transforms}
    assert set(static) == set(static_live) == {"gnss_link", "imu_link"}
    for child, t in static.items():
        live_t = static_live[child]
        assert t.header.frame_id == live_t.header.frame_id == "base_link"
        assert (t.transform.translation.x, t.transform.translation.y) == \
            (live_t.transform.translation.x, live_t.transform.translation.y)
    assert (static["gnss_link"].transform.translation.x, static["gnss_link"].transform.translation.y) == \
        (0.4, -0.15)                                                   # FRD starboard -> FLU -y
    assert len(msgs[f"{NS}/guidance/path"][0].poses) == len(mission.waypoints)
    assert json.loads(msgs[f"{NS}/autopilot/state"][-1].data)["armed"] is False
    # the logged estimate is the one published: the same pose at the same stamp
    logged = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in msgs[f"{NS}/odometry/filtered"]}
    matched = 0
    for m in live_odom:
        twin = logged.get((m.header.stamp.sec, m.header.stamp.nanosec))
        if twin is None:
            continue
        matched += 1
        assert abs(twin.pose.pose.position.x - m.pose.pose.position.x) < 1e-4
        assert abs(twin.pose.pose.position.y - m.pose.pose.position.y) < 1e-4
        assert abs(twin.pose.pose.orientation.z - m.pose.pose.orientation.z) < 1e-4
        assert twin.header.frame_id == m.header.frame_id and twin.child_frame_id == m.child_frame_id
    # a 50 Hz log takes every cycle on time; a late wall-clock cycle and the early one after it can share a slot
    assert matched >= len(live_odom) // 2, f"{matched} of {len(live_odom)} published poses are in the log"
