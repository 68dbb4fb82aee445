"""Cost of the byte-level IMU and ESC drivers on the simulator's fast path (in-process emulators, no sockets).

    /work/venv/bin/python benchmarks/bench_imu_esc.py [--n 20000]

Prints microseconds per call of:
  - Lsm9ds1Source.poll (Adafruit library -> SMBusI2C -> emulated LSM9DS1), accel+gyro+magnetometer and
    accel+gyro only, including the emulator's own work (truth -> registers);
  - EscOutput.write on hil.devices.fake_pigpiod.FakePi, with the pulse changing every write (worst case) and steady;
  - for reference, EscOutput.write through the real pigpio client to the fake pigpiod over a localhost socket.
The budget for a 100x real-time sim at 50 Hz is 200 us per control cycle for everything.
"""
from __future__ import annotations

import argparse
import math
import time

from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import PulseCommand
from drivers.esc.output import EscOutput, channels_from_vessel
from drivers.lsm9ds1 import Lsm9ds1Source
from hil.devices.fake_pigpiod import FakePi, FakePigpiod, GpioState
from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
from hil.sim.plant import Truth


def per_call_us(fn, n: int, repeats: int = 3) -> float:
    """Best of `repeats` runs of n calls (the machine is shared: the best run is the least disturbed)."""
    best = float("inf")
    for r in range(repeats):
        t0 = time.perf_counter()
        for i in range(r * n, (r + 1) * n):
            fn(i)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def bench_imu(n: int) -> None:
    vessel = load_vessel("foka")
    imu_cfg, mag_cfg = vessel.sensors.imu, vessel.sensors.mag
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, seed=3)
    still = Truth(0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, (0.0, 0.0))
    emu.update(0.0, still)
    source = Lsm9ds1Source.open_emulated(imu_cfg, mag_cfg, emu)
    driver = source.driver
    moving = Truth(0.0, 0.0, 0.0, 0.5, 1.2, 0.1, 0.2, 0.1, -0.05, (10.0, 10.0))
    base = 10.0

    def poll_every(i):                     # a new mag sample every poll: force it due
        t = base + i * 0.02
        emu.update(t, moving)
        driver._next_mag_t = None
        source.poll(t)

    def poll_no_mag(i):
        t = base + 1e4 + i * 0.02
        emu.update(t, moving)
        driver._next_mag_t = math.inf
        source.poll(t)

    def poll_loop(i):                      # the real schedule: 50 Hz loop, magnetometer at its 40 Hz
        t = base + 2e4 + i * 0.02
        emu.update(t, moving)
        source.poll(t)

    print(f"IMU  Lsm9ds1Source.poll, accel+gyro+mag:         {per_call_us(poll_every, n):7.1f} us")
    print(f"IMU  Lsm9ds1Source.poll, accel+gyro only:        {per_call_us(poll_no_mag, n):7.1f} us")
    driver._next_mag_t = None
    print(f"IMU  Lsm9ds1Source.poll, 50 Hz loop, mag 40 Hz:  {per_call_us(poll_loop, n):7.1f} us")


def bench_esc(n: int) -> None:
    vessel = load_vessel("foka")
    state = GpioState(clock=lambda: 0.0)
    esc = EscOutput.from_vessel(vessel, FakePi(state), watchdog=False)
    esc.arm(-10.0)                         # armed already

    def changing(i):
        esc.write(i * 0.02, PulseCommand((1500 + (i % 300), 1500 - (i % 300))))

    def steady(i):
        esc.write(1e4 + i * 0.02, PulseCommand((1700, 1300)))

    print(f"ESC  EscOutput.write on FakePi, pulses changing: {per_call_us(changing, n):7.1f} us")
    print(f"ESC  EscOutput.write on FakePi, pulses steady:   {per_call_us(steady, n):7.1f} us")
    esc.close()
    with FakePigpiod() as daemon:
        import pigpio
        pi = pigpio.pi("127.0.0.1", daemon.port)
        sock_esc = EscOutput(channels_from_vessel(vessel), pi, watchdog=False)
        sock_esc.arm(-10.0)
        m = max(1000, n // 10)
        us = per_call_us(lambda i: sock_esc.write(i * 0.02, PulseCommand((1500 + (i % 300),
                                                                           1500 - (i % 300)))), m)
        print(f"ESC  EscOutput.write via pigpio socket (ref.):   {us:7.1f} us")
        sock_esc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="calls per measurement")
    args = parser.parse_args()
    bench_imu(args.n)
    bench_esc(args.n)


if __name__ == "__main__":
    main()
