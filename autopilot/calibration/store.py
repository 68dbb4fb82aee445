"""Write a magnetometer calibration file over the one in use, keeping the old ones.

`replace_keeping_old(path, fit, time_utc, vessel_name, written_by)` writes through a temporary file and an
atomic rename; an existing file is kept as `<file>.prev` (the one just replaced) and, the first time, as
`<file>.orig` (the one the boat had before any automatic rewrite; never overwritten). OSError propagates (the
caller reports it: a calibration that could not be saved is still applied for the run).

`load_boat_calibration(vessel, backend, allow_sim)` is the calibration a backend starts with: None on the first
day (the file named but not written yet: raw readings, see `missing_calibration_effect()`), and a fit to the
simulator's magnetometer refused on the boat's own hardware unless `--allow-sim-calibration` asks for it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from autopilot.safety.prearm import MAKES_THE_MAG_CALIBRATION, modes_refused_without_mag_calibration
from autopilot.vocab.schema import ConfigError
from estimation.heading.mag_calibration import (
    SIM_WRITTEN_BY,
    CalibrationFit,
    MagCalibration,
    calibration_from_simulator,
    calibration_path,
    read_calibration,
    write_calibration,
)

ALLOW_SIM_OPTION = "--allow-sim-calibration"
SIMULATED_BACKENDS = ("sim", "gazebo")     # their magnetometers are simulated: a simulator's fit is theirs


def replace_keeping_old(path, fit: CalibrationFit, time_utc: str, vessel_name: str, written_by: str) -> Path:
    """Write `fit` to `path`, the previous file kept as .prev (and the first as .orig). Returns the path."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    write_calibration(tmp, fit, time_utc, vessel_name, written_by=written_by)
    if path.exists():
        orig = path.with_name(path.name + ".orig")
        if not orig.exists():
            orig.write_bytes(path.read_bytes())
        os.replace(path, path.with_name(path.name + ".prev"))
    os.replace(tmp, path)
    return path


def missing_calibration_effect(vessel) -> str:
    """What `vessel`'s boat does while its named calibration file does not exist yet, as `autopilot check` says
    it: the modes are the ones the pre-arm checks refuse (autopilot.safety.prearm)."""
    modes = ", ".join(m.value for m in modes_refused_without_mag_calibration())
    if not vessel.failsafe.arming.require_mag_calibration:
        return (f"the boat starts on raw magnetometer readings and, failsafe.arming.require_mag_calibration being "
                f"false, arms in {modes} on them (an uncalibrated compass is easily 50 deg off) until "
                f"{MAKES_THE_MAG_CALIBRATION.value} or `autopilot calibrate mag` has written the file")
    return (f"the boat starts on raw magnetometer readings and refuses to arm in {modes} (one chosen while armed "
            f"waits at neutral) until {MAKES_THE_MAG_CALIBRATION.value} (two circles on the water) or "
            f"`autopilot calibrate mag` has written the file; MANUAL, HOLD and {MAKES_THE_MAG_CALIBRATION.value} "
            f"arm without it")


def sim_calibration_refusal(backend: str) -> str:
    """The reason a simulator's calibration is refused on `backend`."""
    return (f"written by {SIM_WRITTEN_BY!r}: a fit to the simulator's magnetometer, not this boat's; "
            f"backend {backend} refuses it (calibrate on the boat, or give {ALLOW_SIM_OPTION} to use it anyway)")


def load_boat_calibration(vessel, backend: str, allow_sim: bool = False) -> Optional[MagCalibration]:
    """The magnetometer calibration `backend` ("hw", "sim", "gazebo", ...) applies for `vessel`: the file its
    sensors.mag.calibration_file names (relative to the vessel file), read and validated.

    None when no file is named, or when it is named but does not exist yet (the first day: raw readings; the
    pre-arm checks refuse the navigating modes until one is written). ConfigError(file, key, reason) when the file
    exists but is unreadable or malformed, and ConfigError(file, "written_by", reason naming
    --allow-sim-calibration) when it was written by `autopilot calibrate mag --sim`, the backend is not a
    simulated one (sim, gazebo) and `allow_sim` is False."""
    path = calibration_path(vessel)
    if path is None or not path.exists():
        return None
    calibration = read_calibration(path)
    if backend not in SIMULATED_BACKENDS and not allow_sim and calibration_from_simulator(path):
        raise ConfigError(path, "written_by", sim_calibration_refusal(backend))
    return calibration
