"""`autopilot status --config FILE` asks the running boat (here without ROS 2: rclpy hidden) on its local status
socket: mode, arming, health, pre-arm reasons, link and log directory; clear errors when no boat runs."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autopilot.cli.main import main
from autopilot.files.boat import BoatConfig
from autopilot.runtime import status_endpoint
from tests.support.child_io import Lines
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

NO_ROS = REPO / "tests" / "support" / "no_ros.py"


def _boat_config(tmp_path: Path, ros: str = "off") -> Path:
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"""vessel: foka
mission: {REPO / 'config/missions/demo.yaml'}
backend: sim
ros: {ros}
logging: {{dir: {tmp_path / 'runs'}}}
status_socket: status.sock
""")
    return cfg


def _status(cfg, *extra):
    return subprocess.run([sys.executable, "-m", "autopilot.cli", "status", "--config", str(cfg), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_status_of_a_boat_running_without_ros(tmp_path):
    cfg = _boat_config(tmp_path)
    proc = subprocess.Popen([sys.executable, str(NO_ROS), "run", "--config", str(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(proc)
    try:
        deadline = time.monotonic() + 60.0
        while True:
            done = _status(cfg)
            if done.returncode == 0 or time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert done.returncode == 0, (done.stderr, out.text()[-2000:])
        text = done.stdout
        assert "boat: foka (backend sim, without ROS 2)" in text
        assert "mode: HOLD, disarmed" in text
        assert "health:" in text and "  GNSS: " in text and "  ESC: " in text
        assert "pre-arm: " in text
        assert "link: no operator heartbeat yet; MAVLink links: none" in text
        (run,) = list((tmp_path / "runs").iterdir())
        assert f"log: {run}" in text
        s = json.loads(_status(cfg, "--json").stdout)
        assert s["mode"] == "HOLD" and s["armed"] is False and s["log_dir"] == str(run)
        assert {h["component"] for h in s["health"]} >= {"GNSS", "IMU", "EKF", "ESC"}
        assert isinstance(s["prearm_failures"], list)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, out.text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    out.join()
    assert "Traceback" not in out.text()
    assert not (tmp_path / "status.sock").exists()             # removed on the way out
    gone = _status(cfg)
    assert gone.returncode == 1 and "no status socket" in gone.stderr and "Traceback" not in gone.stderr


def test_status_of_a_boat_running_with_ros(tmp_path):
    import tests.support.ros_env  # noqa: F401  (isolated DDS domain for the child; fails without rclpy)
    cfg = _boat_config(tmp_path, ros="on")
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = Lines(proc)
    try:
        deadline = time.monotonic() + 60.0
        while True:
            done = _status(cfg, "--json")
            if done.returncode == 0 or time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.5)
        assert done.returncode == 0, (done.stderr, out.text()[-2000:])
        s = json.loads(done.stdout)
        assert s["ros"] is True and s["mode"] == "HOLD" and s["backend"] == "sim"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, out.text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    out.join()
    assert not (tmp_path / "status.sock").exists()


def test_status_without_a_running_boat_or_with_a_broken_config_says_so(tmp_path, capsys):
    cfg = _boat_config(tmp_path)
    assert main(["status", "--config", str(cfg)]) == 1
    assert f"{tmp_path / 'status.sock'}: no status socket: is the boat running" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("vessel: foka\nbackend: boat\n")
    assert main(["status", "--config", str(bad)]) == 2
    assert f"{bad}: backend: must be one of" in capsys.readouterr().err


def test_a_stale_socket_file_is_replaced_and_a_live_one_is_not_taken_over(tmp_path):
    import socket
    path = tmp_path / "s.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()                                              # a boat that died left its socket file
    first = status_endpoint.StatusEndpoint(path, lambda: {"mode": "HOLD"}).start()
    try:
        assert status_endpoint.read_status(path) == {"mode": "HOLD"}
        try:
            status_endpoint.StatusEndpoint(path, lambda: {}).start()
        except OSError as e:
            assert "already serves" in str(e)
        else:
            raise AssertionError("a second boat took over a live status socket")
    finally:
        first.close()


def test_where_the_socket_is(tmp_path, monkeypatch):
    cfg = BoatConfig(vessel="foka", source_file=str(tmp_path / "boat.yaml"))
    monkeypatch.setattr(status_endpoint, "RUN_DIRECTORY", tmp_path / "no-run-dir")
    monkeypatch.delenv(status_endpoint.SOCKET_ENV, raising=False)
    default = status_endpoint.status_socket_path(cfg)
    assert default.name.startswith("autopilot-") and default == status_endpoint.status_socket_path(cfg)
    other = BoatConfig(vessel="foka", source_file=str(tmp_path / "other.yaml"))
    assert status_endpoint.status_socket_path(other) != default
    monkeypatch.setenv(status_endpoint.SOCKET_ENV, str(tmp_path / "env.sock"))
    assert status_endpoint.status_socket_path(cfg) == tmp_path / "env.sock"
    own = BoatConfig(vessel="foka", source_file=str(tmp_path / "boat.yaml"), status_socket="here.sock")
    assert status_endpoint.status_socket_path(own) == tmp_path / "here.sock"


def test_the_systemd_unit_makes_the_run_directory_the_default_socket_lives_in():
    unit = (REPO / "systemd" / "autopilot.service").read_text().splitlines()
    assert "RuntimeDirectory=autopilot" in unit
    assert status_endpoint.RUN_DIRECTORY == Path("/run/autopilot")
