"""`autopilot sim` refuses a vessel whose magnetometer calibration file `check` refuses (unreadable, a
directory, not a calibration), instead of flying with exit 0; a file not written yet stays a first-day warning."""
from __future__ import annotations

import os

import pytest
import yaml

from autopilot.cli.main import main
from tests.support.paths import REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"
POND = REPO / "tests" / "data" / "mavlink_pond.yaml"


def _vessel(tmp_path, calibration: str):
    v = yaml.safe_load(FOKA.read_text())
    v["sensors"]["mag"]["calibration_file"] = calibration
    path = tmp_path / "foka.yaml"
    path.write_text(yaml.safe_dump(v, sort_keys=False))
    return path


@pytest.mark.parametrize("make", ["directory", "garbage", "unreadable"])
def test_sim_refuses_a_calibration_check_refuses(tmp_path, capsys, make):
    cal = tmp_path / "cal.yaml"
    if make == "directory":
        cal.mkdir()
    elif make == "garbage":
        cal.write_text("not: a calibration\n")
    else:
        cal.write_text("offset_t: [0, 0, 0]\n")
        os.chmod(cal, 0)
        if os.access(cal, os.R_OK):        # root reads it anyway: use a file nobody can read, a FIFO
            cal.unlink()
            os.mkfifo(cal)
    vessel = _vessel(tmp_path, cal.name)
    assert main(["check", str(vessel)]) == 1
    capsys.readouterr()
    rc = main(["sim", str(POND), "--vessel", str(vessel), "--duration", "5"])
    err = capsys.readouterr().err
    assert rc == 2 and f"error: {cal}" in err and "Traceback" not in err


def test_sim_flies_a_first_day_vessel_whose_calibration_is_not_written_yet(tmp_path, capsys):
    vessel = _vessel(tmp_path, "not_yet.yaml")
    assert main(["sim", str(POND), "--vessel", str(vessel), "--duration", "5"]) == 0
