"""A child process that drives the ESCs at full thrust with the deadman guardian, as the autopilot would: the
tests kill or freeze it and time how soon the guardian sets neutral."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from tests.support.paths import REPO

# pigpio through a fake pigpiod on 127.0.0.1:PORT (argv[1]), reconnecting as the autopilot does
PIGPIO_CHILD = textwrap.dedent("""
    import sys, time
    import pigpio
    from autopilot.vocab.types import PulseCommand
    from drivers.esc.output import EscChannel, EscOutput
    from drivers.esc.deadman import DeadmanLink
    port = int(sys.argv[1])
    chans = [EscChannel("left", 13, arming_time_s=0.2), EscChannel("right", 12, arming_time_s=0.2)]
    link = DeadmanLink.spawn(chans, host="127.0.0.1", port=port, timeout_s=0.3)
    from drivers.esc.pigpio_port import connect_pigpio
    esc = EscOutput(chans, pigpio.pi("127.0.0.1", port), deadman=link,
                    pi_factory=lambda: connect_pigpio("127.0.0.1", port))   # reconnects as the autopilot does
    print("guardian", link.process.pid, flush=True)
    t0 = time.monotonic()
    said = False
    while True:
        esc.write(time.monotonic() - t0, PulseCommand((1900, 1900)))
        if not said and esc.output_us() == [1900, 1900]:
            print("full", flush=True)
            said = True
        time.sleep(0.02)
""")


def start_guarded_child(script: str, *args: str):
    """Run `script` (it prints "guardian PID", then "full" once its outputs are at full thrust) with `args`;
    (the child process, the guardian's pid) once it is at full thrust. AssertionError with its stderr if not."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    first = child.stdout.readline().split()
    assert first and first[0] == "guardian", child.stderr.read() if child.poll() is not None else first
    assert child.stdout.readline().strip() == "full"
    return child, int(first[1])


def start_child(port: int):
    """The pigpio child against the fake pigpiod on `port`."""
    return start_guarded_child(PIGPIO_CHILD, str(port))


def neutral_after(daemon, t_from, gpios=(13, 12), wait_s=2.0):
    """Time of the first neutral pulse at or after t_from on every GPIO of a fake pigpiod (waits up to wait_s)."""
    deadline = time.monotonic() + wait_s
    while True:
        times = []
        for gpio in gpios:
            hits = [t for t, p in daemon.state.log(gpio) if t >= t_from and p == 1500]
            times.append(hits[0] if hits else None)
        if all(times) or time.monotonic() > deadline:
            return times
        time.sleep(0.01)


# any ESC backend: argv[1] the backend as JSON (EscBackend.to_args), argv[2] the two outputs "A,B", argv[3] the
# board model ("" for the real one), argv[4] "deadman" spawns the guardian
BACKEND_CHILD = textwrap.dedent("""
    import sys, time
    from autopilot.vocab.types import PulseCommand
    from drivers.esc.output import EscChannel, EscOutput
    from drivers.esc.contract import EscBackend
    from drivers.esc.ports import open_port
    from drivers.esc.deadman import DeadmanLink
    backend = EscBackend.from_json(sys.argv[1])
    outputs = [int(o) for o in sys.argv[2].split(",")]
    model = sys.argv[3] or None
    chans = [EscChannel("left", outputs[0], arming_time_s=0.2), EscChannel("right", outputs[1], arming_time_s=0.2)]
    port = open_port(backend, outputs, model=model)
    link = DeadmanLink.spawn(chans, backend=backend, timeout_s=0.3) if sys.argv[4] == "deadman" else None
    esc = EscOutput(chans, port, deadman=link, emergency_pi_factory=lambda: open_port(backend, outputs, model=model))
    esc.install_signal_handlers()
    print("guardian", link.process.pid if link else 0, flush=True)
    t0 = time.monotonic()
    said = False
    while True:
        esc.write(time.monotonic() - t0, PulseCommand((1900, 1900)))
        if not said and esc.output_us() == [1900, 1900]:
            print("full", flush=True)
            said = True
        time.sleep(0.02)
""")
PI4 = "Raspberry Pi 4 Model B Rev 1.5"


def start_backend_child(backend, outputs, model: str, mode: str):
    """The child driving `outputs` on `backend` (an EscBackend without in-process emulated parts: the child opens
    its own port from the JSON), with the guardian when mode is "deadman"."""
    return start_guarded_child(BACKEND_CHILD, backend.to_args()[1], ",".join(map(str, outputs)), model, mode)


def kernel_pwm_line(fake, gpio: int) -> float:
    """What a scope on the GPIO reads [us] on a hil.devices.fake_sysfs_pwm tree (GPIO12 is channel 0, GPIO13
    channel 1 on a Pi 4)."""
    return fake.pulse_us(0, {12: 0, 13: 1}[gpio])


def start_kernel_pwm_child(fake, mode: str):
    """The kernel-PWM child on `fake` (mode "deadman" or "plain"). The child and its guardian write the tree as
    plain files (another process has no kernel rules), so the channels are exported here first, as the kernel
    would have created them on the child's export."""
    from drivers.esc.contract import EscBackend
    from drivers.esc.ports import open_port
    here = EscBackend(kind="kernel_pwm", sysfs_root=str(fake.root), sysfs_files=fake.files, boot_config="none")
    open_port(here, [13, 12], model=PI4).stop()
    return start_backend_child(EscBackend(kind="kernel_pwm", sysfs_root=str(fake.root), boot_config="none"),
                               [13, 12], PI4, mode)


TICK_25MHZ_US = 122 / 25.0          # (PRE_SCALE 121 + 1) / 25 MHz = 4.88 us per tick at 50 Hz


def start_pca9685_child(path: str, mode: str):
    """The PCA9685 child on the board served at `path` (mode "deadman" or "plain")."""
    from drivers.esc.contract import EscBackend
    return start_backend_child(EscBackend(kind="pca9685", pca9685_channels=(0, 1), i2c_socket=str(path)), [0, 1], "",
                               mode)


def pca9685_neutral(chip, wait_s=3.0) -> bool:
    """Both of the emulated board's outputs 0 and 1 at neutral within a tick, waiting up to wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        if all(abs(chip.pulse_us(ch) - 1500) <= TICK_25MHZ_US for ch in (0, 1)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def stop_all(child, guardian_pid: int) -> None:
    """Kill the child and its guardian (pid 0: none)."""
    if child.poll() is None:
        child.kill()
    child.wait(timeout=5)
    if guardian_pid:
        try:
            os.kill(guardian_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
