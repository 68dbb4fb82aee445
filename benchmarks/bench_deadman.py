"""The deadman's figure: SIGKILL of a process driving full thrust (1900 us) to both ESCs at neutral, before and
after a pigpiod restart.

    python benchmarks/bench_deadman.py [--kills 20] [--backend pigpio|kernel_pwm|pca9685|all]

The driving process is tests/drivers/test_deadman.py's stand-in (EscOutput with the guardian, the real pigpio client,
reconnecting as the autopilot does); pigpiod is the fake daemon in this process (hil/devices/fake_pigpiod.py). Each
kill:
start the process, wait for 1900/1900, SIGKILL it, time the first neutral pulse on both GPIOs in the daemon's
record (CLOCK_MONOTONIC). "After a restart": the daemon is stopped and a fresh one started on the same port
while the process drives, it reconnects and drives 1900 again, and only then is it killed.

kernel_pwm: the driving process is tests/drivers/test_esc_kernel_pwm.py's stand-in on a fake /sys/class/pwm tree; the
tree has no time-stamped record, so this process polls both channels' files every 1 ms from the kill (or the
SIGSTOP of a hang) until both read neutral: the figure includes up to 1 ms of polling. pca9685: the same with
tests/drivers/test_esc_pca9685.py's stand-in, the emulated board served to both processes on a Unix socket, polled as
what a scope would read (within one tick of 1500 us).
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hil.devices.fake_pigpiod import FakePigpiod  # noqa: E402
from tests.support import guarded_child as rig  # noqa: E402
from tests.support.guarded_child import neutral_after, start_child  # noqa: E402


def one_kill(restart: bool) -> float:
    daemon = FakePigpiod().start()
    child = None
    try:
        child, _ = start_child(daemon.port)
        if restart:
            port = daemon.port
            daemon.stop()
            daemon = FakePigpiod(port=port).start()
            deadline = time.monotonic() + 10.0
            while not (daemon.state.pulse_us(13) == daemon.state.pulse_us(12) == 1900):
                if time.monotonic() > deadline:
                    raise RuntimeError("the driving process did not reconnect")
                time.sleep(0.01)
            time.sleep(0.5)                     # full thrust for a while on the new daemon
        t_kill = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=5)
        times = neutral_after(daemon, t_kill, wait_s=3.0)
        return float("inf") if not all(times) else 1e3 * (max(times) - t_kill)
    finally:
        if child is not None and child.poll() is None:
            child.kill()
        daemon.stop()


def _time_to_neutral(child, guardian, sig: int, neutral, stop_all) -> float:
    """Kill (SIGKILL) or freeze (SIGSTOP) the driving process; ms until `neutral()` says both lines are neutral
    (polled every 1 ms, for at most 3 s; inf if never)."""
    try:
        t0 = time.monotonic()
        os.kill(child.pid, sig)
        while time.monotonic() - t0 < 3.0:
            if neutral():
                return 1e3 * (time.monotonic() - t0)
            time.sleep(0.001)
        return float("inf")
    finally:
        if sig == signal.SIGSTOP:
            os.kill(child.pid, signal.SIGCONT)
        stop_all(child, guardian)


def one_kernel_pwm(tmp: Path, sig: int) -> float:
    """_time_to_neutral on a fake /sys/class/pwm tree."""
    from hil.devices.fake_sysfs_pwm import FakePwmSysfs
    fake = FakePwmSysfs(tmp, chips={0: 2})
    try:
        child, guardian = rig.start_kernel_pwm_child(fake, "deadman")
        def neutral():
            return rig.kernel_pwm_line(fake, 13) == rig.kernel_pwm_line(fake, 12) == 1500.0
        return _time_to_neutral(child, guardian, sig, neutral, rig.stop_all)
    finally:
        fake.remove()


def one_pca9685(tmp: Path, sig: int) -> float:
    """_time_to_neutral on an emulated PCA9685 served on a Unix socket."""
    from hil.devices.i2c_socket import I2cSocketServer
    from hil.devices.pca9685_emulator import Pca9685Emulator
    chip = Pca9685Emulator()
    server = I2cSocketServer(chip, tmp.with_suffix(".sock")).start()
    try:
        child, guardian = rig.start_pca9685_child(server.path, "deadman")
        return _time_to_neutral(child, guardian, sig, lambda: rig.pca9685_neutral(chip, wait_s=0.0),
                                rig.stop_all)
    finally:
        server.stop()


def _line(label: str, ms: list, what: str) -> None:
    done = [m for m in ms if m != float("inf")]
    if done:
        print(f"{label}: {len(done)}/{len(ms)} reached neutral; {what} to neutral min {min(done):.1f} ms, "
              f"median {statistics.median(done):.1f} ms, max {max(done):.1f} ms")
    else:
        print(f"{label}: 0/{len(ms)} reached neutral")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--backend", choices=("pigpio", "kernel_pwm", "pca9685", "all"), default="all")
    args = ap.parse_args()
    import tempfile
    for name, one in (("kernel_pwm", one_kernel_pwm), ("pca9685", one_pca9685)):
        if args.backend not in (name, "all"):
            continue
        with tempfile.TemporaryDirectory() as d:
            for sig, what in ((signal.SIGKILL, "SIGKILL"), (signal.SIGSTOP, "hang (SIGSTOP)")):
                ms = [one(Path(d) / f"t{i}", sig) for i in range(args.kills)]
                _line(f"{name}, {what}", ms, what)
    if args.backend != "pigpio" and args.backend != "all":
        return
    for restart in (False, True):
        ms = [one_kill(restart) for _ in range(args.kills)]
        done = [m for m in ms if m != float("inf")]
        label = "after a pigpiod restart" if restart else "pigpiod as started    "
        if done:
            print(f"{label}: {len(done)}/{len(ms)} kills reached neutral; SIGKILL to neutral min "
                  f"{min(done):.1f} ms, median {statistics.median(done):.1f} ms, max {max(done):.1f} ms")
        else:
            print(f"{label}: 0/{len(ms)} kills reached neutral")


if __name__ == "__main__":
    main()
