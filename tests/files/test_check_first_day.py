"""`autopilot check` on a student's boat config (copies of config/boat.yaml and config/vessels/foka.yaml): a
calibration file named but not written yet passes with a warning saying what the boat will do, and a fit to the
simulator's magnetometer is refused for the hardware backend unless --allow-sim-calibration."""
from __future__ import annotations

import yaml

from autopilot.cli.main import main
from tests.support.boat_files import boat_files, write_boat_calibration, write_sim_calibration


def run_check(capsys, *args):
    code = main(["check", *map(str, args)])
    out = capsys.readouterr().out
    problems = [ln for ln in out.splitlines() if not ln.startswith(("note:", "check:"))]
    return code, problems, out


def test_the_first_day_passes_with_a_warning_saying_what_the_boat_will_do(tmp_path, capsys):
    boat, vfile, cal = boat_files(tmp_path)
    code, problems, out = run_check(capsys, boat)
    assert code == 0 and problems == [], out
    assert "check: OK: vessel foka" in out
    assert (f"note: {vfile}: sensors.mag.calibration_file: warning: {cal} does not exist yet: the boat starts on "
            f"raw magnetometer readings and refuses to arm in LOITER, AUTO, RTL, VELOCITY, GUIDED (one chosen while "
            f"armed waits at neutral) until CALIBRATE_ON_WATER (two circles on the water) or `autopilot calibrate mag` "
            f"has written the file; MANUAL, HOLD and CALIBRATE_ON_WATER arm without it") in out.splitlines()


def test_the_first_day_warning_says_so_when_arming_does_not_wait_for_a_calibration(tmp_path, capsys):
    boat, vfile, _ = boat_files(tmp_path)
    data = yaml.safe_load(vfile.read_text())
    data.setdefault("failsafe", {}).setdefault("arming", {})["require_mag_calibration"] = False
    vfile.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, out = run_check(capsys, boat)
    assert code == 0
    assert "require_mag_calibration being false, arms in LOITER, AUTO, RTL, VELOCITY, GUIDED on them" in out


def test_a_calibration_file_that_exists_but_is_malformed_stays_a_problem(tmp_path, capsys):
    boat, vfile, cal = boat_files(tmp_path)
    cal.write_text("offset_t: [1.0e-6, 0.0]\nmatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n")
    code, problems, out = run_check(capsys, boat)
    assert code == 1
    assert problems == [f"{vfile}: sensors.mag.calibration_file: {cal}: offset_t: must be a list of 3 numbers "
                        f"(tesla), got [1e-06, 0.0]"]
    assert "check: 1 problem found; nothing started" in out


def test_a_simulator_calibration_is_refused_for_backend_hw(tmp_path, capsys):
    boat, vfile, cal = boat_files(tmp_path, backend="hw")
    write_sim_calibration(cal)
    capsys.readouterr()
    code, problems, out = run_check(capsys, boat)
    assert code == 1
    assert problems == [f"{vfile}: sensors.mag.calibration_file: {cal}: written_by: written by 'autopilot "
                        f"calibrate mag --sim': a fit to the simulator's magnetometer, not this boat's; backend hw "
                        f"refuses it (calibrate on the boat, or give --allow-sim-calibration to use it anyway)"]


def test_allow_sim_calibration_accepts_it_for_hw_with_a_note(tmp_path, capsys):
    boat, vfile, cal = boat_files(tmp_path, backend="hw")
    write_sim_calibration(cal)
    capsys.readouterr()
    code, problems, out = run_check(capsys, boat, "--allow-sim-calibration")
    assert code == 0 and problems == [], out
    assert (f"note: {vfile}: sensors.mag.calibration_file: warning: {cal} was written by the simulator; accepted "
            f"for backend hw because of --allow-sim-calibration") in out


def test_backend_sim_accepts_a_simulator_calibration_silently(tmp_path, capsys):
    boat, _, cal = boat_files(tmp_path, backend="sim")
    write_sim_calibration(cal)
    capsys.readouterr()
    code, problems, out = run_check(capsys, boat)
    assert code == 0 and problems == [], out
    assert "calibration_file" not in out and "simulator" not in out


def test_a_calibration_made_on_the_boat_passes_for_hw_without_a_word(tmp_path, capsys):
    boat, _, cal = boat_files(tmp_path, backend="hw")
    write_boat_calibration(cal)
    code, problems, out = run_check(capsys, boat)
    assert code == 0 and problems == [], out
    assert "calibration_file" not in out


def test_a_bare_vessel_file_with_a_simulator_calibration_gets_a_note(tmp_path, capsys):
    _, vfile, cal = boat_files(tmp_path)
    write_sim_calibration(cal)
    capsys.readouterr()
    code, problems, out = run_check(capsys, vfile)
    assert code == 0 and problems == [], out
    assert "was written by the simulator; a boat config with backend hw refuses it unless " \
           "--allow-sim-calibration" in out


def test_the_manual_lists_the_modes_the_pre_arm_checks_refuse():
    """The manual's first-day page names the same modes as autopilot.safety.prearm (and so as the warning)."""
    import re

    from autopilot.safety.prearm import modes_refused_without_mag_calibration
    from tests.support.paths import REPO
    text = " ".join((REPO / "docs" / "first-day.md").read_text(encoding="utf-8").split())
    listed = re.search(r"Without a calibration file, arming in ([A-Z_, ]+?(?: or [A-Z_]+)) is refused", text)
    assert listed is not None
    names = set(re.split(r", | or ", listed.group(1)))
    assert names == {m.value for m in modes_refused_without_mag_calibration()}
