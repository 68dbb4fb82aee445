"""`autopilot bench esc` against the fake pigpiod, and `autopilot bench imu` on the emulated chip."""
import argparse
import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from autopilot.bringup import esc as bench_esc
from autopilot.bringup import imu as bench_imu
from hil.devices.fake_pigpiod import FakePigpiod
from tests.support.paths import REPO


def run_cli(module, argv):
    parser = argparse.ArgumentParser(prog="autopilot")
    sub = parser.add_subparsers(dest="command")
    module.register(sub)
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def daemon():
    d = FakePigpiod().start()
    yield d
    d.stop()


def test_motor_test_is_refused_without_the_confirmation_flag(daemon, capsys):
    rc = run_cli(bench_esc, ["bench", "esc", "--gpio", "13,12", "--test", "--host", "127.0.0.1",
                             "--port", str(daemon.port)])
    assert rc == 2
    assert "--propellers-removed" in capsys.readouterr().err
    assert daemon.state.log(13) == [] and daemon.connections == 0     # nothing was sent, not even connected


@pytest.mark.slow
def test_motor_test_arms_ramps_gently_and_ends_at_neutral(daemon, capsys):
    t0 = time.monotonic()
    rc = run_cli(bench_esc, ["bench", "esc", "--gpio", "13,12", "--test", "--propellers-removed",
                             "--host", "127.0.0.1", "--port", str(daemon.port), "--offset-us", "100",
                             "--ramp-s", "0.2", "--hold-s", "0.1", "--arming-s", "0.3"])
    assert rc == 0
    for gpio in (13, 12):
        log = daemon.state.log(gpio)
        pulses = [p for _, p in log]
        assert {p for t, p in log if t < t0 + 0.3} == {1500}            # armed at neutral first
        assert max(pulses) == 1600 and min(pulses) == 1400               # +-offset, no more
        steps = [abs(b - a) for a, b in zip(pulses, pulses[1:])]
        assert max(steps) <= 41                                          # ramp / slew: no jumps
        assert pulses[-1] == 1500
    out = capsys.readouterr().out
    assert "test done" in out and "outputs at neutral" in out


def test_status_without_test_only_reports(daemon, capsys):
    daemon.state.set_servo_pulsewidth(13, 1520)
    rc = run_cli(bench_esc, ["bench", "esc", "--gpio", "13,12", "--host", "127.0.0.1",
                             "--port", str(daemon.port)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "GPIO13: pulse now 1520 us" in out and "GPIO12: pulse now off" in out
    assert [p for _, p in daemon.state.log(13)] == [1520]


CTRL_C_CHILD = textwrap.dedent("""
    import argparse, sys
    from autopilot.bringup import esc
    parser = argparse.ArgumentParser()
    esc.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "esc", "--gpio", "13", "--test", "--propellers-removed", "--host", "127.0.0.1",
                              "--port", sys.argv[1], "--ramp-s", "5", "--arming-s", "0.1"])
    sys.exit(args.func(args))
""")


def test_ctrl_c_during_the_motor_test_returns_to_neutral(daemon):
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, str(daemon.port)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in child.stdout:
            if "ramp to" in line:
                break
        deadline = time.monotonic() + 5
        while daemon.state.pulse_us(13) < 1530 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert daemon.state.pulse_us(13) >= 1530                         # spinning
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=10) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert daemon.state.pulse_us(13) == 1500
    assert daemon.state.log(13)[-1][1] == 1500


def test_bench_imu_streams_body_frame_json_on_the_emulated_chip(capsys):
    rc = run_cli(bench_imu, ["bench", "imu", "--emulated", "--json", "--count", "5", "--vessel", "foka"])
    assert rc == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    samples, stats = lines[:-1], lines[-1]["stats"]
    assert len(samples) == 5 and stats["reads"] >= 5 and stats["errors"] == 0
    for s in samples:
        assert s["accel_mps2"][2] == pytest.approx(-9.81, abs=0.3)       # level and still
        assert max(abs(g) for g in s["gyro_rps"]) < 0.02                 # bias removed
        assert s["heading_deg"] == pytest.approx(30.0, abs=3.0)          # the emulated boat's heading
        assert 45.0 < sum(v * v for v in s["field_ut"]) ** 0.5 < 55.0    # 50 uT configured
        assert s["raw"]["accel_mps2"][2] == pytest.approx(9.81, abs=0.3)  # the library's chip axes: Z up, +1 g
        assert s["raw"]["accel_mps2"][2] == pytest.approx(-s["accel_mps2"][2], abs=1e-3)


def test_bench_imu_axes_check_passes_on_a_board_that_follows_the_datasheet(capsys):
    rc = run_cli(bench_imu, ["bench", "imu", "--emulated", "--axes-check", "--vessel", "foka"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.count("PASS  ") == 10 and "library accel" in out and "driver FRD" in out


def test_bench_imu_axes_check_catches_a_board_with_a_mirrored_y_axis(capsys, monkeypatch):
    """A chip (here the emulated one) whose Y axis is mirrored against the datasheet: east and west swap."""
    import numpy as np

    from hil.devices import lsm9ds1_emulator
    monkeypatch.setattr(lsm9ds1_emulator, "S_TO_XG_AXES", np.diag([1.0, -1.0, -1.0]))
    monkeypatch.setattr(lsm9ds1_emulator, "S_TO_MAG_AXES", np.diag([-1.0, -1.0, -1.0]))
    rc = run_cli(bench_imu, ["bench", "imu", "--emulated", "--axes-check", "--vessel", "foka"])
    out = capsys.readouterr().out
    assert rc == 1
    failed = [line for line in out.splitlines() if line.startswith("FAIL  ")]
    assert any("Y arrow up" in line for line in failed) and any("my_E - my_W" in line for line in failed)


def test_bench_imu_reports_a_missing_bus(capsys):
    assert run_cli(bench_imu, ["bench", "imu", "--bus", "97", "--count", "1"]) == 1
    assert "I2C bus 97 not found" in capsys.readouterr().err
