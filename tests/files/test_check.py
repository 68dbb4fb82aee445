"""`autopilot check` on broken configs and missions: one clear line per problem, non-zero exit, nothing started.

"Unreadable file": these tests run as root, and root reads a chmod-000 file anyway, so unreadable is made with
a directory where a file is expected, a file that is not UTF-8, and a dangling symlink.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autopilot.cli.main import main
from autopilot.files.check import check_config
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

FOKA = REPO / "config" / "vessels" / "foka.yaml"
DEMO = REPO / "config" / "missions" / "demo.yaml"
CALIBRATION = {"offset_t": [1.0e-6, -2.0e-6, 0.5e-6], "matrix": [[1.02, 0, 0], [0, 0.98, 0], [0, 0, 1.0]],
               "method": "3d"}


def vessel_file(tmp_path, edit=None, calibration="mag_cal.yaml", write_calibration=True):
    data = yaml.safe_load(FOKA.read_text())
    if calibration:
        data["sensors"]["mag"]["calibration_file"] = calibration
        if write_calibration:
            (tmp_path / calibration).write_text(yaml.safe_dump(CALIBRATION))
    if edit:
        edit(data)
    path = tmp_path / "vessel.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def mission_file(tmp_path, edit=None, name="mission.yaml"):
    data = yaml.safe_load(DEMO.read_text())
    # a fence around the survey patch: about 20 m of margin on every side
    data["geofence"] = [{"lat_deg": 51.10970, "lon_deg": 17.05950}, {"lat_deg": 51.10970, "lon_deg": 17.06150},
                        {"lat_deg": 51.11055, "lon_deg": 17.06150}, {"lat_deg": 51.11055, "lon_deg": 17.05950}]
    if edit:
        edit(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_check(capsys, *args):
    code = main(["check", *map(str, args)])
    out = capsys.readouterr().out
    problems = [ln for ln in out.splitlines() if not ln.startswith(("note:", "check:"))]
    return code, problems, out


def test_good_vessel_and_mission_pass_with_a_summary(tmp_path, capsys):
    code, problems, out = run_check(capsys, vessel_file(tmp_path), "--mission", mission_file(tmp_path))
    assert code == 0 and problems == []
    assert "check: OK: vessel foka" in out and "mission demo-lake-survey (6 waypoints" in out
    assert "inside a 4-point geofence" in out


def test_every_problem_of_a_run_is_printed_on_its_own_line(tmp_path, capsys):
    """Vessel and mission each broken: both reported, each on one line naming file and key."""
    def too_fast(d):
        d["cruise_speed_mps"] = 2.5
        d["waypoints"][2]["lat_deg"] = 51.1110      # ~100 m north of the fence
    v = vessel_file(tmp_path, calibration="bad_cal.yaml", write_calibration=False)
    (tmp_path / "bad_cal.yaml").write_text("offset_t: [1.0, 2.0, 3.0]\nmatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n")
    m = mission_file(tmp_path, too_fast)
    code, problems, out = run_check(capsys, v, "--mission", m)
    assert code == 1
    assert f"{v}: sensors.mag.calibration_file: {tmp_path / 'bad_cal.yaml'}: offset_t: [1.0, 2.0, 3.0] is larger " \
           f"than 1 mT: the file must be in tesla" in problems
    assert f"{m}: cruise_speed_mps: 2.5 m/s is faster than the vessel's hull.max_speed_mps (1.8 m/s in {v})" \
        in problems
    assert any(p.startswith(f"{m}: waypoints[2]: outside the geofence by ") for p in problems)
    assert len(problems) == 3                 # legs to an outside waypoint are not reported twice
    assert "check: " in out.splitlines()[-1] and "problems found; nothing started" in out


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["hull"].update(top_speed_mps=2.0), "hull.top_speed_mps: unknown key"),
    (lambda d: d["hull"].update(mass_kg="fifteen"), "hull.mass_kg: must be a number (in kg), got 'fifteen'"),
    (lambda d: d["battery"].update(cells=4.5), "battery.cells: must be an integer, got 4.5"),
])
def test_broken_vessel_yaml(tmp_path, capsys, edit, expected):
    v = vessel_file(tmp_path, edit)
    code, problems, _ = run_check(capsys, v)
    assert code == 1
    assert problems == [f"{v}: {expected}" + problems[0].split(expected, 1)[1]]


@pytest.mark.parametrize("edit, key, reason", [
    (lambda d: d.update(cruise_speed_mps=-0.5), "cruise_speed_mps", "must be at least 0.05 m/s, got -0.5"),
    (lambda d: d["waypoints"][1].update(speed_mps=-1.0), "waypoints[1].speed_mps", "must be at least 0.0 m/s"),
    (lambda d: d["waypoints"][1].update(speed_mps=0.0), "waypoints[1].speed_mps", "must be > 0 m/s"),
    (lambda d: d["waypoints"][3].update(speed_mps=3.0), "waypoints[3].speed_mps", "3 m/s is faster than"),
    (lambda d: d.update(cruise_speeed_mps=1.0), "cruise_speeed_mps", "unknown key"),
    (lambda d: d.update(acceptance_radius_m="2 m"), "acceptance_radius_m", "must be a number (in m)"),
    (lambda d: d["waypoints"][4].update(lat_deg=51.2), "waypoints[4]", "leg from waypoints[3] is 9.9"),
    (lambda d: d["waypoints"][5].update(lon_deg=17.0620), "waypoints[5]", "outside the geofence by 35.0 m"),
    (lambda d: d["start"]["point"].update(lat_deg=51.1096), "start.point", "outside the geofence by 11."),
    (lambda d: d.update(loiter_radius_m=30.0), "loiter_radius_m", "30 m loiter circle around waypoints[5]"),
    (lambda d: d.update(geofence=d["geofence"][:2]), "geofence", "needs at least 3 points"),
    (lambda d: d["geofence"].__setitem__(slice(2, 4), d["geofence"][3:1:-1]), "geofence", "cross"),
])
def test_broken_mission(tmp_path, capsys, edit, key, reason):
    m = mission_file(tmp_path, edit)
    code, problems, _ = run_check(capsys, vessel_file(tmp_path), "--mission", m)
    assert code == 1
    assert any(p.startswith(f"{m}: {key}: ") and reason in p for p in problems), problems


def test_leg_that_cuts_across_a_concave_fence(tmp_path, capsys):
    """Both waypoints inside an L-shaped fence, the straight leg between them outside."""
    def l_fence(d):
        d["anchor"] = {"lat_deg": 51.1100, "lon_deg": 17.0600}
        d.pop("start")
        d["waypoints"] = [{"north_m": 10.0, "east_m": 10.0}, {"north_m": 90.0, "east_m": 10.0},
                          {"north_m": 10.0, "east_m": 90.0}]
        d["geofence"] = [{"north_m": n, "east_m": e} for n, e in
                         [(0, 0), (100, 0), (100, 20), (20, 20), (20, 100), (0, 100)]]
        d["loiter_radius_m"] = 2.0
    m = mission_file(tmp_path, l_fence)
    code, problems, _ = run_check(capsys, vessel_file(tmp_path), "--mission", m)
    assert code == 1
    assert problems == [f"{m}: waypoints[2]: the leg from waypoints[1] leaves the geofence"]


def test_qgc_waypoint_mission_is_checked_by_item(tmp_path, capsys):
    f = tmp_path / "survey.waypoints"
    f.write_text("QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t51.1099101\t17.0598572\t0\t1\n"
                 "1\t0\t3\t16\t0\t0\t0\t0\t51.1100000\t17.0600000\t10\t1\n"
                 "2\t0\t0\t178\t1\t2.4\t-1\t0\t0\t0\t0\t1\n"
                 "3\t0\t3\t16\t0\t0\t0\t0\t51.1100000\t17.0611423\t10\t1\n")
    code, problems, _ = run_check(capsys, vessel_file(tmp_path), "--mission", f)
    assert code == 1
    assert problems == [f"{f}: item 3.speed_mps: 2.4 m/s is faster than the vessel's hull.max_speed_mps "
                        f"(1.8 m/s in {tmp_path / 'vessel.yaml'})"]


def test_calibration_file_that_does_not_parse(tmp_path, capsys):
    v = vessel_file(tmp_path, calibration="cal.yaml", write_calibration=False)
    (tmp_path / "cal.yaml").write_text("offset_t: [1.0e-6, 0.0]\nmatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n")
    code, problems, _ = run_check(capsys, v)
    assert code == 1 and len(problems) == 1
    assert problems[0].startswith(f"{v}: sensors.mag.calibration_file: {tmp_path / 'cal.yaml'}: ")
    assert problems[0].endswith("cal.yaml: offset_t: must be a list of 3 numbers (tesla), got [1e-06, 0.0]")


@pytest.mark.parametrize("make, reason", [
    (lambda p: p.mkdir(), "not a regular file"),
    (lambda p: p.write_bytes(b"name: foka\nhull: \xff\xfe\n"), "cannot read file: not UTF-8 text (byte 17)"),
    (lambda p: p.symlink_to(p.parent / "gone.yaml"), "file not found"),
])
def test_unreadable_files(tmp_path, capsys, make, reason):
    bad = tmp_path / "unreadable.yaml"
    make(bad)
    code, problems, _ = run_check(capsys, bad)
    assert code == 1 and len(problems) == 1
    assert problems[0].startswith(f"{bad}: <top level>: {reason}")
    # the same for a mission
    code, problems, _ = run_check(capsys, vessel_file(tmp_path), "--mission", bad)
    assert code == 1 and len(problems) == 1 and problems[0].startswith(f"{bad}: <top level>: {reason}")


def test_boat_config_references_are_followed(tmp_path, capsys):
    v = vessel_file(tmp_path)
    m = mission_file(tmp_path, lambda d: d.update(cruise_speed_mps=5.0))
    boat = tmp_path / "boat.yaml"
    boat.write_text(f"vessel: {v.name}\nmission: {m.name}\nbackend: hw\n")
    code, problems, _ = run_check(capsys, boat)
    assert code == 1
    assert problems == [f"{m}: cruise_speed_mps: 5 m/s is faster than the vessel's hull.max_speed_mps "
                        f"(1.8 m/s in {v})"]
    boat.write_text(f"vessel: {v.name}\nmission: {m.name}\nbackend: submarine\n")
    code, problems, _ = run_check(capsys, boat)
    assert code == 1 and problems[0].startswith(f"{boat}: backend: must be one of hw, sim, gazebo")


def test_neither_vessel_nor_boat_config(tmp_path, capsys):
    f = tmp_path / "what.yaml"
    f.write_text("name: something\n")
    code, problems, _ = run_check(capsys, f)
    assert code == 1 and problems == [f"{f}: <top level>: neither a vessel file (no 'hull:') nor a boat config "
                                      f"(no 'vessel:')"]


def test_missing_calibration_is_a_note_not_a_problem():
    report = check_config(FOKA, DEMO)
    assert report.ok
    assert any("calibration_file: not set" in n for n in report.notes)


def test_the_installed_command_exits_non_zero(tmp_path):
    """The real console entry point, as the installer and an operator run it."""
    m = mission_file(tmp_path, lambda d: d["waypoints"][0].update(speed_mps=-2))
    exe = Path(sys.executable).with_name("autopilot")
    r = subprocess.run([str(exe), "check", str(vessel_file(tmp_path)), "--mission", str(m)],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 1
    assert f"{m}: waypoints[0].speed_mps: must be at least 0.0 m/s, got -2.0" in r.stdout
