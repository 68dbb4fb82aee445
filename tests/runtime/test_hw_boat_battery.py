"""`autopilot run` with backend hw measures its pack: the boat config's `battery:` section opens an INA219 through
the real Adafruit library, or an INA226 through our own driver, on the emulated I2C bus
(tests/support/hw_boat_child.py: HW_BOAT_BATTERY, HW_BOAT_BATTERY_KIND), beside the emulated LSM9DS1, the
emulated L76K and a FakePigpiod. A signed MAVLink ground station arms the boat in MANUAL and
holds the sticks forward, as in tests/runtime/test_hw_boat_without_ros.py. In phases:

  the measured voltage, current and consumed charge reach SYS_STATUS and BATTERY_STATUS;
  the pack sags below the vessel's low_voltage_v: the low-battery failsafe fires from that reading, and a
  disarmed boat then refuses to arm on it;
  the monitor stops answering: the health log says so, the voltage MAVLink reports becomes unknown, the loop
  goes on cycling (watchdog pings) with no traceback; SIGTERM ends it with exit 0.
"""
from __future__ import annotations

import time

import pytest

from hil.devices.fake_pigpiod import FakePigpiod
from tests.support.hw_boat_child import BATTERY_SHUNT_OHMS, BATTERY_START_A
from tests.support.hw_boat_rig import MANUAL, HwBoat
from tests.support.mavlink_gcs import M

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

NOMINAL_V = 21.0                    # foka's battery.voltage_v
LOW_V = 17.5                        # and its low_voltage_v
# 40 A across the 2 mOhm shunt is 80 mV, within the INA226's 81.92 mV (the INA219 reads 320 mV)
MAX_CURRENT_A = {"ina219": 60, "ina226": 40}


def _battery(kind: str) -> str:
    return f"battery: {{kind: {kind}, bus: 1, address: 0x40, shunt_ohms: {BATTERY_SHUNT_OHMS}," \
           f" max_current_a: {MAX_CURRENT_A[kind]}, poll_rate_hz: 10, stale_timeout_s: 2}}\n"


def _tell(boat: HwBoat, control, text: str) -> None:
    control.write_text(text)
    assert boat.wait(lambda: not control.exists(), 10.0), boat.tail()


@pytest.mark.parametrize("kind", ["ina219", "ina226"])
def test_hw_boat_measures_its_pack_and_the_low_battery_failsafe_fires_from_the_monitor(tmp_path, kind):
    daemon = FakePigpiod().start()
    control = tmp_path / "battery"
    try:
        with HwBoat(tmp_path, f"{{backend: pigpio, pigpio_host: 127.0.0.1, pigpio_port: {daemon.port}}}",
                    env={"HW_BOAT_BATTERY": str(control), "HW_BOAT_BATTERY_KIND": kind},
                    extra=_battery(kind)) as boat:
            boat.up(lambda: all(daemon.state.pulse_us(g) == 1500 for g in (13, 12)), "neutral")
            gcs = boat.gcs
            # the pack as measured: IN+ = bus voltage + 4 mV across the shunt, 2 A
            st = gcs.wait("SYS_STATUS", lambda m: m.voltage_battery != 0xFFFF, 20.0)
            assert st is not None, boat.tail()
            assert abs(st.voltage_battery - 1000 * NOMINAL_V) <= 20, st
            assert abs(st.current_battery - 100 * BATTERY_START_A) <= 2, st
            bs = gcs.wait("BATTERY_STATUS", lambda m: m.current_consumed > 0, 20.0)
            assert bs is not None, boat.tail()
            assert abs(bs.voltages[0] - 1000 * NOMINAL_V) <= 20 and abs(bs.current_battery - 200) <= 2, bs
            boat.arm()

            # the pack sags under load below the threshold: the failsafe acts on the monitor's reading
            mark = time.monotonic()
            _tell(boat, control, "17.0 30.0")
            assert boat.wait(lambda: boat.logged("low-battery: battery 17.06 V below 17.5 V", mark), 20.0), \
                boat.tail()
            st = gcs.wait("SYS_STATUS", lambda m: abs(m.current_battery - 3000) <= 5, 10.0)
            assert st is not None and abs(st.voltage_battery - 17060) <= 20, (st, boat.tail())
            boat.cycling("after the low-battery failsafe")
            # disarmed, the boat refuses to arm on that pack, and says why
            assert gcs.command(M.MAV_CMD_COMPONENT_ARM_DISARM, 0).result == M.MAV_RESULT_ACCEPTED
            assert gcs.set_mode(MANUAL).result == M.MAV_RESULT_ACCEPTED
            ack = gcs.arm()
            assert ack is not None and ack.result != M.MAV_RESULT_ACCEPTED
            assert boat.wait(lambda: any("PreArm: battery: 17.06 V, below the low-battery threshold 17.5 V" in t
                                         for t in gcs.texts), 10.0), (gcs.texts[-8:], boat.tail())

            # the monitor stops answering: a warning, its health ERROR, the voltage unknown, the loop goes on
            mark = time.monotonic()
            _tell(boat, control, "gone")
            assert boat.wait(lambda: boat.logged(f"power monitor {kind.upper()} i2c-1 0x40 failed", mark), 10.0), \
                boat.tail()
            assert boat.wait(lambda: boat.logged("[health] Battery: ERROR: power monitor silent for", mark), 15.0), \
                boat.tail()
            assert gcs.wait("SYS_STATUS", lambda m: m.voltage_battery == 0xFFFF and m.current_battery == -1,
                            15.0) is not None, boat.tail()
            boat.cycling("with the power monitor gone")

            # back on the bus: measured again
            _tell(boat, control, "back")
            assert gcs.wait("SYS_STATUS", lambda m: abs(m.voltage_battery - 17060) <= 20, 15.0) is not None, \
                boat.tail()
            assert boat.wait(lambda: boat.logged("answers again", mark), 5.0), boat.tail()
            boat.sigterm()
        boat.finish()
    finally:
        daemon.stop()
