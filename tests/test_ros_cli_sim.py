"""`autopilot sim MISSION --transport ros`: the autopilot in its own process against the Gazebo stand-in over
real DDS, the same report as in-process plus the sensor-to-thrust latency."""
import json

import tests.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.cli import main


def test_sim_over_dds_reports_like_the_in_process_sim_plus_latency(tmp_path, repo_root, capsys):
    report = tmp_path / "r.json"
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--vessel", "foka", "--transport", "ros",
               "--gps-noise", "white", "--duration", "40", "--report", str(report)])
    assert rc == 0
    assert "latency over DDS" in capsys.readouterr().out
    r = json.loads(report.read_text())
    for key in ("mission_complete", "waypoints_reached", "sim_time_s", "realtime_factor", "xte_rms_m",
                "pos_err_rms_m", "gps_err_rms_m", "heading_err_rms_deg", "latency_p99_ms"):
        assert key in r, key
    assert r["transport"] == "ros" and r["sim_time_s"] >= 39.0
    assert r["waypoints_reached"] >= 1 and r["steps_unanswered"] <= 2
    assert r["pos_err_rms_m"] < r["gps_err_rms_m"]


def test_plot_and_faults_need_the_in_process_sim(repo_root, capsys):
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--transport", "ros", "--plot", "x.png"])
    assert rc == 2 and "--plot and --log are not available" in capsys.readouterr().err
