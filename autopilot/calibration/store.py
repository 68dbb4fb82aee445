"""Write a magnetometer calibration file over the one in use, keeping the old ones.

`replace_keeping_old(path, fit, time_utc, vessel_name, written_by)` writes through a temporary file and an
atomic rename; an existing file is kept as `<file>.prev` (the one just replaced) and, the first time, as
`<file>.orig` (the one the boat had before any automatic rewrite; never overwritten). OSError propagates (the
caller reports it: a calibration that could not be saved is still applied for the run).
"""
from __future__ import annotations

import os
from pathlib import Path

from estimation.heading.mag_calibration import CalibrationFit, write_calibration


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
