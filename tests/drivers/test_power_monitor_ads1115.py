"""An analog power module read by an ADS1115 (drivers/power_monitor/ads1115.py) through the real Adafruit ADS1x15
library, on a register-level emulated ADS1115 (hil/devices/ads1115_emulator.py): the chip's registers by
hand-worked numbers, the pack voltage and current the module's divider and current output give, the faults a boat
has (a loose wire, a hung conversion, an input beyond the full scale, another chip at the address) reported without
an exception, and the sections it cannot read refused naming the key."""
import logging
import time

import pytest

from autopilot.files.boat import PowerMonitorConfig
from autopilot.vocab.schema import ConfigError, build
from drivers.i2c_adapter import SMBusI2C
from drivers.power_monitor import PowerMonitor
from hil.devices.ads1115_emulator import CONFIG, CONVERSION, Ads1115Emulator, PowerSenseModule
from hil.devices.ina226_emulator import Ina226Emulator

MODULE = {"voltage_channel": 2, "current_channel": 3, "voltage_ratio": 10.1, "amps_per_volt": 36.36,
          "amps_offset_v": 0.33}


def rig(busy_reads=1, **module):
    """An emulated ADS1115 at 0x48 with a power module (MODULE, changed by `module`) on its inputs."""
    chip = Ads1115Emulator(0x48, vdd_v=5.0, busy_reads=busy_reads)
    return chip, PowerSenseModule(chip, **{**MODULE, **module})


def monitor(chip, **cfg):
    cfg = PowerMonitorConfig(**{"kind": "ads1115", "address": 0x48, "max_current_a": 90.0, **MODULE, **cfg})
    return PowerMonitor(cfg, i2c=SMBusI2C(1, bus=chip.smbus()))


def word(bus, reg):
    hi, lo = bus.read_i2c_block_data(0x48, reg, 2)
    return hi << 8 | lo


def test_the_emulated_chip_follows_the_datasheet():
    chip = Ads1115Emulator(busy_reads=2)
    bus = chip.smbus()
    assert word(bus, CONFIG) == 0x8583                                         # reset value, idle
    chip.set_pins([1.0, 0.5, 0.0, 6.0])
    bus.write_i2c_block_data(0x48, CONFIG, [0xC3, 0x83])                      # start AIN0-GND, +-4.096 V, one shot
    assert word(bus, CONFIG) & 0x8000 == 0 and word(bus, CONFIG) & 0x8000 == 0   # converting, twice
    assert word(bus, CONFIG) & 0x8000                                          # done
    assert word(bus, CONVERSION) == 8000                                       # 1 V / 4.096 V x 32768
    bus.write_i2c_block_data(0x48, CONFIG, [0x85, 0x83])                      # AIN0-AIN1, +-2.048 V
    for _ in range(3):
        word(bus, CONFIG)
    assert word(bus, CONVERSION) == 8000                                       # 0.5 V / 2.048 V x 32768
    bus.write_i2c_block_data(0x48, CONFIG, [0xF3, 0x83])                      # AIN3-GND: 6 V, clipped to
    for _ in range(3):                                                         # VDD + 0.3 V, beyond the 4.096 V:
        word(bus, CONFIG)
    assert word(bus, CONVERSION) == 32767                                      # full scale
    bus.write_i2c_block_data(0x48, CONFIG, [0x42, 0x83])                      # AIN0-GND continuous
    assert word(bus, CONVERSION) == 8000 and word(bus, CONFIG) & 0x8000 == 0


def test_voltage_current_and_consumed_charge_through_the_adafruit_library():
    chip, module = rig()
    module.set_input(16.4, 25.0)                 # a 4S pack at 25 A: 1.624 V and 0.33 + 0.688 V at the inputs
    mon = monitor(chip, poll_rate_hz=10.0)
    r = mon.poll(0.0)
    assert r is not None, mon.health(0.0)
    assert r.voltage_v == pytest.approx(16.4, abs=0.005)       # 125 uV a bit at gain 1, x 10.1
    assert r.current_a == pytest.approx(25.0, abs=0.01)
    assert chip.register(CONFIG) & 0x0FFF == 0x03E3            # +-4.096 V, one shot, 860 SPS, comparator off
    module.set_input(16.2, -3.0)                 # charging: the output below its offset reads negative
    assert mon.poll(0.1).current_a == pytest.approx(-3.0, abs=0.01)
    module.set_input(16.0, 18.0)
    t = 0.1
    while t < 60.1:
        t = round(t + 0.05, 6)
        r = mon.poll(t)
    assert r.consumed_mah == pytest.approx(18.0 * 60.0 / 3.6, rel=0.01)
    assert 595 <= mon.reads <= 605 and chip.conversions == 2 * mon.reads   # two inputs a read, at 10 Hz
    level, msg, _ = mon.health(t)
    assert level == "OK" and "16.00 V" in msg and mon.errors == 0


def test_a_higher_gain_reads_a_small_module_finer():
    chip, module = rig(voltage_channel=0, current_channel=1, voltage_ratio=15.7, amps_per_volt=60.0,
                       amps_offset_v=0.0)
    module.set_input(25.0, 30.0)                 # 1.59 V and 0.5 V: within +-2.048 V
    mon = monitor(chip, gain=2.0, voltage_channel=0, current_channel=1, voltage_ratio=15.7, amps_per_volt=60.0,
                  amps_offset_v=0.0, max_current_a=100.0)
    r = mon.poll(0.0)
    assert r is not None and r.voltage_v == pytest.approx(25.0, abs=0.002) and r.current_a == pytest.approx(30.0,
                                                                                                          abs=0.005)
    assert (chip.register(CONFIG) >> 9) & 7 == 2


def test_a_module_that_stops_answering_goes_stale_says_so_and_comes_back(caplog):
    chip, module = rig()
    module.set_input(14.8, 3.0)
    mon = monitor(chip, stale_timeout_s=2.0, reopen_s=1.0)
    assert mon.poll(0.0) is not None
    caplog.set_level(logging.WARNING, logger="drivers.power_monitor")
    chip.set_present(False)                                      # the wire came off
    seen = []
    t = 0.0
    while t < 5.0:
        t = round(t + 0.05, 6)
        seen.append((t, mon.poll(t)))                            # never raises
    assert all(r is not None for tt, r in seen if tt <= 2.0)
    assert all(r is None for tt, r in seen if tt > 2.0)
    level, msg, _ = mon.health(t)
    assert level == "ERROR" and "silent for 5.0 s" in msg and "0x48" in msg
    failed = [r.message for r in caplog.records if "failed" in r.message]
    assert len(failed) == 1 and "ADS1115 i2c-1 0x48" in failed[0]
    chip.set_present(True)
    module.set_input(14.5, 3.0)
    t2 = t
    while mon.poll(t2) is None and t2 < t + 2.0:
        t2 = round(t2 + 0.05, 6)
    assert t2 - t <= 1.1 and mon.poll(t2).voltage_v == pytest.approx(14.5, abs=0.005)
    assert any("answers again" in r.message for r in caplog.records)


def test_a_conversion_that_never_completes_is_a_fault_not_a_hung_loop():
    chip, module = rig(busy_reads=None)                          # the OS bit never says done
    module.set_input(14.8, 3.0)
    mon = monitor(chip)
    start = time.monotonic()
    assert mon.poll(0.0) is None
    assert time.monotonic() - start < 1.0                        # gave up after its 50 ms, not for ever
    assert mon.errors == 1 and "TimeoutError" in mon.last_error and "no ADS1115 conversion" in mon.last_error


def test_an_input_at_the_full_scale_is_a_bad_reading():
    chip, module = rig()
    module.set_input(48.0, 3.0)                  # 4.75 V at the voltage input: beyond +-4.096 V at gain 1
    mon = monitor(chip)
    assert mon.poll(0.0) is None and mon.errors == 1
    level, msg, _ = mon.health(0.0)
    assert level == "ERROR" and "voltage input AIN2 is at the ADC's full scale" in msg and "4.096" in msg
    module.set_input(40.0, 3.0)                  # 3.96 V: read again once the chip is set up anew
    assert mon.poll(1.0) is not None and mon.poll(1.0).voltage_v == pytest.approx(40.0, abs=0.01)


def test_another_chip_at_the_address_is_refused():
    other = Ina226Emulator(address=0x48, shunt_ohms=0.002)       # its register 1 (the shunt) is read-only
    other.set_input(12.0, 1.0)
    mon = monitor(other)
    assert mon.poll(0.0) is None and mon.errors == 1
    level, msg, _ = mon.health(0.0)
    assert level == "ERROR" and "WrongChipError" in msg and "not an ADS1115" in msg


@pytest.mark.parametrize("section, key, why", [
    ({"address": 0x40}, "address", "0x48-0x4B"),
    ({"current_channel": 2}, "current_channel", "already voltage_channel"),
    ({"gain": 3.0}, "gain", "not an ADS1115 gain"),
    ({"gain": 20.0}, "gain", "at most 16"),
    ({"voltage_channel": 4}, "voltage_channel", "at most 3"),
    ({"amps_per_volt": 0.0}, "amps_per_volt", ""),
    ({"max_current_a": 150.0}, "max_current_a", "4.455 V at the current input.*4.096 V full scale"),
    ({"gain": 2.0, "amps_offset_v": 2.5, "max_current_a": 1.0}, "amps_offset_v", "2.048 V full scale"),
])
def test_a_section_the_module_cannot_be_read_with_is_refused_naming_the_key(section, key, why):
    with pytest.raises(ConfigError, match=f"^boat.yaml: {key}: .*{why}"):
        build(PowerMonitorConfig, {"kind": "ads1115", "address": 0x48, "max_current_a": 90.0, **MODULE, **section},
              "boat.yaml")
    build(PowerMonitorConfig, {"kind": "ads1115", "address": 0x48, "max_current_a": 90.0, **MODULE}, "boat.yaml")
