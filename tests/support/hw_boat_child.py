"""`python tests/support/hw_boat_child.py ARGS...`: the autopilot CLI with ROS hidden (as tests/support/no_ros.py) and
one change: `drivers.i2c_adapter.open_smbus` returns an emulated LSM9DS1's bus (hil/devices/lsm9ds1_emulator.py), with
an emulated INA219 on it when asked (HW_BOAT_BATTERY, below), so the hw backend's real drivers and the Adafruit
libraries run over emulated I2C. Everything else (the L76K on the serial
port of the vessel file, pigpio to the pigpiod of the boat config, the deadman guardian) is the product's own path.

The emulated chip sits still, level, heading HEADING_DEG, and its clock is the monotonic clock since the bus was
opened (each transaction sets it, so the chip converts new samples at its output rate as a real one does).

Fault injection, kept here rather than in product code: with HW_BOAT_I2C_FAULTS=PATH in the environment, a thread
looks for PATH every 50 ms; when it appears it reads an integer N from it, makes the chip fail its next N bus
transactions (Lsm9ds1Emulator.inject_errors), prints "hw_boat_child: injected N I2C errors" on stderr and removes
PATH (the test sees the file gone as the acknowledgement).

A power monitor: with HW_BOAT_BATTERY=PATH, an emulated INA219 (hil/devices/ina219_emulator.py; with
HW_BOAT_BATTERY_KIND=ina226 an INA226, hil/devices/ina226_emulator.py; 0x40, shunt BATTERY_SHUNT_OHMS) answers
on the IMU's bus too, reading the pack at the vessel's nominal voltage and BATTERY_START_A; a thread looks for
PATH every 50 ms and takes from it "VOLTS AMPS" (the pack's new state), "gone" (the chip off the bus) or "back",
prints "hw_boat_child: battery <what>" on stderr and removes PATH.

A PCA9685 board: with HW_BOAT_PCA9685=BUS:SOCKET, open_smbus(BUS) returns the bus of the emulated PCA9685 (hil/
devices/pca9685_emulator.py) the test serves on the Unix socket SOCKET (hil/devices/i2c_socket.py), so the
test reads its outputs and injects its bus errors, and the deadman guardian (another process, which this patch
does not reach) is spawned with the same board through the ESC backend's `i2c_socket`, as it would open the
same /dev/i2c-BUS on a Pi.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

HEADING_DEG = 30.0
FAULT_POLL_S = 0.05
BATTERY_SHUNT_OHMS = 0.002
BATTERY_START_A = 2.0


class LiveChip:
    """The register device RegisterBus drives: an Lsm9ds1Emulator whose clock and truth are set before every
    transaction (monotonic time since construction, a still and level boat)."""

    def __init__(self, emulator):
        self.emulator = emulator
        self._t0 = time.monotonic()
        self._truth = SimpleNamespace(heading_rad=math.radians(HEADING_DEG), surge_mps=0.0, sway_mps=0.0,
                                      yaw_rate_rps=0.0, surge_accel_mps2=0.0, sway_accel_mps2=0.0)
        self._lock = threading.Lock()

    def _tick(self) -> None:
        self.emulator.update(time.monotonic() - self._t0, self._truth)

    def probe(self, addr: int) -> None:
        with self._lock:
            self._tick()
            self.emulator.probe(addr)

    def read_registers(self, addr: int, reg: int, n: int) -> bytes:
        with self._lock:
            self._tick()
            return self.emulator.read_registers(addr, reg, n)

    def write_registers(self, addr: int, reg: int, data: bytes) -> None:
        with self._lock:
            self._tick()
            self.emulator.write_registers(addr, reg, data)


def watch_fault_file(path: str, emulator) -> None:
    """Inject the I2C errors the test asks for through `path` (see the module docstring); runs forever."""
    while True:
        time.sleep(FAULT_POLL_S)
        try:
            text = Path(path).read_text().strip()
        except FileNotFoundError:
            continue
        if not text:                         # the test is still writing it
            continue
        emulator.inject_errors(int(text))
        print(f"hw_boat_child: injected {int(text)} I2C errors", file=sys.stderr, flush=True)
        os.unlink(path)


class ChipsOnOneBus:
    """Several register devices on one bus: a transaction goes to the chip answering its address (`chips`:
    address -> device), any other address to `rest`."""

    def __init__(self, rest, chips: dict):
        self.rest, self.chips = rest, chips

    def _for(self, addr: int):
        return self.chips.get(addr, self.rest)

    def probe(self, addr: int) -> None:
        self._for(addr).probe(addr)

    def read_registers(self, addr: int, reg: int, n: int) -> bytes:
        return self._for(addr).read_registers(addr, reg, n)

    def write_registers(self, addr: int, reg: int, data: bytes) -> None:
        self._for(addr).write_registers(addr, reg, data)


def watch_battery_file(path: str, chip) -> None:
    """Change the emulated pack or its monitor as the test asks through `path` (see the module docstring)."""
    while True:
        time.sleep(FAULT_POLL_S)
        try:
            text = Path(path).read_text().strip()
        except FileNotFoundError:
            continue
        if not text:
            continue
        if text in ("gone", "back"):
            chip.set_present(text == "back")
        else:
            volts, amps = (float(x) for x in text.split())
            chip.set_input(volts, amps)
        print(f"hw_boat_child: battery {text}", file=sys.stderr, flush=True)
        os.unlink(path)


def guardian_on_socket(path: str) -> None:
    """The deadman guardian's PCA9685 through the emulated bus served at `path` (its process has no patch)."""
    import dataclasses

    from drivers.esc.deadman import DeadmanLink
    spawn = DeadmanLink.spawn.__func__

    def spawn_on_socket(cls, channels, *args, backend=None, **kwargs):
        if backend is not None and backend.kind == "pca9685":
            backend = dataclasses.replace(backend, i2c_socket=path)
        return spawn(cls, channels, *args, backend=backend, **kwargs)

    DeadmanLink.spawn = classmethod(spawn_on_socket)


def install_emulated_imu(vessel_file: str):
    """Make open_smbus return the bus of an emulator configured from `vessel_file`'s IMU and magnetometer."""
    import drivers.i2c_adapter as adapter
    from autopilot.vocab.config import load_vessel
    from drivers.i2c_adapter import RegisterBus
    from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator

    sensors = load_vessel(vessel_file).sensors
    emulator = Lsm9ds1Emulator(sensors.imu, sensors.mag, seed=7)

    battery = os.environ.get("HW_BOAT_BATTERY")
    chips = {}
    if battery:
        if os.environ.get("HW_BOAT_BATTERY_KIND", "ina219") == "ina226":
            from hil.devices.ina226_emulator import Ina226Emulator as Monitor
        else:
            from hil.devices.ina219_emulator import Ina219Emulator as Monitor
        ina = Monitor(0x40, shunt_ohms=BATTERY_SHUNT_OHMS)
        ina.set_input(load_vessel(vessel_file).battery.voltage_v, BATTERY_START_A)
        chips[0x40] = ina
        threading.Thread(target=watch_battery_file, args=(battery, ina), name="battery", daemon=True).start()

    pca = os.environ.get("HW_BOAT_PCA9685")
    pca_bus, pca_socket = (int(pca.split(":", 1)[0]), pca.split(":", 1)[1]) if pca else (None, "")

    def open_smbus(bus_number: int):
        if bus_number == pca_bus:
            from drivers.i2c_adapter import SocketRegisters
            return RegisterBus(SocketRegisters(pca_socket))
        return RegisterBus(ChipsOnOneBus(LiveChip(emulator), chips))

    adapter.open_smbus = open_smbus
    import drivers.esc.pca9685 as pca9685
    pca9685.open_smbus = open_smbus              # imported by name there
    if pca:
        guardian_on_socket(pca_socket)
    faults = os.environ.get("HW_BOAT_I2C_FAULTS")
    if faults:
        threading.Thread(target=watch_fault_file, args=(faults, emulator), name="i2c-faults", daemon=True).start()
    return emulator


if __name__ == "__main__":
    repo = Path(__file__).resolve().parents[2]
    sys.path[0] = str(repo)                  # the repository, not tests/support/
    import atexit

    from tests.support.no_ros import NoRos, _report
    sys.meta_path.insert(0, NoRos())
    atexit.register(_report)
    install_emulated_imu(os.environ["HW_BOAT_VESSEL"])
    from autopilot.cli.main import main
    sys.exit(main(sys.argv[1:]))
