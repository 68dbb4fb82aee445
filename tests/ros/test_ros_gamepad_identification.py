"""Issue 12, identification from MANUAL with a gamepad, end to end over real DDS: a joy_node stand-in (its own
process, sensor_msgs/Joy as the `joy` package publishes it, enable button held) drives `autopilot sim
--transport ros` in MANUAL on a plant that differs from the vessel file; the autopilot process logs the run and
`autopilot identify hull` reads it. A short drive (9 s, one turn) is at the edge of identifying the hull:
identify refuses and says what to drive, or fits and asks for a second run to validate. The full two-run fit
and its figures are benchmarks/bench_identification.py --part gamepad."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.cli.main import main
from autopilot.identification.runs import load_ident_run
from autopilot.vocab.config import load_vessel

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

# t_s, throttle, steering (+ to starboard): half throttle 4 s, a starboard turn 3 s, near full ahead 2 s
SHORT_DRIVE = [(0.1 * k, 0.5 if k < 70 else 0.9, 0.7 if 40 <= k < 70 else 0.0) for k in range(90)]


def _write_sequence(path: Path) -> Path:
    with path.open("w") as f:
        f.write("# a short gamepad drive for the test\nt_s,throttle,steering\n")
        for t, th, st in SHORT_DRIVE:
            f.write(f"{t:.1f},{th:.3f},{st:.3f}\n")
    return path


def test_a_joy_node_drives_manual_and_the_log_has_what_a_fit_needs(
        tmp_path, repo_root, capsys):
    seq = _write_sequence(tmp_path / "drive.csv")
    report = tmp_path / "r.json"
    # as a user runs it: the CLI in its own process
    sim = subprocess.run([sys.executable, "-m", "autopilot.cli", "sim", str(repo_root / "config/missions/demo.yaml"),
                          "--vessel", "foka", "--transport", "ros", "--gamepad", str(seq), "--gnss-velocity",
                          "--mismatch", "x_u=0.6,iz=1.3,n_r=0.7", "--log", str(tmp_path / "runs"),
                          "--log-rate-hz", "50", "--report", str(report)], capture_output=True, text=True,
                         timeout=300, cwd=repo_root, env=dict(os.environ, PYTHONPATH=str(repo_root)))
    assert sim.returncode == 0, sim.stdout + sim.stderr
    r = json.loads(report.read_text())
    assert r["mode_asked"] == "MANUAL" and r["mode_at_end"] == "MANUAL" and r["failsafes"] == []
    assert r["gamepad"]["exit"] == 0 and "sequence of 90 rows played" in r["gamepad"]["said"]
    # the autopilot heard the sticks from the joy node itself (the run's token does not cover Joy)
    assert any("joystick node" in s and "joy_node" in s for s in r["operator_streams"]), r["operator_streams"]

    run_dir = Path(r["log_dir"])
    rows = list(csv.DictReader((run_dir / "state.csv").open()))
    manual = [row for row in rows if row["mode"] == "MANUAL" and row["armed"] == "1"]
    thrust = [(float(row["time_s"]), float(row["applied_thrust_n_0"]), float(row["applied_thrust_n_1"]))
              for row in manual]
    driving = [(t, left, right) for t, left, right in thrust if left + right > 5.0]
    assert driving, "the sticks never reached the thrusters"
    t0 = driving[0][0]                                   # the sequence's start, as the thrusters saw it
    ahead = [(left, right) for t, left, right in thrust if t0 + 1.0 <= t < t0 + 3.5]
    turn = [(left, right) for t, left, right in thrust if t0 + 4.5 <= t < t0 + 6.5]
    assert ahead and all(left > 2.0 and right > 2.0 and abs(left - right) < 0.3 * (left + right)
                         for left, right in ahead)        # throttle: both push, evenly
    assert turn and all(left > right + 2.0 for left, right in turn)     # starboard: the port thruster pushes more
    end = [(left, right) for t, left, right in thrust if t > t0 + 9.0 + 1.5]    # released + MANUAL's 1 s timeout
    assert end and all(left == 0.0 and right == 0.0 for left, right in end)

    # the GNSS's speed and course reached the log beside its fixes (the smoother leans on them)
    fixes = [row for row in rows if row["gnss_north_m"] not in ("", "nan")]
    assert len(fixes) >= 8 and all(row["gnss_speed_mps"] not in ("", "nan") for row in fixes)
    # the columns a fit reads are there, at the log's rate: load_ident_run refuses a log that lacks one
    ident = load_ident_run(run_dir, load_vessel("foka"))
    assert ident.rate_hz > 45.0 and max(ident.data.x_n) > 20.0 and max(ident.data.r) > 0.2

    # one short run is at the edge of what identifies the hull (its intervals are wide): identify either refuses
    # and says what to drive, or fits and says it validated on the fitting data and wants a second run
    rc = main(["identify", "hull", str(run_dir), "--vessel", str(repo_root / "config/vessels/foka.yaml")])
    said = capsys.readouterr()
    if rc == 1:
        assert "refused" in said.err and "drive more of:" in said.err, said.err
    else:
        assert rc == 0 and "on the fitting data: give a second run to validate" in said.out, said


def test_gamepad_and_manual_options_are_refused_with_the_reason(tmp_path, repo_root, capsys):
    demo = str(repo_root / "config/missions/demo.yaml")
    bad = tmp_path / "bad.csv"
    bad.write_text("t_s,throttle,steering\n0,0.5,0\n0.1,1.5,0\n")
    for argv, message in ((["--gamepad", str(bad)], "need --transport ros"),
                          (["--transport", "ros", "--gamepad", str(bad)], "bad.csv: line 3"),
                          (["--transport", "ros", "--gamepad", str(tmp_path / "none.csv")], "none.csv: cannot read"),
                          (["--transport", "ros", "--mode", "MANUAL"], "needs --duration"),
                          (["--gnss-velocity"], "--gnss-velocity is for --transport ros")):
        assert main(["sim", demo, *argv]) == 2
        assert message in capsys.readouterr().err, argv
