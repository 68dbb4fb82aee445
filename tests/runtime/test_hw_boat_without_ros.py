"""`autopilot run` with backend hw on a machine without ROS 2, over emulated devices: the LSM9DS1 emulator on the
I2C bus (tests/support/hw_boat_child.py, the child's only change), an emulated L76K feeding NMEA at its 1 Hz into a
pseudo-terminal named as the vessel file's GNSS port, and the real pigpio client driving a FakePigpiod on the port
of the boat config's esc section. A signed MAVLink ground station arms the boat in MANUAL and holds the sticks
forward, so the outputs are off neutral while the faults come. One flight in phases, each fault reported as the
core reports it under ROS (its failsafe events on the log) while the loop keeps cycling (watchdog pings):

  start: READY=1, both ESC GPIOs at the neutral pulse on the fake daemon; armed, the outputs leave neutral;
  I2C errors injected into the chip: imu-loss, then the gyro back;
  pigpiod gone: esc-disconnect (the boat disarms); a new daemon on the same port is reconnected to by the
  autopilot (EscOutput's pi_factory, every 2 s) and by its deadman guardian, and gets neutral; armed again;
  GNSS unplugged (the pty closed): the driver's warning, then gps-loss (MANUAL: the sticks stay in charge);
  SIGTERM while driven: neutral on the new daemon within 0.5 s, exit 0, no traceback anywhere.
"""
from __future__ import annotations

import os
import time

import pytest

from hil.devices.fake_pigpiod import FakePigpiod
from hil.devices.fake_sysfs_pwm import FakePwmSysfs
from hil.devices.i2c_socket import I2cSocketServer
from hil.devices.pca9685_emulator import Pca9685Emulator
from tests.support.guarded_child import TICK_25MHZ_US
from tests.support.hw_boat_rig import NEUTRAL_US, HwBoat, Scope, SysfsExports, remove_chip, sysfs_pulses

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

GPIOS = (13, 12)                    # foka: left, right


def _off_neutral(daemon) -> bool:
    return all(daemon.state.pulse_us(g) not in (0, NEUTRAL_US) for g in GPIOS)


def _at_neutral(daemon) -> bool:
    return all(daemon.state.pulse_us(g) == NEUTRAL_US for g in GPIOS)


def _neutral_since(daemon, t_from: float):
    """When every GPIO of `daemon` last changed to the neutral pulse at or after t_from (None if one has not)."""
    times = []
    for g in GPIOS:
        log = daemon.state.log(g)
        if not log or log[-1][1] != NEUTRAL_US:
            return None
        first = next((t for t, p in reversed(log) if p != NEUTRAL_US), None)
        later = [t for t, p in log if p == NEUTRAL_US and t >= t_from and (first is None or t > first)]
        if not later:
            return None
        times.append(later[0])
    return max(times)


def test_hw_backend_without_ros_reports_and_survives_device_faults_and_stops_at_neutral(tmp_path):
    daemon = FakePigpiod().start()
    faults = tmp_path / "i2c_faults"
    daemon2 = None
    try:
        with HwBoat(tmp_path, f"{{backend: pigpio, pigpio_host: 127.0.0.1, pigpio_port: {daemon.port}}}",
                    env={"HW_BOAT_I2C_FAULTS": str(faults)}) as boat:
            # (a) up: READY, both outputs at neutral on the daemon's GPIOs; armed in MANUAL, sticks forward
            boat.up(lambda: _at_neutral(daemon), "neutral on the daemon")
            boat.arm()
            assert boat.wait(lambda: _off_neutral(daemon), 20.0), ([daemon.state.pulse_us(g) for g in GPIOS],
                                                                   boat.tail())

            # (d) I2C errors on the chip's bus: reported as imu-loss, the gyro comes back, the loop goes on
            mark = time.monotonic()
            faults.write_text("8")      # the driver re-initialises every 0.5 s: a few seconds of errors
            assert boat.wait(lambda: not faults.exists(), 10.0), boat.tail(2000)
            assert boat.wait(lambda: boat.logged("imu-loss: no gyro data", mark), 20.0), boat.tail()
            assert boat.wait(lambda: boat.logged("imu-loss: gyro data again", mark), 30.0), boat.tail()
            boat.cycling("after the I2C errors")

            # (b) pigpiod gone: esc-disconnect (the boat disarms), the loop goes on; a new daemon on the same port
            # is found again by the autopilot and by its guardian, and gets neutral pulses
            mark = time.monotonic()
            daemon.stop()
            assert boat.wait(lambda: boat.logged("esc-disconnect: ESC output not connected", mark), 20.0), \
                boat.tail()
            # and as the ROS diagnostics would show it, armed or not: the ESC component's health, with its device
            assert boat.wait(lambda: boat.logged("[health] ESC: ERROR: output not connected (pigpio GPIO", mark),
                             10.0), boat.tail()
            boat.cycling("with pigpiod gone")
            daemon2 = FakePigpiod(port=daemon.port).start()
            assert boat.wait(lambda: daemon2.connections >= 2 and _at_neutral(daemon2), 30.0), \
                (daemon2.connections, [daemon2.state.pulse_us(g) for g in GPIOS], boat.tail())
            boat.cycling("after pigpiod came back")

            # armed again on the new daemon (its ESCs re-armed), sticks forward
            boat.arm()
            assert boat.wait(lambda: _off_neutral(daemon2), 20.0), [daemon2.state.pulse_us(g) for g in GPIOS]

            # (c) the GNSS unplugged: the driver says so, the core reports gps-loss
            mark = time.monotonic()
            boat.l76k.stop()
            boat.pty.unplug()
            assert boat.wait(lambda: boat.logged("failed", mark) and boat.logged("L76K on", mark), 20.0), \
                boat.tail()
            assert boat.wait(lambda: boat.logged("gps-loss: no accepted GNSS position", mark), 30.0), boat.tail()
            assert boat.wait(lambda: boat.logged("[health] GNSS: ERROR: GNSS data silent for", mark), 10.0), \
                boat.tail()
            boat.cycling("after the GNSS unplug")
            assert boat.wait(lambda: _off_neutral(daemon2), 5.0), ("gps-loss in MANUAL leaves the sticks in charge",
                                                                   boat.tail())

            # (e) SIGTERM: neutral on the daemon within 0.5 s, exit 0
            sent = boat.sigterm()
        boat.finish()
    finally:
        daemon.stop()
        if daemon2 is not None:
            daemon2.stop()
    neutral_at = _neutral_since(daemon2, sent)
    assert neutral_at is not None and neutral_at - sent < 0.5, (neutral_at, sent)
    print(f"pigpio: neutral {1e3 * (neutral_at - sent):.0f} ms after SIGTERM")


# ---------------------------------------------------------------------------------------------- kernel PWM
CHIP = 0
CHANNELS = (1, 0)                   # foka's GPIO13 (left) and GPIO12 (right) on a Pi 4's PWM0: channels 1 and 0


def _sysfs_neutral(p) -> bool:
    return all(x == NEUTRAL_US for x in p)


def _sysfs_driven(p) -> bool:
    return all(x not in (0, NEUTRAL_US) for x in p)


def test_kernel_pwm_boat_without_ros_exports_drives_survives_its_chip_vanishing_and_stops_at_neutral(tmp_path):
    """backend kernel_pwm on a fake /sys/class/pwm tree (hil/devices/fake_sysfs_pwm.py; SysfsExports plays the
    kernel's export for the autopilot and its guardian, which write the tree as plain files):

      start: the autopilot exports both channels itself, 50 Hz, READY=1, neutral duty on both; armed in MANUAL
      with the sticks forward, the duty leaves neutral;
      the PWM controller vanishes (pwmchip0/ removed: a write fails with ENOENT, kernel_pwm.py's port is then
      not connected): esc-disconnect and the ESC health ERROR with its device, the loop goes on;
      the controller back (a fresh pwmchip0/ with nothing exported): the autopilot (every 2 s) and its guardian
      re-open their ports, the channels are exported again, neutral, the health OK; armed again, driven;
      SIGTERM while driven: neutral duty on both channels within 0.5 s, exit 0, no traceback."""
    root = tmp_path / "pwm"
    FakePwmSysfs(root, chips={CHIP: 2})
    exports = SysfsExports(root)
    scope = Scope(lambda: sysfs_pulses(root, CHIP, CHANNELS))
    esc = f"{{backend: kernel_pwm, pwm_sysfs_root: {root}, pwm_chip: {CHIP}, pwm_channels: {list(CHANNELS)}}}"
    try:
        with HwBoat(tmp_path, esc) as boat:
            boat.up(lambda: scope.now() is not None and _sysfs_neutral(scope.now()), ("neutral duty", scope.now()))
            assert sorted(ch for _, _, ch in exports.exports) == [0, 1], exports.exports
            for ch in CHANNELS:
                assert (root / f"pwmchip{CHIP}" / f"pwm{ch}" / "period").read_text().strip() == "20000000"
            boat.arm()
            assert boat.wait(lambda: scope.now() is not None and _sysfs_driven(scope.now()), 20.0), \
                (scope.now(), boat.tail())

            # the PWM controller vanishes
            mark = time.monotonic()
            remove_chip(root, CHIP)
            assert boat.wait(lambda: boat.logged("esc-disconnect: ESC output not connected", mark), 20.0), \
                boat.tail()
            assert boat.wait(lambda: boat.logged("[health] ESC: ERROR: output not connected (kernel_pwm GPIO13,"
                                                 "GPIO12)", mark), 10.0), boat.tail()
            boat.cycling("with the PWM controller gone")

            # ... and comes back, nothing exported (built aside, then moved in whole)
            mark = time.monotonic()
            FakePwmSysfs(tmp_path / "pwm-again", chips={CHIP: 2})
            os.rename(tmp_path / "pwm-again" / f"pwmchip{CHIP}", root / f"pwmchip{CHIP}")
            assert boat.wait(lambda: len(exports.exports) >= 4 and scope.now() is not None
                             and _sysfs_neutral(scope.now()), 30.0), (exports.exports, scope.now(), boat.tail())
            assert boat.wait(lambda: boat.logged("[health] ESC: OK: output connected", mark), 10.0), boat.tail()
            boat.cycling("after the PWM controller came back")
            boat.arm()
            assert boat.wait(lambda: _sysfs_driven(scope.now() or ()), 20.0), (scope.now(), boat.tail())

            sent = boat.sigterm()
        boat.finish()
    finally:
        scope.stop()
        exports.stop()
    neutral_at = scope.became(_sysfs_neutral, sent)
    assert neutral_at is not None and neutral_at - sent < 0.5, (neutral_at, sent, scope.log[-6:])
    print(f"kernel_pwm: neutral {1e3 * (neutral_at - sent):.0f} ms after SIGTERM")


# ---------------------------------------------------------------------------------------------- PCA9685
PCA_BUS = 4                         # not the IMU's bus 1: the child's open_smbus gives this one the board


def _pca_neutral(p) -> bool:
    return all(abs(x - NEUTRAL_US) <= TICK_25MHZ_US for x in p)


def _pca_driven(p) -> bool:
    return all(x > 0 and abs(x - NEUTRAL_US) > 2 * TICK_25MHZ_US for x in p)


def test_pca9685_boat_without_ros_drives_survives_i2c_errors_and_stops_at_neutral(tmp_path):
    """backend pca9685 on the register-level emulator (hil/devices/pca9685_emulator.py) served on a Unix socket:
    the child's open_smbus gives it for esc.i2c_bus, its guardian reaches it through the backend's i2c_socket.

      start: 50 Hz frame, READY=1, both outputs at neutral (within a tick); armed in MANUAL, driven;
      I2C errors injected on the board (EREMOTEIO, as Linux i2c-dev): pca9685.py's port raises and is not
      connected, the ESC failsafe reports esc-disconnect, the ESC health ERROR with its device, the loop goes
      on; once the bus answers again the autopilot re-opens the board (every 2 s), re-arms at neutral, health
      OK; armed again, driven;
      SIGTERM while driven: both outputs at neutral within 0.5 s, exit 0, no traceback."""
    chip = Pca9685Emulator()
    server = I2cSocketServer(chip, tmp_path / "i2c-pca9685.sock").start()
    scope = Scope(lambda: (chip.pulse_us(0), chip.pulse_us(1)))
    esc = f"{{backend: pca9685, pca9685_channels: [0, 1], i2c_bus: {PCA_BUS}}}"
    try:
        with HwBoat(tmp_path, esc, env={"HW_BOAT_PCA9685": f"{PCA_BUS}:{server.path}"}) as boat:
            boat.up(lambda: scope.now() is not None and _pca_neutral(scope.now()), ("neutral", scope.now()))
            assert abs(chip.frequency_hz() - 50.0) < 0.5, chip.frequency_hz()
            boat.arm()
            assert boat.wait(lambda: _pca_driven(scope.now() or ()), 20.0), (scope.now(), boat.tail())

            # a few seconds of bus errors (the guardian's checks take some of them too)
            mark = time.monotonic()
            chip.inject_errors(40)
            assert boat.wait(lambda: boat.logged("esc-disconnect: ESC output not connected", mark), 20.0), \
                boat.tail()
            assert boat.wait(lambda: boat.logged("[health] ESC: ERROR: output not connected (pca9685 ch0,ch1)",
                                                 mark), 10.0), boat.tail()
            error_at = boat.logged_at("[health] ESC: ERROR: output not connected", mark)
            assert boat.wait(lambda: chip.pending_errors == 0, 20.0), chip.pending_errors
            boat.cycling("after the I2C errors")
            assert boat.wait(lambda: boat.logged("[health] ESC: OK: output connected", error_at)
                             and _pca_neutral(scope.now() or ()), 30.0), (scope.now(), boat.tail())
            boat.arm()
            assert boat.wait(lambda: _pca_driven(scope.now() or ()), 20.0), (scope.now(), boat.tail())

            sent = boat.sigterm()
        boat.finish()
    finally:
        scope.stop()
        server.stop()
    neutral_at = scope.became(_pca_neutral, sent)
    assert neutral_at is not None and neutral_at - sent < 0.5, (neutral_at, sent, scope.log[-6:])
    print(f"pca9685: neutral {1e3 * (neutral_at - sent):.0f} ms after SIGTERM")
