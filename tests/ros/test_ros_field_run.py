"""`autopilot run` as systemd runs it: READY=1 once up, WATCHDOG=1 only from real loop ticks, a run log on disk,
and a clean stop on SIGTERM. Real rclpy, real Unix datagram socket, the built-in sim backend."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.replay.navigation import replay_run
from autopilot.runlog import read_run
from autopilot.runlog.estimator_inputs import read_estimator_inputs
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def _boat_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"""
vessel: foka
mission: {REPO / 'config/missions/demo.yaml'}
backend: sim
ros:
  namespace: /fieldtest{os.getpid()}
  nodes: [autopilot, diagnostics]
logging:
  dir: {tmp_path / 'runs'}
  rate_hz: 10
""")
    return cfg


def test_run_notifies_ready_pings_watchdog_and_logs_until_sigterm(tmp_path):
    sock_path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.2)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="400000", PYTHONUNBUFFERED="1")
    env.pop("WATCHDOG_PID", None)
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(_boat_config(tmp_path))],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    messages = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum("WATCHDOG=1" in m for m in messages) < 10:
            try:
                messages.append(sock.recv(4096).decode())
            except socket.timeout:
                assert proc.poll() is None, proc.stdout.read()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        while True:
            try:
                messages.append(sock.recv(4096).decode())
            except (socket.timeout, OSError):
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()
    assert proc.returncode == 0, out
    ready = [i for i, m in enumerate(messages) if m.startswith("READY=1")]
    pings = [i for i, m in enumerate(messages) if m == "WATCHDOG=1"]
    assert ready and len(pings) >= 5 and ready[0] < pings[0], messages
    assert any(m.startswith("STOPPING=1") for m in messages), messages
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1
    run = read_run(runs[0])
    assert len(run["time_s"]) >= 5                    # ~10 rows a second while it ran
    assert set(run["mode"]) <= {"HOLD", "AUTO", "LOITER", "MANUAL", "RTL"}
    # what an identification reads (autopilot/identification/runs.py)
    assert np.isfinite(run["gyro_z_dps"]).any() and np.isfinite(run["accel_x_mps2"]).any()
    assert np.isfinite(run["applied_thrust_n_0"]).all() and np.isfinite(run["applied_thrust_n_1"]).all()
    assert (runs[0] / "boat.yaml").exists() or any(p.name == "boat.yaml" for p in runs[0].rglob("*"))
    # the estimator's inputs, from its first step (taken before the log opened) on: the run replays exactly
    rec = read_estimator_inputs(runs[0])
    assert rec.steps[0].step == 0 and rec.gaps == [] and len(rec.steps) >= 50
    replay = replay_run(runs[0], out_base=tmp_path / "replays")
    assert replay.notes == [] and replay.steps == len(rec.steps)
    assert [s.nav for s in read_estimator_inputs(replay.run_dir).steps] == [s.nav for s in rec.steps]


def test_a_device_that_does_not_open_is_a_clear_error_and_leaves_no_run_directory(tmp_path):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: hw\n"
                   f"ros: {{namespace: /nopigpio{os.getpid()}}}\nlogging: {{dir: {tmp_path / 'runs'}}}\n")
    # no pigpiod on a dev machine or in CI: the ESC output cannot open
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "error: the boat could not start: pigpiod is not running" in r.stderr
    assert "Traceback" not in r.stderr
    # under Restart=on-failure every attempt would otherwise leave an empty run behind
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("esc, words", [
    ("{backend: kernel_pwm, pwm_sysfs_root: NOWHERE}", "no PWM controller under"),
    ("{backend: pca9685, pca9685_channels: [0, 1], i2c_bus: 19}", "I2C bus 19 not found"),
])
def test_an_esc_backend_that_does_not_open_is_a_clear_error(tmp_path, esc, words):
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: hw\n"
                   f"esc: {esc.replace('NOWHERE', str(tmp_path / 'no-pwm'))}\n"
                   f"ros: {{namespace: /noesc{os.getpid()}}}\nlogging: {{dir: {tmp_path / 'runs'}}}\n")
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "error: the boat could not start: " in r.stderr and words in r.stderr
    assert "Traceback" not in r.stderr
