"""tmp_path copies of config/boat.yaml and config/vessels/foka.yaml, the vessel naming a magnetometer calibration
file that the test writes (or not): the rig of the first-day calibration tests."""
from __future__ import annotations

from pathlib import Path

import yaml

from autopilot.cli.main import main
from tests.support.paths import REPO

BOAT = REPO / "config" / "boat.yaml"
FOKA = REPO / "config" / "vessels" / "foka.yaml"
DEMO = REPO / "config" / "missions" / "demo.yaml"


def boat_files(tmp_path: Path, backend: str = "hw", calibration: str = "mag_cal.yaml") -> tuple:
    """(boat config, vessel file, calibration path): the boat config is config/boat.yaml with `backend` and
    the demo mission, its vessel foka naming `calibration` (beside it; not written here)."""
    vessel = yaml.safe_load(FOKA.read_text())
    vessel["sensors"]["mag"]["calibration_file"] = calibration
    vfile = tmp_path / "foka.yaml"
    vfile.write_text(yaml.safe_dump(vessel, sort_keys=False))
    boat = yaml.safe_load(BOAT.read_text())
    boat.update(vessel=vfile.name, mission=str(DEMO), backend=backend)
    bfile = tmp_path / "boat.yaml"
    bfile.write_text(yaml.safe_dump(boat, sort_keys=False))
    return bfile, vfile, tmp_path / calibration


def write_sim_calibration(path: Path) -> Path:
    """`autopilot calibrate mag --sim --out PATH`, as a student runs it on a laptop; returns the path."""
    assert main(["calibrate", "mag", "--sim", "--out", str(path)]) == 0
    return path


def write_boat_calibration(path: Path) -> Path:
    """A calibration as `autopilot calibrate mag` writes it on the boat (its default written_by)."""
    path.write_text("written_by: autopilot calibrate mag\nmethod: 2d\noffset_t: [1.0e-6, -2.0e-6, 0.0]\n"
                    "matrix: [[1.02, 0, 0], [0, 0.98, 0], [0, 0, 1]]\n")
    return path
