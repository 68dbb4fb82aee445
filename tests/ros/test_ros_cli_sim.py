"""`autopilot sim MISSION --transport ros`: the autopilot in its own process against the Gazebo stand-in over
real DDS, the same report as in-process plus the sensor-to-thrust latency."""
import json
from pathlib import Path

import pytest

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.cli.main import main


@pytest.mark.slow
def test_sim_over_dds_reports_like_the_in_process_sim_plus_latency_and_logs_a_bag(tmp_path, repo_root, capsys):
    report = tmp_path / "r.json"
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--vessel", "foka", "--transport", "ros",
               "--gps-noise", "white", "--duration", "40", "--report", str(report), "--log", str(tmp_path / "runs")])
    assert rc == 0
    assert "latency over DDS" in capsys.readouterr().out
    # the autopilot process logged its run as on a boat: a rosbag2 directory of its topics
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    from autopilot.runlog import read_run
    run_dir = Path(json.loads(report.read_text())["log_dir"])
    assert run_dir.parent == tmp_path / "runs" and read_run(run_dir).closed_cleanly
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(run_dir) as bag:
        conns = {c.topic: c for c in bag.connections}
        assert conns["/foka/odometry/filtered"].msgcount >= 300            # 10 Hz for most of 40 s
        odo = [store.deserialize_cdr(raw, c.msgtype)
               for c, _t, raw in bag.messages(connections=[conns["/foka/odometry/filtered"]])]
    assert max(abs(o.pose.pose.position.x) + abs(o.pose.pose.position.y) for o in odo) > 10.0   # it moved
    r = json.loads(report.read_text())
    for key in ("mission_complete", "waypoints_reached", "sim_time_s", "realtime_factor", "xte_rms_m",
                "pos_err_rms_m", "gps_err_rms_m", "heading_err_rms_deg", "latency_p99_ms"):
        assert key in r, key
    assert r["transport"] == "ros" and r["sim_time_s"] >= 39.0
    assert r["waypoints_reached"] >= 1 and r["steps_unanswered"] <= 2
    assert r["pos_err_rms_m"] < r["gps_err_rms_m"]


def test_plot_and_faults_need_the_in_process_sim(repo_root, capsys):
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--transport", "ros", "--plot", "x.png"])
    assert rc == 2 and "--plot is not available" in capsys.readouterr().err
