"""MAVProxy, the ground station many boat users script, run headless against `autopilot sim --mavlink ...
--realtime`: its own `wp load`, `arm throttle`, `mode auto` and `mode rtl`, typed on its console."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.mavlink_gcs import DATA, SimBoat, free_udp_port

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

MAVPROXY = Path(sys.executable).with_name("mavproxy.py")


class MavProxy:
    """mavproxy.py with its console on a pipe: `say` types a command, `wait_for` reads what it prints."""

    def __init__(self, port: int, workdir: Path):
        env = dict(os.environ, MAVLINK20="1")
        self.proc = subprocess.Popen([sys.executable, str(MAVPROXY), f"--master=udpin:127.0.0.1:{port}",
                                      "--state-basedir", str(workdir), "--nowait"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=workdir, env=env)
        self.lines: list = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def say(self, command: str) -> int:
        """Type `command`; returns the console line count before it (for wait_for's `since`)."""
        n = len(self.lines)
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return n

    def wait_for(self, fragment: str, timeout: float, since: int = 0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hit = next((ln for ln in self.lines[since:] if fragment in ln), None)
            if hit is not None:
                return hit
            time.sleep(0.1)
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.say("exit")
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


@pytest.mark.skipif(not MAVPROXY.exists(), reason="MAVProxy is installed by scripts/test.sh (the gcs extra)")
def test_mavproxy_loads_a_waypoint_file_arms_when_the_checks_pass_flies_auto_and_returns_home(tmp_path):
    port = free_udp_port()
    sim = SimBoat(tmp_path, port)
    mp = MavProxy(port, tmp_path)
    try:
        assert mp.wait_for("Detected vehicle", 30.0), "\n".join(mp.lines[-20:]) + sim.output()
        assert mp.wait_for("Mode HOLD", 10.0)                 # a boat's modes, named from the Rover table
        n = mp.say("arm throttle")                            # at once: the ESCs are still arming, no fix yet
        assert mp.wait_for("COMPONENT_ARM_DISARM: DENIED", 10.0, n), "\n".join(mp.lines[-20:])
        assert mp.wait_for("PreArm:", 5.0, n)                 # the reasons reach the ground station
        n = mp.say(f"wp load {DATA / 'mavlink_pond.waypoints'}")
        assert mp.wait_for("Loaded 4 waypoints in", 20.0, n), "\n".join(mp.lines[-20:])   # the transfer's end
        assert mp.wait_for("a MAVLink mission upload", 5.0, n)       # the boat took it: 2 waypoints, not 1
        n = mp.say("mode auto")
        assert mp.wait_for("Mode AUTO", 10.0, n)
        armed = False
        for _ in range(30):
            n = mp.say("arm throttle")
            if mp.wait_for("COMPONENT_ARM_DISARM: ACCEPTED", 2.0, n):
                armed = True
                break
        assert armed, "\n".join(mp.lines[-20:])
        assert mp.wait_for("mission complete", 90.0, n), "\n".join(mp.lines[-20:])
        n = mp.say("mode rtl")
        assert mp.wait_for("Mode RTL", 10.0, n)
        assert mp.wait_for("home reached", 90.0, n), "\n".join(mp.lines[-20:])
        assert mp.wait_for("Mode LOITER", 10.0, n)
    finally:
        mp.stop()
        sim.stop()
