"""The INA226 power monitor (drivers/power_monitor/ina226.py, a register driver of the project's own) on a
register-level emulated INA226: the registers by hand-worked numbers, the voltage and current it reports, a
chip that is not an INA226 refused, a bus error a fault it recovers from, and the config errors named."""
import logging

import pytest

from autopilot.files.boat import PowerMonitorConfig
from autopilot.vocab.schema import ConfigError, build
from drivers.i2c_adapter import SMBusI2C
from drivers.power_monitor import PowerMonitor, ina226_calibration
from drivers.power_monitor.ina226 import CONFIG_SETUP
from hil.devices.ina219_emulator import Ina219Emulator
from hil.devices.ina226_emulator import (
    BUS,
    CALIBRATION,
    CONFIG,
    CURRENT,
    DIE_ID,
    MANUFACTURER_ID,
    POWER,
    SHUNT,
    Ina226Emulator,
)


def monitor(chip, **cfg):
    cfg = PowerMonitorConfig(**{"kind": "ina226", "shunt_ohms": chip.shunt_ohms, "max_current_a": 40.0, **cfg})
    return PowerMonitor(cfg, i2c=SMBusI2C(1, bus=chip.smbus()))


def test_the_emulated_chip_follows_the_datasheet():
    chip = Ina226Emulator(shunt_ohms=0.002)
    bus = chip.smbus()
    assert bus.read_i2c_block_data(0x40, CONFIG, 2) == [0x41, 0x27]           # reset value
    assert bus.read_i2c_block_data(0x40, MANUFACTURER_ID, 2) == [0x54, 0x49]  # "TI"
    assert bus.read_i2c_block_data(0x40, DIE_ID, 2) == [0x22, 0x60]
    chip.set_input(12.0, 10.0)                                                 # 20 mV across 2 mohm
    bus.write_i2c_block_data(0x40, CALIBRATION, [0x0A, 0x00])                 # CAL 2560: 1 mA/bit
    hi, lo = bus.read_i2c_block_data(0x40, SHUNT, 2)
    assert (hi << 8 | lo) == 8000                                              # 20 mV / 2.5 uV
    hi, lo = bus.read_i2c_block_data(0x40, BUS, 2)
    assert (hi << 8 | lo) == 9600                                              # 12 V / 1.25 mV
    hi, lo = bus.read_i2c_block_data(0x40, CURRENT, 2)
    assert (hi << 8 | lo) == 10000                                             # 8000 x 2560 / 2048: 10 A
    hi, lo = bus.read_i2c_block_data(0x40, POWER, 2)
    assert (hi << 8 | lo) == 4800                                              # 120 W at 25 mW/bit
    chip.set_input(12.0, -50.0)                                                # charging, 100 mV: clipped
    hi, lo = bus.read_i2c_block_data(0x40, SHUNT, 2)
    assert (hi << 8 | lo) - 0x10000 == -32768
    bus.write_i2c_block_data(0x40, CONFIG, [0x80, 0x00])                      # RST
    assert chip.register(CONFIG) == 0x4127 and chip.register(CALIBRATION) == 0


def test_calibration_is_worked_out_from_the_shunt_and_the_largest_current():
    cal, lsb = ina226_calibration(0.002, 40.0)                  # 80 mV at 40 A
    assert cal == 2097 and lsb == pytest.approx(40.0 / 32768, rel=1e-3)
    cal, lsb = ina226_calibration(0.0001, 20.0)                 # 2 mV: CAL would pass 15 bits, LSB coarser
    assert cal == 0x7FFF and lsb == pytest.approx(0.00512 / (0x7FFF * 0.0001))
    with pytest.raises(ValueError, match="81.92 mV"):
        ina226_calibration(0.002, 50.0)
    with pytest.raises(ConfigError, match="max_current_a.*81.92 mV"):
        build(PowerMonitorConfig, {"kind": "ina226", "shunt_ohms": 0.002, "max_current_a": 50.0}, "boat.yaml")
    # the same section is fine for an INA219 (320 mV): the check is the chip's
    build(PowerMonitorConfig, {"kind": "ina219", "shunt_ohms": 0.002, "max_current_a": 50.0}, "boat.yaml")


@pytest.mark.parametrize("section, key, why", [
    ({"shunt_ohms": 0.0}, "shunt_ohms", "at least"),
    ({"shunt_ohms": -0.002}, "shunt_ohms", "at least"),
    ({"max_current_a": 5000.0}, "max_current_a", "at most 1000"),
    ({"max_current_a": 0.0}, "max_current_a", "at least"),
    ({"shunt_ohms": 0.01, "max_current_a": 10.0}, "max_current_a", "100.0 mV across the shunt.*81.92 mV"),
])
def test_a_section_the_ina226_cannot_measure_is_refused_naming_the_key(section, key, why):
    with pytest.raises(ConfigError, match=f"^boat.yaml: {key}: .*{why}"):
        build(PowerMonitorConfig, {"kind": "ina226", "shunt_ohms": 0.002, "max_current_a": 40.0, **section},
              "boat.yaml")


def test_voltage_current_and_consumed_charge():
    chip = Ina226Emulator(shunt_ohms=0.0005)
    chip.set_input(25.2, 30.0)                                   # a 6S pack at 30 A: 15 mV across 0.5 mohm
    mon = monitor(chip, max_current_a=150.0, poll_rate_hz=10.0)
    r = mon.poll(0.0)
    assert r is not None, mon.health(0.0)
    assert chip.register(CONFIG) & 0x0FFF == CONFIG_SETUP
    assert r.voltage_v == pytest.approx(25.2 + 0.015, abs=0.002)  # bus at IN- plus the shunt
    assert r.current_a == pytest.approx(30.0, abs=0.01)
    chip.set_input(25.0, -4.0)                                   # charging reads negative
    assert mon.poll(0.1).current_a == pytest.approx(-4.0, abs=0.01)
    chip.set_input(25.0, 12.0)
    t = 0.1
    while t < 60.1:
        t = round(t + 0.05, 6)
        r = mon.poll(t)
    assert r.consumed_mah == pytest.approx(12.0 * 60.0 / 3.6, rel=0.01)
    assert mon.health(t)[0] == "OK" and mon.errors == 0


def test_a_chip_that_is_not_an_ina226_is_refused_and_counted_as_a_fault():
    wrong = Ina226Emulator(shunt_ohms=0.002, die_id=0x2281)      # a TI chip, another die
    wrong.set_input(12.0, 1.0)
    mon = monitor(wrong)
    assert mon.poll(0.0) is None and mon.errors == 1
    level, msg, _ = mon.health(0.0)
    assert level == "ERROR" and "WrongChipError" in msg and "not an INA226" in msg and "0x2281" in msg
    assert wrong.register(CONFIG) == 0x4127                      # nothing written to it
    ina219 = Ina219Emulator(shunt_ohms=0.002)                    # an INA219 strapped to the address
    ina219.set_input(12.0, 1.0)
    mon = monitor(ina219)
    assert mon.poll(0.0) is None and "not an INA226" in mon.health(0.0)[1] and "0xffff" in mon.health(0.0)[1]


def test_a_bus_error_is_a_fault_and_the_monitor_recovers(caplog):
    chip = Ina226Emulator(shunt_ohms=0.002)
    chip.set_input(14.8, 3.0)
    mon = monitor(chip, stale_timeout_s=2.0, reopen_s=1.0)
    assert mon.poll(0.0) is not None
    caplog.set_level(logging.WARNING, logger="drivers.power_monitor")
    chip.inject_errors(1)
    assert mon.poll(0.1) is not None                             # the last reading, still fresh
    assert mon.errors == 1 and "OSError" in mon.last_error
    chip.set_present(False)                                      # the wire came off
    seen = []
    t = 0.1
    while t < 5.0:
        t = round(t + 0.05, 6)
        seen.append((t, mon.poll(t)))                            # never raises
    assert all(r is not None for tt, r in seen if tt <= 2.0)     # the last reading (t 0) while fresh
    assert all(r is None for tt, r in seen if tt > 2.0)          # then stale: the battery is unknown
    level, msg, _ = mon.health(t)
    assert level == "ERROR" and "silent for 5.0 s" in msg and "no acknowledge from 0x40" in msg
    failed = [r.message for r in caplog.records if "failed" in r.message]
    assert len(failed) == 1 and "INA226 i2c-1 0x40" in failed[0]     # one warning naming the chip
    chip.set_present(True)
    chip.set_input(14.5, 3.0)
    t2 = t
    while mon.poll(t2) is None and t2 < t + 2.0:
        t2 = round(t2 + 0.05, 6)
    assert t2 - t <= 1.1 and mon.poll(t2).voltage_v == pytest.approx(14.506, abs=0.002)
    assert any("answers again" in r.message for r in caplog.records)


def test_a_chip_that_browned_out_is_set_up_again_on_the_spot():
    chip = Ina226Emulator(shunt_ohms=0.002)
    chip.set_input(16.0, 8.0)
    mon = monitor(chip)
    assert mon.poll(0.0).current_a == pytest.approx(8.0, abs=0.01)
    chip.reset()                                                 # defaults, calibration 0: current would read 0
    assert mon.poll(1.0).current_a == pytest.approx(8.0, abs=0.01)
    assert mon.errors == 0 and mon.chip.setups == 2
