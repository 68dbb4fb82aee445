"""Field parameters: validated by the files' schema, kept across a restart, applied to a flying boat."""
from __future__ import annotations

import pytest

from autopilot.files.tunables import TUNABLES, ParamStore, load_with_overlay, overlay_path_for
from autopilot.vocab.config import ConfigError, load_mission, load_vessel

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


@pytest.fixture
def files():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    return load_vessel("foka"), load_mission(root / "config/missions/demo.yaml")


def test_every_tunable_reads_as_a_number_and_fits_a_mavlink_param_id(files):
    store = ParamStore(*files)
    for t in TUNABLES:
        assert len(t.name) <= 16 and t.name.upper() == t.name
        assert isinstance(store.value(t.name), float)


def test_a_set_value_reads_back_and_survives_a_restart(files, tmp_path):
    overlay = overlay_path_for(tmp_path / "boat.yaml")
    assert overlay.name == "boat.params.yaml"
    store = ParamStore(*files, overlay)
    ok, text = store.set("CRUISE_SPEED", 1.1)
    assert ok and "applied now" in text, text
    ok, _ = store.set("FS_LINK_ACTION", 2)
    assert ok and store.vessel.failsafe.link.action == "hold"
    again = load_with_overlay(*files, overlay)                 # a restart reads the overlay
    assert again.value("CRUISE_SPEED") == pytest.approx(1.1)
    assert again.mission.cruise_speed_mps == pytest.approx(1.1) and again.value("FS_LINK_ACTION") == 2.0


def test_out_of_range_and_unknown_values_are_refused_and_change_nothing(files, tmp_path):
    overlay = tmp_path / "boat.params.yaml"
    store = ParamStore(*files, overlay)
    ok, text = store.set("HDG_ZETA", 50.0)
    assert not ok and "control.heading.zeta" in text and "at most 3" in text, text
    ok, text = store.set("FS_LINK_ACTION", 7)
    assert not ok and "0 (rtl)" in text
    ok, text = store.set("ARM_MIN_SATS", 4.5)
    assert not ok and "whole number" in text
    ok, text = store.set("CRUISE_SPEED", float("nan"))
    assert not ok
    assert not overlay.exists() and store.value("HDG_ZETA") == 1.0
    with pytest.raises(KeyError):
        store.set("NO_SUCH_PARAM", 1.0)


def test_a_bad_overlay_file_names_the_file_the_parameter_and_the_reason(files, tmp_path):
    overlay = tmp_path / "boat.params.yaml"
    overlay.write_text("HDG_ZETA: 99\n")
    with pytest.raises(ConfigError) as e:
        load_with_overlay(*files, overlay)
    assert str(overlay) in str(e.value) and "HDG_ZETA" in str(e.value) and "at most" in str(e.value)
    overlay.write_text("NOPE: 1\n")
    with pytest.raises(ConfigError, match="unknown parameter"):
        load_with_overlay(*files, overlay)


def test_gains_and_speed_changed_in_flight_reach_the_running_autopilot(files):
    from hil.sim.runner import SimOptions, run_sim
    vessel, mission = files
    store = ParamStore(vessel, mission)
    seen = {}

    def on_cycle(t, ap, truth):
        if "kp" not in seen and t >= 20.0:
            seen["kp"] = ap.heading_ctl.kp
            store.attach(ap)
            assert store.set("HDG_OMEGA", 1.2 * vessel.control.heading.omega_n_rps)[0]
            assert store.set("CRUISE_SPEED", 0.6)[0]
            seen["after"] = ap.heading_ctl.kp
            seen["index"] = ap.guidance.index
        if "after" in seen and t >= 40.0 and "speed" not in seen:
            seen["speed"] = ap.last_result.setpoint.speed_mps if ap.last_result.setpoint else None
    r = run_sim(vessel, mission, SimOptions(devices="typed", gps_noise="white", on_cycle=on_cycle)).report
    assert seen["after"] == pytest.approx(1.44 * seen["kp"])
    assert seen["speed"] is not None and seen["speed"] <= 0.6 + 1e-9
    assert r["mission_complete"] and r["failsafe_events"] == []
