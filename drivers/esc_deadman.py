"""Actuator deadman: a guardian process that puts the ESCs to neutral when the autopilot dies or hangs.

pigpiod repeats the last servo pulse forever, so a crashed, hung or SIGKILLed autopilot would leave its thrusters
running. The guardian (`python -m drivers.esc_deadman`) is spawned by the autopilot's ESC output
(`DeadmanLink.spawn`) with its own pigpiod connection and one end of a Unix SOCK_SEQPACKET socket pair:

  autopilot --"H" heartbeat per ESC write--> guardian --set_servo_pulsewidth(neutral)--> pigpiod
  autopilot <--"R" ready / "T" tripped-----

  - the autopilot dies (crash, SIGKILL, OOM): the kernel closes its socket, the guardian's recv returns EOF at
    once -> neutral, exit;
  - the autopilot hangs (alive, but no ESC write for `timeout_s`): heartbeat timeout -> neutral, "T" to the
    autopilot, neutral re-sent every timeout_s until heartbeats resume;
  - SIGTERM/SIGINT to the guardian (systemd stopping the unit): neutral, exit;
  - "Q" from the autopilot (orderly shutdown): neutral, exit.
The guardian runs in its own session, so a Ctrl-C meant for the autopilot reaches it only through the socket.

Why a guardian process rather than a pigpio script inside pigpiod: the socket pair reports the autopilot's death
the instant it happens (a script could only notice a missed heartbeat), the guardian is plain Python that can be
tested against the fake pigpiod with the real pigpio client, and it also covers a hang. If both processes die
together (the whole unit is killed), systemd's ExecStopPost (`python -m drivers.esc_neutral`) sets neutral.
If the guardian dies, the autopilot sees its socket close: ESC output reports not connected and holds neutral.
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import time
from typing import Callable, Optional, Sequence

HEARTBEAT, READY, TRIPPED, QUIT, ERROR = b"H", b"R", b"T", b"Q", b"E"


class DeadmanError(RuntimeError):
    """The guardian could not be started (its message says why)."""


class DeadmanLink:
    """The autopilot's end: heartbeats out, trip reports in. Never blocks, never raises after spawn()."""

    def __init__(self, sock: socket.socket, process: Optional[subprocess.Popen] = None):
        self.sock = sock
        self.sock.setblocking(False)
        self.process = process
        self.alive = True
        self.heartbeats = 0

    @classmethod
    def spawn(cls, channels, host: str = "localhost", port: int = 8888, timeout_s: float = 0.4,
              ready_timeout_s: float = 10.0, python: str = sys.executable) -> "DeadmanLink":
        """Start the guardian for these EscChannels and wait until it is connected to pigpiod."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gpios = ",".join(str(c.gpio) for c in channels)
        neutrals = ",".join(str(c.neutral_out_us) for c in channels)
        cmd = [python, "-m", "drivers.esc_deadman", "--fd", str(theirs.fileno()), "--gpio", gpios,
               "--neutral-us", neutrals, "--host", host, "--port", str(port), "--timeout-s", str(timeout_s)]
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        process = subprocess.Popen(cmd, pass_fds=(theirs.fileno(),), start_new_session=True, env=env,
                                   stdin=subprocess.DEVNULL)
        theirs.close()
        ours.settimeout(ready_timeout_s)
        try:
            msg = ours.recv(512)
        except socket.timeout:
            process.kill()
            raise DeadmanError(f"deadman guardian did not report ready within {ready_timeout_s} s") from None
        if not msg.startswith(READY):
            process.wait(timeout=5)
            reason = msg[1:].decode(errors="replace") if msg.startswith(ERROR) else "it exited"
            raise DeadmanError(f"deadman guardian failed to start: {reason}")
        return cls(ours, process)

    def heartbeat(self) -> None:
        if not self.alive:
            return
        try:
            self.sock.send(HEARTBEAT)
            self.heartbeats += 1
        except BlockingIOError:
            pass                                   # guardian busy; the next heartbeat will do
        except OSError:
            self.alive = False                     # guardian gone (EPIPE / ECONNRESET)

    def poll_trips(self) -> int:
        """Trip reports received since the last call (0 if none); marks the link dead on EOF."""
        trips = 0
        while self.alive:
            try:
                msg = self.sock.recv(64)
            except BlockingIOError:
                break
            except OSError:
                self.alive = False
                break
            if not msg:
                self.alive = False
                break
            if msg.startswith(TRIPPED):
                trips += 1
        return trips

    def close(self) -> None:
        """Orderly shutdown: the guardian sets neutral and exits."""
        if self.alive:
            try:
                self.sock.send(QUIT)
            except OSError:
                pass
        self.alive = False
        self.sock.close()
        if self.process is not None:
            try:
                self.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.process.terminate()


def guard(sock: socket.socket, set_neutral: Callable[[], None], timeout_s: float,
          clock: Callable[[], float] = time.monotonic) -> str:
    """The guardian's loop. Returns why it ended: 'eof' (autopilot gone), 'quit', or 'signal'."""
    tripped = False
    stop = {"signal": False}

    def on_signal(signum, frame):
        stop["signal"] = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    last_heartbeat = clock()
    while not stop["signal"]:
        wait = max(0.0, last_heartbeat + timeout_s - clock())
        try:
            ready, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if stop["signal"]:
            break
        if not ready:
            set_neutral()
            if not tripped:
                tripped = True
                try:
                    sock.send(TRIPPED)
                except OSError:
                    pass
            last_heartbeat = clock()             # re-send neutral every timeout while tripped
            continue
        try:
            msg = sock.recv(64)
        except OSError:
            msg = b""
        if not msg:
            set_neutral()
            return "eof"
        if msg.startswith(QUIT):
            set_neutral()
            return "quit"
        last_heartbeat = clock()
        tripped = False
    set_neutral()
    return "signal"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="ESC deadman guardian (spawned by the autopilot's ESC output).")
    parser.add_argument("--fd", type=int, required=True, help="inherited SOCK_SEQPACKET socket to the autopilot")
    parser.add_argument("--gpio", required=True, help="comma-separated BCM GPIOs of the ESCs")
    parser.add_argument("--neutral-us", required=True, help="comma-separated neutral pulses, same order [us]")
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--timeout-s", type=float, default=0.4, help="heartbeat timeout [s]")
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    gpios = [int(g) for g in args.gpio.split(",")]
    neutrals = [int(n) for n in args.neutral_us.split(",")]
    if len(gpios) != len(neutrals):
        sock.send(ERROR + b"--gpio and --neutral-us differ in length")
        return 2
    from drivers.esc import EscError, connect_pigpio
    try:
        pi = connect_pigpio(args.host, args.port)
    except EscError as e:
        sock.send(ERROR + str(e).encode())
        return 2

    def set_neutral() -> None:
        for gpio, pulse in zip(gpios, neutrals):
            try:
                pi.set_servo_pulsewidth(gpio, pulse)
            except Exception as e:    # noqa: BLE001 - keep trying the other channels
                print(f"esc_deadman: neutral on GPIO{gpio} failed: {e}", file=sys.stderr, flush=True)

    sock.send(READY)
    reason = guard(sock, set_neutral, args.timeout_s)
    print(f"esc_deadman: outputs set to neutral ({reason})", file=sys.stderr, flush=True)
    pi.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
