"""The boat config's `battery:` section for each power monitor kind (ina219, ina226, ads1115): `autopilot check`
passes a section the chip can measure, refuses one it cannot with a line naming the file, the key and why, and
what it passes is the monitor the hw backend opens (the right chip, no bus touched before the first poll)."""
from __future__ import annotations

import pytest

from autopilot.cli.main import main
from autopilot.files.boat import load_boat_config
from drivers.power_monitor import PowerMonitor
from tests.support.paths import REPO

DEMO = REPO / "config" / "missions" / "demo.yaml"

GOOD = {
    "ina219": ("{kind: ina219, address: 0x41, shunt_ohms: 0.002, max_current_a: 60}", "INA219 i2c-1 0x41"),
    "ina226": ("{kind: ina226, bus: 3, shunt_ohms: 0.0005, max_current_a: 150}", "INA226 i2c-3 0x40"),
    "ads1115": ("{kind: ads1115, address: 0x49, voltage_channel: 2, current_channel: 3, voltage_ratio: 10.1, "
                "amps_per_volt: 36.36, amps_offset_v: 0.33, max_current_a: 90}", "ADS1115 i2c-1 0x49"),
}


def boat_file(tmp_path, battery: str, esc: str = "{backend: pigpio}"):
    path = tmp_path / "boat.yaml"
    path.write_text(f"vessel: foka\nmission: {DEMO}\nbackend: hw\nros: off\nesc: {esc}\nbattery: {battery}\n")
    return path


def check(path, capsys):
    code = main(["check", "--config", str(path)])
    out = capsys.readouterr().out
    return code, out, [ln for ln in out.splitlines() if ln.startswith(f"{path}: ")]


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_each_kind_passes_check_and_is_the_monitor_the_hw_backend_opens(tmp_path, capsys, kind):
    section, hardware_id = GOOD[kind]
    path = boat_file(tmp_path, section)
    code, out, problems = check(path, capsys)
    assert code == 0 and problems == [], out
    assert "check: OK: vessel foka" in out
    cfg = load_boat_config(path).battery
    assert cfg is not None and cfg.kind == kind
    mon = PowerMonitor(cfg, i2c=object())        # built from the section alone: no bus traffic until a poll
    assert mon.hardware_id == hardware_id and type(mon.chip).__module__ == f"drivers.power_monitor.{kind}"


@pytest.mark.parametrize("battery, key, why", [
    ("{kind: ina228}", "battery.kind", "must be one of ina219, ina226, ads1115; got 'ina228'"),
    ("{kind: ina226, shunt_ohms: 0}", "battery.shunt_ohms", "must be at least 1e-05 ohm, got 0"),
    ("{kind: ina226, shunt_ohms: -0.002}", "battery.shunt_ohms", "must be at least 1e-05 ohm, got -0.002"),
    ("{kind: ina219, shunt_ohms: 0}", "battery.shunt_ohms", "must be at least 1e-05 ohm"),
    ("{kind: ina226, shunt_ohms: 0.002, max_current_a: 50}", "battery.max_current_a",
     "50 A through 0.002 ohm is 100.0 mV across the shunt; the INA226 measures at most 81.92 mV"),
    ("{kind: ina219, shunt_ohms: 0.01, max_current_a: 40}", "battery.max_current_a",
     "the INA219 measures at most 320 mV"),
    ("{kind: ina226, max_current_a: 2000}", "battery.max_current_a", "must be at most 1000"),
    ("{kind: ads1115}", "battery.address", "an ADS1115 is at 0x48-0x4B (its ADDR pin), not 0x40"),
    ("{kind: ads1115, address: 0x48, current_channel: 0}", "battery.current_channel",
     "AIN0 is already voltage_channel"),
    ("{kind: ads1115, address: 0x48, gain: 3}", "battery.gain", "3 is not an ADS1115 gain"),
    ("{kind: ads1115, address: 0x48, amps_per_volt: 17, max_current_a: 80}", "battery.max_current_a",
     "80 A is 4.706 V at the current input, beyond the 4.096 V full scale of gain 1"),
    ("{kind: ads1115, address: 0x48, voltage_channel: 4}", "battery.voltage_channel", "must be at most 3"),
])
def test_a_section_the_chip_cannot_measure_names_file_key_and_reason(tmp_path, capsys, battery, key, why):
    path = boat_file(tmp_path, battery)
    code, out, problems = check(path, capsys)
    assert code == 1 and "nothing started" in out
    assert len(problems) == 1 and problems[0].startswith(f"{path}: {key}: ") and why in problems[0], out


def test_a_monitor_at_the_esc_boards_address_is_refused(tmp_path, capsys):
    esc = "{backend: pca9685, pca9685_channels: [0, 1]}"
    path = boat_file(tmp_path, GOOD["ina226"][0].replace("bus: 3", "bus: 1"), esc=esc)
    code, out, problems = check(path, capsys)
    assert code == 1 and len(problems) == 1, out
    assert problems[0].startswith(f"{path}: battery.address: 0x40 on i2c-1 is the PCA9685's"), out
    path = boat_file(tmp_path, GOOD["ina226"][0], esc=esc)      # the same address on another bus is fine
    assert check(path, capsys)[0] == 0
