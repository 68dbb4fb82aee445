"""The pack's power monitor through the real Adafruit INA219 library, on a register-level emulated INA219: the
chip's registers by hand-worked numbers, the voltage, current and consumed charge the driver reports, and the
faults a boat has (a loose wire, a chip that browned out) reported without an exception."""
import logging

import pytest

from autopilot.files.boat import PowerMonitorConfig
from autopilot.vocab.schema import ConfigError, build
from drivers.i2c_adapter import SMBusI2C
from drivers.power_monitor import PowerMonitor, ina219_calibration
from hil.devices.ina219_emulator import BUS, CALIBRATION, CONFIG, CURRENT, SHUNT, Ina219Emulator


def monitor(chip, **cfg):
    cfg = PowerMonitorConfig(**{"shunt_ohms": chip.shunt_ohms, "max_current_a": 20.0, **cfg})
    return PowerMonitor(cfg, i2c=SMBusI2C(1, bus=chip.smbus()))


def test_the_emulated_chip_follows_the_datasheet():
    chip = Ina219Emulator(shunt_ohms=0.01)
    bus = chip.smbus()
    assert bus.read_i2c_block_data(0x40, CONFIG, 2) == [0x39, 0x9F]          # reset value
    chip.set_input(12.0, 2.0)                                                  # 20 mV across 10 mohm
    bus.write_i2c_block_data(0x40, CALIBRATION, [0x10, 0x01])                 # bit 0 is not writable
    assert chip.register(CALIBRATION) == 0x1000
    hi, lo = bus.read_i2c_block_data(0x40, SHUNT, 2)
    assert (hi << 8 | lo) == 2000                                              # 20 mV / 10 uV
    hi, lo = bus.read_i2c_block_data(0x40, BUS, 2)
    assert (hi << 8 | lo) >> 3 == 3000 and lo & 0x2                           # 12 V / 4 mV, conversion ready
    hi, lo = bus.read_i2c_block_data(0x40, CURRENT, 2)
    assert (hi << 8 | lo) == 2000                                              # shunt x 4096 / 4096
    chip.set_input(12.0, -5.0)                                                 # charging: 50 mV, over 40 mV PG/1
    bus.write_i2c_block_data(0x40, CONFIG, [0x01, 0x9F])                      # PG /1 (40 mV)
    hi, lo = bus.read_i2c_block_data(0x40, BUS, 2)
    assert lo & 0x1                                                            # overflow flag
    hi, lo = bus.read_i2c_block_data(0x40, SHUNT, 2)
    assert (hi << 8 | lo) - 0x10000 == -4000                                   # clipped at -40 mV
    bus.write_i2c_block_data(0x40, CONFIG, [0x80, 0x00])                      # RST
    assert chip.register(CONFIG) == 0x399F and chip.register(CALIBRATION) == 0


def test_calibration_is_worked_out_from_the_shunt_and_the_largest_current():
    cal, lsb, pga = ina219_calibration(0.1, 3.2)                # Adafruit's breakout: 3.2 A = 320 mV, PG /8
    assert (cal, pga) == (4194, 3) and lsb == pytest.approx(3.2 / 32768, rel=1e-3)
    cal, lsb, pga = ina219_calibration(0.0005, 60.0)            # a boat's 0.5 mohm shunt, 30 mV at 60 A
    assert pga == 0 and lsb == pytest.approx(60.0 / 32768, rel=1e-3)
    with pytest.raises(ValueError, match="320 mV"):
        ina219_calibration(0.1, 5.0)
    with pytest.raises(ConfigError, match="max_current_a"):
        build(PowerMonitorConfig, {"shunt_ohms": 0.1, "max_current_a": 5.0}, "boat.yaml")


def test_voltage_current_and_consumed_charge_through_the_adafruit_library():
    chip = Ina219Emulator(shunt_ohms=0.002)
    chip.set_input(15.2, 12.5)
    mon = monitor(chip, max_current_a=60.0, poll_rate_hz=10.0)
    r = mon.poll(0.0)
    assert r is not None
    # the pack is at IN+: the bus voltage at IN- plus the 25 mV across the shunt
    assert r.voltage_v == pytest.approx(15.2 + 0.025, abs=0.005)
    assert r.current_a == pytest.approx(12.5, abs=0.01)
    t = 0.0
    while t < 60.0:                                              # a minute at 12.5 A: 208.3 mAh
        t = round(t + 0.05, 6)
        r = mon.poll(t)
    assert r.consumed_mah == pytest.approx(12.5 * 60.0 / 3.6, rel=0.01)
    assert 595 <= mon.reads <= 605 and chip.conversions <= 3 * mon.reads   # at its poll rate (10 Hz), not 20
    level, msg, vals = mon.health(t)
    assert level == "OK" and "15.2" in msg and "208 mAh" in msg


def test_a_monitor_that_stops_answering_goes_stale_says_so_and_comes_back(caplog):
    chip = Ina219Emulator(shunt_ohms=0.002)
    chip.set_input(14.8, 3.0)
    mon = monitor(chip, stale_timeout_s=2.0, reopen_s=1.0)
    assert mon.poll(0.0) is not None
    chip.set_present(False)                                      # the wire came off
    caplog.set_level(logging.WARNING, logger="drivers.power_monitor")
    seen = []
    t = 0.0
    while t < 6.0:
        t = round(t + 0.02, 6)
        seen.append((t, mon.poll(t)))                            # never raises
    assert all(r is not None for tt, r in seen if tt <= 2.0)     # the last reading, while fresh
    assert all(r is None for tt, r in seen if tt > 2.0)          # then the battery is unknown
    level, msg, _ = mon.health(t)
    assert level == "ERROR" and "silent for 6.0 s" in msg and "0x40" in msg
    assert sum("failed" in r.message for r in caplog.records) == 1   # one warning, not one per poll
    chip.set_present(True)
    chip.set_input(14.6, 3.0)
    t2 = t
    while mon.poll(t2) is None and t2 < t + 2.0:
        t2 = round(t2 + 0.02, 6)
    assert t2 - t <= 1.1                                         # set up anew within reopen_s
    assert mon.poll(t2).voltage_v == pytest.approx(14.606, abs=0.005)
    assert any("answers again" in r.message for r in caplog.records)


def test_a_chip_that_reset_itself_is_set_up_again():
    chip = Ina219Emulator(shunt_ohms=0.002)
    chip.set_input(16.0, 8.0)
    mon = monitor(chip)
    assert mon.poll(0.0).current_a == pytest.approx(8.0, abs=0.01)
    chip.smbus().write_i2c_block_data(0x40, CONFIG, [0x80, 0x00])   # a brown-out: defaults, calibration 0
    assert mon.poll(1.0).current_a == pytest.approx(8.0, abs=0.01)


def test_an_absent_monitor_at_start_is_a_health_error_not_an_exception():
    chip = Ina219Emulator(address=0x41, shunt_ohms=0.002)            # strapped to 0x41, config says 0x40
    mon = monitor(chip)
    assert mon.poll(0.0) is None and mon.poll(5.0) is None
    level, msg, _ = mon.health(5.0)
    assert level == "ERROR" and "no power monitor reading yet" in msg
