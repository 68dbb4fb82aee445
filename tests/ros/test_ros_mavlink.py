"""`autopilot run` serves the boat config's `mavlink:` links: a ground station on UDP arms the ROS boat,
changes its mode and sees it, through the same OperatorDesk as `autopilot command`."""
import os
import subprocess
import sys

import pytest

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import REPO


@pytest.mark.slow
def test_autopilot_run_serves_mavlink_from_its_boat_config(tmp_path):
    port = free_udp_port()
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: sim\n"
                   f"ros: {{namespace: /mav{os.getpid()}, nodes: [autopilot]}}\nlogging: {{enabled: false}}\n"
                   f"mavlink: {{links: ['udpout:127.0.0.1:{port}'], system_id: 7}}\n")
    gcs = Gcs(port)
    boat = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        hb = gcs.connect(timeout=60.0)
        assert hb.get_srcSystem() == 7 and hb.type == M.MAV_TYPE_SURFACE_BOAT
        assert gcs.set_mode(0).result == M.MAV_RESULT_ACCEPTED                       # MANUAL
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 30.0), gcs.texts[-5:]
        assert gcs.until(lambda: gcs.mode() == 0 and gcs.last["HEARTBEAT"].base_mode
                         & M.MAV_MODE_FLAG_SAFETY_ARMED, 10.0)
        assert gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0).result == M.MAV_RESULT_ACCEPTED
    finally:
        gcs.close()
        boat.terminate()
        out, _ = boat.communicate(timeout=30)
    assert boat.returncode == 0, out
    assert "HOLD -> MANUAL" in out and "(from GCS 255/190 on udpout:127.0.0.1" in out
