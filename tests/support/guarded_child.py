"""A child process that drives the ESCs at full thrust with the deadman guardian, as the autopilot would: the
tests kill or freeze it and time how soon the guardian sets neutral."""
from __future__ import annotations

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
