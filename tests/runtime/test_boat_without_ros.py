"""`autopilot run` on a machine without ROS 2 (Raspberry Pi OS has none): rclpy and every ROS package hidden
(tests/support/no_ros.py), the sim backend, a real pymavlink ground station over UDP on 127.0.0.1 with MAVLink 2
signing, systemd's notify socket as a real Unix datagram socket, and rosbags reading the run log."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rosbags.rosbag2 import Reader

from autopilot.runlog import read_run
from tests.support.boat_files import boat_files, write_sim_calibration
from tests.support.child_io import Lines, NotifySocket
from tests.support.mavlink_gcs import Gcs, M, free_udp_port
from tests.support.paths import DATA, REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

NO_ROS = REPO / "tests" / "support" / "no_ros.py"
AUTO = 10
PASSPHRASE = "pond boat without ros"


def _boat_config(tmp_path: Path, port: int) -> Path:
    key = tmp_path / "mavlink.key"
    key.write_text(PASSPHRASE + "\n")
    os.chmod(key, 0o600)
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"""vessel: foka
mission: {DATA / 'mavlink_pond.yaml'}
backend: sim
ros: auto
logging: {{dir: {tmp_path / 'runs'}, rate_hz: 10}}
mavlink:
  links: ['udpout:127.0.0.1:{port}']
  system_id: 9
  signing_key_file: mavlink.key
""")
    return cfg


def test_without_ros_the_boat_arms_from_a_ground_station_flies_its_mission_logs_and_stops_at_neutral(tmp_path):
    port = free_udp_port()
    cfg = _boat_config(tmp_path, port)
    notify = NotifySocket(tmp_path / "notify.sock")
    env = dict(os.environ, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="2000000", PYTHONUNBUFFERED="1")
    env.pop("WATCHDOG_PID", None)
    gcs = Gcs(port, key=hashlib.sha256(PASSPHRASE.encode()).digest())
    proc = subprocess.Popen([sys.executable, str(NO_ROS), "run", "--config", str(cfg)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(proc)
    try:
        hb = gcs.connect(timeout=60.0)
        assert hb.get_srcSystem() == 9 and hb.type == M.MAV_TYPE_SURFACE_BOAT, out.text()
        assert gcs.set_mode(AUTO).result == M.MAV_RESULT_ACCEPTED, gcs.texts[-5:]
        assert gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 60.0), gcs.texts[-5:]
        assert gcs.wait_text("mission complete", timeout=90.0), (gcs.texts[-5:], out.text()[-2000:])
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, out.text()
    finally:
        gcs.close()
        if proc.poll() is None:
            proc.kill()
        notify.close()
    out.join()
    text = out.text()
    assert "ROS 2: off (rclpy does not import: No module named 'rclpy')" in text
    assert "no_ros: ROS modules imported: []" in text
    assert "Traceback" not in text
    # SIGTERM -> the runtime stops its loop, disarms and puts the outputs to neutral, well within 0.5 s
    neutral = out.first("thrusters at neutral")
    assert neutral is not None and neutral - sent < 0.5, text[-1500:]
    # systemd: READY=1 once up, then watchdog pings from the loop, STOPPING=1 on the way out
    msgs = notify.messages
    ready = [i for i, m in enumerate(msgs) if m.startswith("READY=1")]
    pings = [i for i, m in enumerate(msgs) if m == "WATCHDOG=1"]
    assert ready and len(pings) >= 5 and ready[0] < pings[0], msgs[:5]
    assert any(m.startswith("STOPPING=1") for m in msgs)
    # the run log: state.csv says it flew AUTO armed, and rosbags opens run.mcap as a rosbag2
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1
    run = read_run(runs[0])
    assert "AUTO" in set(run["mode"])
    with Reader(runs[0]) as bag:
        topics = {c.topic for c in bag.connections}
        assert bag.message_count > 50
    assert any(t.endswith("odometry/filtered") for t in topics), topics


def _run(cfg: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(NO_ROS), "run", "--config", str(cfg), *extra], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_a_simulator_calibration_is_refused_on_the_hw_backend_before_any_device_opens(tmp_path):
    boat, _vessel, cal = boat_files(tmp_path, backend="hw")
    write_sim_calibration(cal)
    refused = _run(boat)
    assert refused.returncode == 1, refused.stderr
    assert "error: the boat could not start: " in refused.stderr and "--allow-sim-calibration" in refused.stderr
    assert "pigpiod" not in refused.stderr              # refused before the ESC output was opened
    assert "Traceback" not in refused.stderr
    # asked for explicitly, the calibration is taken and the boat goes on to its devices (no pigpiod here)
    allowed = _run(boat, "--allow-sim-calibration")
    assert allowed.returncode == 1 and "pigpiod is not running" in allowed.stderr, allowed.stderr
    assert "--allow-sim-calibration" not in allowed.stderr and "Traceback" not in allowed.stderr


def test_a_first_day_boat_without_its_calibration_file_starts_on_raw_readings(tmp_path):
    boat, _vessel, cal = boat_files(tmp_path, backend="hw")
    assert not cal.exists()
    r = _run(boat)
    # the calibration is no reason to stop: the run gets as far as its devices (no pigpiod on this machine)
    assert r.returncode == 1 and "pigpiod is not running" in r.stderr, r.stderr
    assert "calibration" not in r.stderr.split("error: the boat could not start:")[-1]


def test_ros_off_runs_without_importing_ros_where_it_is_installed(tmp_path):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {DATA / 'mavlink_pond.yaml'}\nbackend: sim\nros: off\n"
                   "logging: {enabled: false}\n")
    proc = subprocess.Popen([sys.executable, str(NO_ROS), "run", "--config", str(cfg)], cwd=REPO,
                            env=dict(os.environ, NO_ROS_HIDE="0", PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(proc)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and out.first("autopilot up:") is None and proc.poll() is None:
            time.sleep(0.1)
        assert out.first("autopilot up:") is not None, out.text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, out.text()
    finally:
        if proc.poll() is None:
            proc.kill()
    out.join()
    assert "ROS 2: off (ros.start: off)" in out.text()
    assert "no_ros: ROS modules imported: []" in out.text()


def test_check_refuses_ros_on_where_rclpy_does_not_import_and_says_what_auto_will_do(tmp_path):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {DATA / 'mavlink_pond.yaml'}\nbackend: sim\nros: on\n")
    on = subprocess.run([sys.executable, str(NO_ROS), "check", str(cfg)], cwd=REPO, capture_output=True,
                        text=True, timeout=120)
    assert on.returncode == 1, on.stdout + on.stderr
    assert f"{cfg}: ros.start: ros.start is on, but rclpy does not import" in on.stdout + on.stderr
    cfg.write_text(cfg.read_text().replace("ros: on", "ros: auto"))
    auto = subprocess.run([sys.executable, str(NO_ROS), "check", str(cfg)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert auto.returncode == 0, auto.stdout + auto.stderr
    assert "note: ROS 2: off (rclpy does not import: No module named 'rclpy')" in auto.stdout
