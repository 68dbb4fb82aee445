"""Magnetometer calibration: fit accuracy on the simulated distortion, refusals with reasons, YAML, CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from autopilot.cli.calibrate import sim_report
from autopilot.cli.main import main as cli_main
from autopilot.vocab.config import load_vessel
from autopilot.vocab.schema import ConfigError
from estimation.heading.mag_calibration import (
    MagCalibration,
    fit_calibration,
    read_calibration,
    soft_iron_error_pct,
    write_calibration,
)
from hil.sim.mag_distortion import sim_distortion, simulate_readings


@pytest.fixture(scope="module")
def foka():
    return load_vessel("foka")


@pytest.mark.parametrize("method", ["3d", "2d"])
@pytest.mark.parametrize("seed", [1, 2])
def test_sim_calibration_meets_targets(foka, method, seed):
    fit, rep = sim_report(foka, method, hard_iron_ut=30.0, soft_iron_pct=10.0, noise_ut=1.0, seed=seed)
    assert fit.accepted, fit.reason
    assert rep["method"] == method
    assert rep["hard_iron_err_ut"] <= 1.0
    assert rep["soft_iron_err_pct"] <= 2.0
    assert rep["heading_err_rms_deg_before"] > 20.0
    assert rep["heading_err_rms_deg_after"] <= 2.0


def test_3d_fit_recovers_offset_and_inverse_soft_iron(foka):
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, _ = simulate_readings(foka, h, S, 0.0, "3d", np.random.default_rng(3))
    fit = fit_calibration(readings, foka.sensors.mag.field_t, "3d")
    assert np.allclose(fit.calibration.offset_t, h, atol=1e-9)
    assert soft_iron_error_pct(fit.calibration.matrix, S) < 1e-3
    corrected = fit.calibration.apply(readings)
    assert np.allclose(np.linalg.norm(corrected, axis=1), foka.sensors.mag.field_t, rtol=1e-6)
    assert fit.figures["coverage"] == 1.0 and fit.figures["field_ratio"] == pytest.approx(1.0, abs=0.01)


def test_half_turn_is_refused_for_coverage(foka):
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, headings = simulate_readings(foka, h, S, 1e-6, "2d", np.random.default_rng(4))
    arc = readings[(headings > 0) & (headings < math.radians(150))]
    fit = fit_calibration(arc, foka.sensors.mag.field_t, "2d", foka.sensors.mag.inclination_deg)
    assert not fit.accepted
    assert "coverage" in fit.reason and "full turns" in fit.reason


def test_3d_fit_of_level_turns_is_refused_with_advice(foka):
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, _ = simulate_readings(foka, h, S, 1e-6, "2d", np.random.default_rng(5))
    fit = fit_calibration(readings, foka.sensors.mag.field_t, "3d")
    assert not fit.accepted
    assert "coverage" in fit.reason and "'2d'" in fit.reason
    assert fit.calibration.apply((1e-5, 2e-5, 3e-5)) == pytest.approx((1e-5, 2e-5, 3e-5)), "identity when refused"


def test_readings_in_wrong_units_are_refused_for_field_strength(foka):
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, _ = simulate_readings(foka, h, S, 1e-6, "3d", np.random.default_rng(6))
    fit = fit_calibration(readings * 1e4, foka.sensors.mag.field_t, "3d")   # gauss mistaken for tesla
    assert not fit.accepted and "expected" in fit.reason and "field" in fit.reason


def test_too_few_readings_raise_or_are_refused(foka):
    with pytest.raises(ValueError, match="at least 10"):
        fit_calibration(np.ones((5, 3)) * 1e-5, 50e-6, "3d")
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, _ = simulate_readings(foka, h, S, 1e-6, "3d", np.random.default_rng(7))
    fit = fit_calibration(readings[:40], foka.sensors.mag.field_t, "3d")
    assert not fit.accepted and "only 40 readings" in fit.reason


def test_yaml_round_trip(tmp_path, foka):
    fit, _ = sim_report(foka, "3d", seed=3)
    path = write_calibration(tmp_path / "mag.yaml", fit, "2025-06-01T10:00:00+00:00", "foka")
    back = read_calibration(path)
    assert back.method == "3d"
    assert np.allclose(back.offset_t, fit.calibration.offset_t, rtol=1e-12)
    assert np.allclose(back.matrix, fit.calibration.matrix, rtol=1e-12)
    assert back.figures["n_samples"] == 600 and back.figures["accepted"] is True
    m = (1e-5, -2e-5, 4e-5)
    assert np.allclose(back.apply(m), fit.calibration.apply(m))
    assert np.allclose(back.apply_xyz(*m), back.apply(m))
    text = path.read_text()
    assert "time_utc: '2025-06-01T10:00:00+00:00'" in text and "method: 3d" in text


def test_bad_calibration_files_name_key_and_reason(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("offset_t: [1, 2]\nmatrix: [[1,0,0],[0,1,0],[0,0,1]]\n")
    with pytest.raises(ConfigError, match="offset_t: must be a list of 3 numbers"):
        read_calibration(p)
    p.write_text("offset_t: [20, 0, 0]\nmatrix: [[1,0,0],[0,1,0],[0,0,1]]\n")
    with pytest.raises(ConfigError, match="tesla"):
        read_calibration(p)
    p.write_text("offset_t: [0, 0, 0]\nmatrix: [[1,0,0],[0,1,0],[0,0,0]]\n")
    with pytest.raises(ConfigError, match="singular"):
        read_calibration(p)
    p.write_text("offset_t: [0, 0, 0]\nmatrix: [[1,0,0],[0,1,0],[0,0,1]]\ncolour: red\n")
    with pytest.raises(ConfigError, match="colour: unknown key"):
        read_calibration(p)
    with pytest.raises(ConfigError, match="file not found"):
        read_calibration(tmp_path / "missing.yaml")


def test_apply_single_and_batch_agree():
    cal = MagCalibration((1e-5, 2e-5, -1e-5), ((1.1, 0.05, 0), (0.05, 0.9, 0), (0, 0, 1)))
    m = np.array([[3e-5, 1e-5, 2e-5], [-1e-5, 4e-5, 0.0]])
    assert np.allclose(cal.apply(m), [cal.apply(row) for row in m])


def test_cli_sim_writes_report_and_file(tmp_path, capsys):
    report, out = tmp_path / "r.json", tmp_path / "mag.yaml"
    rc = cli_main(["calibrate", "mag", "--sim", "--report", str(report), "--out", str(out)])
    assert rc == 0
    rep = json.loads(report.read_text())
    for key in ("hard_iron_err_ut", "soft_iron_err_pct", "heading_err_rms_deg_before", "heading_err_rms_deg_after"):
        assert key in rep
    assert read_calibration(out).method == "3d"
    assert "hard-iron error" in capsys.readouterr().out


def test_cli_from_log_fits_and_refuses(tmp_path, foka, capsys):
    h, S = sim_distortion(foka, 30.0, 10.0)
    readings, headings = simulate_readings(foka, h, S, 1e-6, "2d", np.random.default_rng(8))
    log = tmp_path / "log.csv"
    rows = ["t,mag_x_t,mag_y_t,mag_z_t,note"] + [f"{i * 0.1:.1f},{x:.9e},{y:.9e},{z:.9e},ok"
                                                   for i, (x, y, z) in enumerate(readings)]
    rows.insert(5, "0.45,,,,dropout")
    log.write_text("\n".join(rows) + "\n")
    out = tmp_path / "mag.yaml"
    assert cli_main(["calibrate", "mag", "--from-log", str(log), "--out", str(out)]) == 0
    cal = read_calibration(out)
    assert cal.method == "2d", "level turns only: auto picks the 2-D fit"
    # a quarter turn is refused and writes nothing
    short = tmp_path / "short.csv"
    short.write_text("\n".join(rows[:150]) + "\n")
    out2 = tmp_path / "refused.yaml"
    assert cli_main(["calibrate", "mag", "--from-log", str(short), "--out", str(out2), "--method", "2d"]) == 2
    assert not out2.exists()
    assert "REFUSED" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("t,mx,my,mz\n0,1,2,3\n")
    assert cli_main(["calibrate", "mag", "--from-log", str(bad), "--out", str(out2)]) == 1
    assert "mag_x_t" in capsys.readouterr().err


def test_live_recording_through_the_real_driver_on_the_emulated_chip(foka, capsys):
    """Two slow level turns, read through the LSM9DS1 driver from the register-level emulator."""
    import dataclasses

    from autopilot.cli.calibrate import record_live
    from drivers.lsm9ds1 import Lsm9ds1Source
    from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
    from hil.sim.plant import Truth

    h, S = sim_distortion(foka, 30.0, 10.0)
    mag_cfg = dataclasses.replace(foka.sensors.mag, hard_iron_t=tuple(h), soft_iron=tuple(S.ravel()))
    emulator = Lsm9ds1Emulator(foka.sensors.imu, mag_cfg, seed=1)
    r = 2 * 2 * math.pi / 60.0                                  # two turns in 60 s
    clock = [0.0]

    def truth_at(t):
        return Truth(t, 0.0, 0.0, math.remainder(r * t, 2 * math.pi), 0.5, 0.0, r, 0.0, 0.0, (0.0, 0.0))

    def sleep(dt):
        clock[0] += dt
        emulator.update(clock[0], truth_at(clock[0]))
    emulator.update(0.0, truth_at(0.0))
    source = Lsm9ds1Source.open_emulated(foka.sensors.imu, foka.sensors.mag, emulator)
    readings = record_live(foka, 1, 60.0, source=source, clock=lambda: clock[0], sleep=sleep)
    assert len(readings) > 1000
    assert "coverage" in capsys.readouterr().out
    fit = fit_calibration(readings, foka.sensors.mag.field_t, "2d", foka.sensors.mag.inclination_deg)
    assert fit.accepted, fit.reason
    bz = foka.sensors.mag.field_t * math.sin(math.radians(foka.sensors.mag.inclination_deg))
    assert np.linalg.norm(np.array(fit.calibration.offset_t[:2]) - (h[:2] + S[:2, 2] * bz)) < 1e-6
    assert soft_iron_error_pct(fit.calibration.matrix, S, "2d") < 2.0
