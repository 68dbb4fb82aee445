"""Forged GNSS epochs (issue 11, item 3): one wrong value with a correct checksum, through the emulated L76K,
the real driver and the EKF. A lone forged fix never moves the estimate by more than 0.5 m and never fires a
failsafe; the driver refuses what cannot be true."""
from __future__ import annotations

import numpy as np
import pynmea2
import pytest

from autopilot.vocab.config import load_mission, load_vessel
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.nmea_forgery import KINDS, NmeaForger
from hil.sim.faults import parse_fault
from hil.sim.runner import SimOptions, run_sim
from tests.support.paths import REPO

DEMO = REPO / "config" / "missions" / "demo.yaml"
TRUTH = GnssTruth(lat_deg=51.1079, lon_deg=17.0385, alt_m=120.0, sog_mps=2.0, cog_rad=0.3)


def _text(seg: bytes) -> str:
    return seg.decode("ascii").strip()


@pytest.mark.parametrize("kind", KINDS)
def test_a_forged_epoch_keeps_valid_checksums_and_changes_one_value_everywhere(kind):
    clean = [_text(s) for s in L76KEmitter(seed=4, noise=False).epoch(10.0, TRUTH)]
    forger = NmeaForger(seed=7, kinds=(kind,))
    forged = [_text(s) for s in forger.forge(L76KEmitter(seed=4, noise=False).epoch(10.0, TRUTH))]
    for s in forged:
        pynmea2.parse(s, check=True)                       # raises on a bad checksum
    changed = [(a, b) for a, b in zip(clean, forged) if a != b]
    assert changed and len(forger.log) == 1
    if kind in ("lat", "lon", "time"):                     # carried by GGA, GLL and RMC alike
        assert len(changed) >= 3
    field = lambda s, i: s.split(",")[i]  # noqa: E731
    if kind == "lat":
        lat = {field(b, {"GGA": 2, "GLL": 1, "RMC": 3}[b[3:6]]) for _, b in changed}
        assert len(lat) == 1                               # the same wrong latitude in every sentence


@pytest.fixture(scope="module")
def clean_run():
    return _fly(())


def _fly(faults):
    opts = SimOptions(seed=2, gps_noise="realistic", duration_s=150.0, faults=faults)
    return run_sim(load_vessel("foka"), load_mission(DEMO), opts)


def _error(res):
    tr = res.trace
    return np.hypot(tr["est_n"] - tr["truth_n"], tr["est_e"] - tr["truth_e"])


@pytest.mark.slow
def test_lone_forged_fixes_never_move_the_estimate_half_a_metre_nor_fire_a_failsafe(clean_run):
    res = _fly((parse_fault("gps-forge@20:120=0.5"),))     # every forgery kind, on about one epoch in three
    drv = res.report["gnss_driver"]
    assert res.report["gnss_forged_epochs"] >= 30
    refused = drv["jump_fixes"] + drv["backward_fixes"] + drv["skew_fixes"] + drv["calendar_fixes"]
    assert refused >= 5 and drv["parse_errors"] >= 1        # the driver saw them
    assert res.report["failsafe_events"] == [] and res.report["final_mode"] == "AUTO"
    clean, forged = _error(clean_run), _error(res)
    n = min(len(clean), len(forged))
    added = forged[:n] - clean[:n]                          # same seed, same receiver noise: the forgeries' doing
    assert added.max() < 0.5, f"forged fixes moved the estimate {added.max():.2f} m"


def test_forgery_fractions_are_checked():
    with pytest.raises(ValueError, match="fraction"):
        parse_fault("gps-forge@10=1.5")
