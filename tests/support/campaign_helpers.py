"""Run functions for the campaign tests, in a module Ray's workers can import (a test module cannot be)."""
from __future__ import annotations

import os
from pathlib import Path

KILLED = "killed-once"


def dies_once(run):
    """A worker that dies (SIGKILL) on its first attempt at seed 2; CAMPAIGN_TEST_DIR holds the marker."""
    marker = Path(os.environ["CAMPAIGN_TEST_DIR"]) / KILLED
    if run["seed"] == 2 and not marker.exists():
        marker.write_text("x")
        os.kill(os.getpid(), 9)
    return dict(run, complete=True, xte_rms_m=float(run["seed"]))
