"""The calibration a backend starts with (autopilot.calibration.store.load_boat_calibration): none on the first
day, and a fit to the simulator's magnetometer refused on the boat's hardware unless asked for."""
from __future__ import annotations

import pytest

from autopilot.calibration.store import load_boat_calibration
from autopilot.vocab.config import load_vessel
from autopilot.vocab.schema import ConfigError
from estimation.heading.mag_calibration import MagCalibration, calibration_from_simulator
from tests.support.boat_files import boat_files, write_boat_calibration, write_sim_calibration


def test_a_named_file_not_written_yet_is_no_calibration_not_an_error(tmp_path):
    _, vfile, cal = boat_files(tmp_path)
    assert not cal.exists()
    assert load_boat_calibration(load_vessel(str(vfile)), "hw", allow_sim=False) is None


def test_the_hw_backend_refuses_a_simulator_calibration_naming_the_option(tmp_path):
    _, vfile, cal = boat_files(tmp_path)
    write_sim_calibration(cal)
    with pytest.raises(ConfigError) as e:
        load_boat_calibration(load_vessel(str(vfile)), "hw", allow_sim=False)
    assert e.value.file == str(cal) and e.value.key == "written_by"
    assert "simulator's magnetometer, not this boat's" in e.value.reason
    assert "--allow-sim-calibration" in e.value.reason


def test_allowed_or_simulated_backends_take_a_simulator_calibration(tmp_path):
    _, vfile, cal = boat_files(tmp_path)
    write_sim_calibration(cal)
    vessel = load_vessel(str(vfile))
    for backend, allow in (("hw", True), ("sim", False), ("gazebo", False)):
        got = load_boat_calibration(vessel, backend, allow_sim=allow)
        assert isinstance(got, MagCalibration) and got.method in ("2d", "3d"), backend


def test_a_calibration_made_on_the_boat_loads_on_hw(tmp_path):
    _, vfile, cal = boat_files(tmp_path)
    write_boat_calibration(cal)
    got = load_boat_calibration(load_vessel(str(vfile)), "hw", allow_sim=False)
    assert got is not None and got.offset_t == pytest.approx((1.0e-6, -2.0e-6, 0.0))


def test_a_malformed_file_stays_an_error(tmp_path):
    _, vfile, cal = boat_files(tmp_path)
    cal.write_text("offset_t: [1.0e-6, 0.0]\nmatrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n")
    with pytest.raises(ConfigError) as e:
        load_boat_calibration(load_vessel(str(vfile)), "hw", allow_sim=True)
    assert e.value.key == "offset_t"


def test_calibration_from_simulator_reads_written_by(tmp_path):
    sim = write_sim_calibration(tmp_path / "sim.yaml")
    boat = write_boat_calibration(tmp_path / "boat.yaml")
    assert calibration_from_simulator(sim) and calibration_from_simulator(str(sim))
    assert not calibration_from_simulator(boat)
    assert calibration_from_simulator({"written_by": "autopilot calibrate mag --sim"})
    assert not calibration_from_simulator({"written_by": 3}) and not calibration_from_simulator({})
    with pytest.raises(ConfigError):
        calibration_from_simulator(tmp_path / "gone.yaml")
    with pytest.raises(TypeError):
        calibration_from_simulator(42)
