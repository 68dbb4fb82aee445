"""`autopilot bench gps|imu|esc`: each takes --config BOAT.yaml (its vessel's port, bus and outputs, its ESC
backend) and runs with --emulated on a laptop against the project's stand-ins (an L76K on a pseudo-terminal, the
emulated LSM9DS1, a pigpiod stand-in)."""
from __future__ import annotations

import json

import pytest
import yaml

from autopilot.cli.main import main
from tests.support.paths import REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"


def boat(tmp_path, *, gpios=(5, 6), gnss_port="/dev/ttyNOPE0", imu_bus=3, esc="backend: pigpio"):
    """A boat config whose vessel differs from foka where the bench tools look: GPIOs, GNSS port, I2C bus."""
    data = yaml.safe_load(FOKA.read_text())
    for t, g in zip(data["thrusters"], gpios):
        t["gpio"] = g
    data["sensors"]["gnss"]["port"] = gnss_port
    data["sensors"]["imu"]["bus"] = imu_bus
    vessel = tmp_path / "vessel.yaml"
    vessel.write_text(yaml.safe_dump(data, sort_keys=False))
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: {vessel}\nbackend: hw\nros: off\nesc: {{{esc}}}\n")
    return cfg


def test_bench_esc_emulated_runs_without_hardware_on_foka(capsys):
    assert main(["bench", "esc", "--emulated"]) == 0
    out = capsys.readouterr().out
    assert "left GPIO13: pulse now off" in out and "right GPIO12: pulse now off" in out


def test_bench_esc_takes_the_outputs_from_the_boat_config_without_gpio(tmp_path, capsys):
    cfg = boat(tmp_path, gpios=(5, 6))
    assert main(["bench", "esc", "--config", str(cfg), "--emulated", "--test", "--propellers-removed",
                 "--offset-us", "40", "--ramp-s", "0.1", "--hold-s", "0.05", "--arming-s", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "left GPIO5: pulse now off" in out and "right GPIO6: pulse now off" in out
    assert "left GPIO5 forward: ramp to 1540 us" in out and "test done" in out and "outputs at neutral" in out
    assert "GPIO13" not in out                         # not foka's, as the --vessel foka default was


def test_bench_esc_emulated_stands_in_for_the_boat_configs_other_backend(tmp_path, capsys):
    cfg = boat(tmp_path, esc="backend: kernel_pwm")
    assert main(["bench", "esc", "--config", str(cfg), "--emulated"]) == 0
    out, err = capsys.readouterr()
    assert "pigpiod stand-in in place of the boat config's kernel_pwm backend" in err
    assert "left GPIO5" in out


@pytest.mark.parametrize("argv, says", [
    (["--gpio", "13,x"], "--gpio 13,x: expected whole numbers"),
    (["--config", "CFG", "--vessel", "foka"], "not both"),
    (["--config", "/nonexistent/boat.yaml"], "/nonexistent/boat.yaml"),
    (["--emulated", "--backend", "pca9685", "--gpio", "0,1"], "cannot drive --backend pca9685"),
])
def test_bench_esc_bad_input_is_a_clear_error(tmp_path, capsys, argv, says):
    argv = [str(boat(tmp_path)) if a == "CFG" else a for a in argv]
    assert main(["bench", "esc", *argv]) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_bench_gps_emulated_prints_fixes_without_hardware(capsys):
    assert main(["bench", "gps", "--emulated", "--count", "2", "--json", "--timeout-s", "10"]) == 0
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    fixes, counts = lines[:-1], lines[-1]
    assert len(fixes) == 2 and all(f["valid"] and abs(f["lat"] - 51.11) < 0.01 for f in fixes)
    assert counts["good_sentences"] > 0


def test_bench_gps_takes_the_port_from_the_boat_config(tmp_path, capsys):
    cfg = boat(tmp_path, gnss_port="/dev/ttyNOPE0")
    assert main(["bench", "gps", "--config", str(cfg), "--baud", "9600"]) == 1
    assert "cannot open /dev/ttyNOPE0" in capsys.readouterr().err


def test_bench_gps_without_a_port_says_how_to_give_one(capsys):
    assert main(["bench", "gps"]) == 1
    err = capsys.readouterr().err
    assert "--port DEV" in err and "--config BOAT.yaml" in err and "--emulated" in err


def test_bench_imu_takes_the_bus_from_the_boat_config(tmp_path, capsys):
    cfg = boat(tmp_path, imu_bus=3)
    assert main(["bench", "imu", "--config", str(cfg), "--emulated", "--count", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "LSM9DS1 on I2C bus 3" in err
    assert len([ln for ln in out.splitlines() if '"heading_deg"' in ln]) == 2
