"""`autopilot log play` stopped by SIGTERM (systemd, `kill`, a test harness) or Ctrl-C ends quietly with exit 0
and says how far it got: rclpy's own handler used to shut the context down under a publish in progress and the
player died with an RCLError traceback (exit 1)."""
import signal
import subprocess
import sys
import time

import pytest

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.cli.main import main
from tests.support.paths import REPO


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("play") / "log"
    assert main(["sim", str(REPO / "config/missions/demo.yaml"), "--duration", "20", "--devices", "typed",
                 "--log", str(base)]) == 0
    (run,) = list(base.iterdir())
    return run


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_play_ends_it_quietly_with_exit_0(run_dir, sig):
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "log", "play", str(run_dir), "--delay", "0.2"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("playing "), first
        time.sleep(2.5)                                 # well into the 20 s of log time
        assert proc.poll() is None, "the player ended before the signal"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "RCLError" not in err, err
    assert out.startswith("stopped: played ") and " messages on " in out, out
