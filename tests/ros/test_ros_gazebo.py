"""The gazebo backend against the Gazebo stand-in: the stand-in speaks the VRX bridge's topics, frames and
covariances; the autopilot flies a mission through them over DDS; diagnostics catch a sensor going silent."""
import math

import pytest
import rclpy

from autopilot.files.boat import load_boat_config
from autopilot.ros.qos import command_qos, sensor_qos
from autopilot.vocab.config import load_mission, load_vessel
from hil.ros.gazebo_standin import gz_sensor_frame_id, load_bridge_config, standin_for_boat_config
from tests.support import ros_env  # noqa: F401  (fails without rclpy)

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def short_mission(tmp_path, lat, lon, name="short.yaml"):
    """Two legs of ~35 m and ~25 m north-east of a point (a quick mission for any vessel)."""
    d_lat = 35.0 / 111_320.0
    d_lon = 25.0 / (111_320.0 * math.cos(math.radians(lat)))
    path = tmp_path / name
    path.write_text(f"""name: short
start: {{point: {{lat_deg: {lat}, lon_deg: {lon}}}, heading_deg: 0}}
waypoints:
  - {{lat_deg: {lat + d_lat}, lon_deg: {lon}}}
  - {{lat_deg: {lat + d_lat}, lon_deg: {lon + d_lon}}}
cruise_speed_mps: 1.5
acceptance_radius_m: 3.0
guidance: {{law: ilos, lookahead_m: 12.0}}
on_complete: hold
""")
    return path


def test_standin_speaks_exactly_the_vrx_bridge_topics(ctx, repo_root, tmp_path):
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu, NavSatFix
    from std_msgs.msg import Float64

    cfg = load_boat_config(repo_root / "config/gazebo/wamv_boat.yaml")
    vessel = load_vessel("wamv")
    standin = standin_for_boat_config(cfg, vessel, load_mission(short_mission(tmp_path, -33.7227, 150.674)),
                                      context=ctx)
    probe = rclpy.create_node("probe", context=ctx)
    standin.add_node(probe)
    got = {"fix": [], "imu": [], "clock": []}
    probe.create_subscription(NavSatFix, "/wamv/sensors/gps/gps/fix", got["fix"].append, sensor_qos(50))
    probe.create_subscription(Imu, "/wamv/sensors/imu/imu/data", got["imu"].append, sensor_qos(100))
    probe.create_subscription(Clock, "/clock", got["clock"].append, command_qos(100))
    thrust = [
        probe.create_publisher(Float64, f"/wamv/thrusters/{s}/thrust", command_qos(10)) for s in ("left", "right")
    ]
    standin.spin_for(1.0)
    for _ in range(150):                        # 3 s of sim time, 200 N per side
        for p in thrust:
            p.publish(Float64(data=200.0))
        standin.spin_for(0.002)
        standin.step()
        standin.spin_for(0.002)
    standin.spin_for(0.3)

    # every GZ_TO_ROS topic of the shipped bridge config is published with its ROS type; every ROS_TO_GZ one read
    entries = load_bridge_config(repo_root / "config/gazebo/vrx_wamv.yaml")
    pubs = dict(probe.get_topic_names_and_types())
    for e in entries:
        assert pubs.get(e.ros_topic_name) == [e.ros_type_name], e
        if e.direction == "ROS_TO_GZ":
            assert probe.count_subscribers(e.ros_topic_name) >= 1, e
        else:
            assert probe.count_publishers(e.ros_topic_name) >= 1, e
    fix, imu = got["fix"][-1], got["imu"][-1]
    gps_entry = next(e for e in entries if e.ros_topic_name == "/wamv/sensors/gps/gps/fix")
    assert fix.header.frame_id == gz_sensor_frame_id(gps_entry.gz_topic_name) == "wamv/wamv/gps_wamv_link/navsat"
    assert imu.header.frame_id == "wamv/wamv/imu_wamv_link/imu_wamv_sensor"
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN and not any(fix.position_covariance)
    assert fix.status.status == fix.status.STATUS_FIX
    assert not any(imu.orientation_covariance) and not any(imu.angular_velocity_covariance)
    assert abs(fix.latitude + 33.7227) < 1e-3
    assert imu.linear_acceleration.z == pytest.approx(9.81, abs=0.5)
    # orientation: the boat started facing north -> ENU yaw about +90 deg
    q = imu.orientation
    assert math.degrees(2 * math.atan2(q.z, q.w)) == pytest.approx(90, abs=5)
    assert [c.clock.sec + c.clock.nanosec * 1e-9 for c in got["clock"][-2:]] == pytest.approx([2.98, 3.0])
    assert standin.truth.surge_mps > 0.5            # the thrust we sent in newtons moved the plant
    standin.destroy()
    probe.destroy_node()


def test_gazebo_backend_flies_a_mission_on_vrx_topic_names(repo_root, tmp_path):
    from types import SimpleNamespace

    from hil.ros.sim_transport import run_ros_sim
    from hil.sim.environment import EnvironmentConfig
    from hil.sim.runner import SimOptions, run_sim

    mission = load_mission(short_mission(tmp_path, -33.7227, 150.674))
    report = run_ros_sim(load_vessel("wamv"), mission, EnvironmentConfig(),
                         SimpleNamespace(seed=3, gps_noise="white", duration=None, realtime=False))
    assert report["mission_complete"], report
    assert report["waypoints_reached"] == report["waypoints_total"] == 2
    assert report["steps_unanswered"] <= 2
    # the same flight in-process: over DDS, through the bridge's topics, it must fly as well
    ref = run_sim(load_vessel("wamv"), mission, SimOptions(seed=3, gps_noise="white")).report
    assert report["pos_err_rms_m"] < max(2.0, 2 * ref["pos_err_rms_m"]), (report, ref)
    assert report["xte_rms_m"] < ref["xte_rms_m"] + 1.0, (report, ref)
    assert report["mission_complete_time_s"] == pytest.approx(ref["mission_complete_time_s"], abs=10.0)


def test_diagnostics_report_a_sensor_that_goes_silent(ctx, repo_root, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray

    from autopilot.ros.diagnostics_node import level_of
    from autopilot.ros.runner import BoatProcess
    from autopilot.runtime.health import ERROR, OK

    cfg = load_boat_config(repo_root / "config/gazebo/foka_boat.yaml")
    vessel = load_vessel("foka")
    mission = load_mission(repo_root / "config/missions/demo.yaml")
    standin = standin_for_boat_config(cfg, vessel, mission, context=ctx, gps_noise="white")
    proc = BoatProcess(cfg, vessel, mission, context=ctx)
    for n in proc.nodes:                 # one executor for everything: lockstep spins the autopilot too
        proc.executor.remove_node(n)
        standin.add_node(n)
    probe = rclpy.create_node("probe", context=ctx)
    standin.add_node(probe)
    diags = []
    probe.create_subscription(DiagnosticArray, "/diagnostics", diags.append, command_qos(50))
    assert standin.wait_for_peers(10.0)
    standin.silence_after_s["gnss"] = 3.0
    timeout = cfg.ros.sensor_timeout_s

    def status(arr, comp):
        return next(s for s in arr.status if s.name == f"autopilot: {comp}")

    standin.run(2.9, lockstep_timeout_s=0.5)
    standin.spin_for(0.2)
    before = diags[-1]
    assert level_of(status(before, "GNSS")) == OK, status(before, "GNSS")
    assert status(before, "GNSS").hardware_id == "gazebo /foka/gnss/fix"
    standin.run(3.0 + timeout + 2.1, lockstep_timeout_s=0.5)
    standin.spin_for(0.2)
    after = diags[-1]
    gnss = status(after, "GNSS")
    assert level_of(gnss) == ERROR and "silent" in gnss.message, gnss
    assert level_of(status(after, "IMU")) == OK
    assert standin.latencies_s and standin.missed_steps == 0
    proc.stop()
    standin.destroy()


def test_standin_turns_the_pods_on_the_vrx_joint_position_topics(ctx, repo_root, tmp_path):
    """wamv_pods_boat.yaml: the pods' angles arrive as VRX joint positions (z up, so -angle) on .../pos."""
    from std_msgs.msg import Float64

    cfg = load_boat_config(repo_root / "config/gazebo/wamv_pods_boat.yaml")
    standin = standin_for_boat_config(cfg, load_vessel("wamv_pods"),
                                      load_mission(short_mission(tmp_path, -33.7227, 150.674)), context=ctx)
    probe = rclpy.create_node("probe", context=ctx)
    standin.add_node(probe)
    thrust = [probe.create_publisher(Float64, f"/wamv/thrusters/{s}/thrust", command_qos(10))
              for s in ("left", "right")]
    pos = [probe.create_publisher(Float64, f"/wamv/thrusters/{s}/pos", command_qos(10)) for s in ("left", "right")]
    standin.spin_for(1.0)
    for _ in range(150):                        # 3 s: 200 N per pod, joints at +0.3 rad (thrust toward port)
        for p in thrust:
            p.publish(Float64(data=200.0))
        for p in pos:
            p.publish(Float64(data=0.3))
        standin.spin_for(0.002)
        standin.step()
        standin.spin_for(0.002)
    entries = load_bridge_config(repo_root / "config/gazebo/vrx_wamv_pods.yaml")
    for e in entries:
        if e.direction == "ROS_TO_GZ":
            assert probe.count_subscribers(e.ros_topic_name) >= 1, e
    assert standin.truth.angle_rad == pytest.approx((-0.3, -0.3), abs=1e-3)
    assert standin.truth.yaw_rate_rps > 0.02         # stern pushed to port: the bow swings to starboard
    standin.destroy()
    probe.destroy_node()


def test_gazebo_backend_flies_wamv_pods_over_dds(repo_root, tmp_path):
    from types import SimpleNamespace

    from hil.ros.sim_transport import run_ros_sim
    from hil.sim.environment import EnvironmentConfig

    mission = load_mission(short_mission(tmp_path, -33.7227, 150.674))
    report = run_ros_sim(load_vessel("wamv_pods"), mission, EnvironmentConfig(),
                         SimpleNamespace(seed=3, gps_noise="white", duration=None, realtime=False))
    assert report["mission_complete"], report
    assert report["waypoints_reached"] == report["waypoints_total"] == 2
    assert report["xte_rms_m"] < 3.0, report
    assert report["pod_angle_max_deg"] > 10.0, report     # the pods steered, over the angle topics
