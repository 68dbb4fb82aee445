"""Actuator deadman: a guardian process that puts the ESCs to neutral when the autopilot dies or hangs.

The guardian (`python -m drivers.esc.deadman`) is spawned by the autopilot's ESC output (`DeadmanLink.spawn`)
with a port of its own on the same backend (a pigpiod connection, the sysfs PWM files, the PCA9685 on I2C:
drivers/esc/contract.py) and one end of a Unix SOCK_SEQPACKET socket pair (shown for pigpio):

  autopilot --"H" heartbeat per ESC write--> guardian --set_servo_pulsewidth(neutral)--> pigpiod
  autopilot <--"R" ready / "T" tripped / "V1" "V0" can or cannot vouch for neutral-----

  - the autopilot dies (crash, SIGKILL, OOM): the kernel closes its socket, the guardian's recv returns EOF at
    once -> neutral, exit;
  - the autopilot hangs (alive, but no ESC write for `timeout_s`): heartbeat timeout -> neutral, "T" to the
    autopilot, neutral re-sent every timeout_s until heartbeats resume;
  - SIGTERM/SIGINT to the guardian (systemd stopping the unit): neutral, exit;
  - "Q" from the autopilot (orderly shutdown): neutral, exit.
The guardian runs in its own session, so a Ctrl-C meant for the autopilot reaches it only through the socket.
If both processes die together, systemd's ExecStopPost (`python -m autopilot.runtime.esc_neutral`) sets neutral.
If the guardian dies, the autopilot sees its socket close: ESC output reports not connected and holds neutral.

The guardian's own backend connection is checked every `check_s` (0.25 s) and re-established when dead; it
tells the autopilot "V0" while it cannot vouch for neutral and "V1" once it can again; the ESC output counts as
disconnected meanwhile (pre-arm refuses, the ESC-disconnected failsafe disarms, the outputs are held at
neutral). Neutral is reported set only after reading every pulse back from the backend.
Why: docs/design-notes/estimation-and-drivers.md, "ESC output".
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

from drivers.esc.contract import EscBackend, EscError, probe
from drivers.esc.ports import open_port

HEARTBEAT, READY, TRIPPED, QUIT, ERROR, VOUCH = b"H", b"R", b"T", b"Q", b"E", b"V"
CHECK_S = 0.25                  # how often the guardian checks its pigpiod connection [s]


class DeadmanError(RuntimeError):
    """The guardian could not be started (its message says why)."""


class DeadmanLink:
    """The autopilot's end: heartbeats out, trip reports in. Never blocks, never raises after spawn()."""

    def __init__(self, sock: socket.socket, process: Optional[subprocess.Popen] = None):
        self.sock = sock
        self.sock.setblocking(False)
        self.process = process
        self.alive = True
        self.vouching = True            # the guardian's last word: it can put the outputs to neutral
        self.heartbeats = 0

    @classmethod
    def spawn(cls, channels, host: str = "localhost", port: int = 8888, timeout_s: float = 0.4,
              ready_timeout_s: float = 10.0, python: str = sys.executable, backend=None) -> "DeadmanLink":
        """Start the guardian for these EscChannels and wait until it has opened its own port on `backend`
        (drivers/esc_backends.EscBackend; default pigpiod at host:port)."""
        backend = backend if backend is not None else EscBackend(host=host, port=port)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gpios = ",".join(str(c.gpio) for c in channels)
        neutrals = ",".join(str(c.neutral_out_us) for c in channels)
        cmd = [python, "-m", "drivers.esc.deadman", "--fd", str(theirs.fileno()), "--gpio", gpios,
               "--neutral-us", neutrals, "--timeout-s", str(timeout_s)] + backend.to_args()
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
            elif msg.startswith(VOUCH):
                self.vouching = msg[1:2] == b"1"
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


def guard(sock: socket.socket, set_neutral: Callable[[], object], timeout_s: float,
          clock: Callable[[], float] = time.monotonic, check: Optional[Callable[[], bool]] = None,
          check_s: float = CHECK_S) -> str:
    """The guardian's loop. Returns why it ended: 'eof' (autopilot gone), 'quit', or 'signal'.

    `check()` (every check_s) says whether the guardian can still reach pigpiod (reconnecting if not); each
    change is reported to the autopilot as "V1"/"V0"."""
    tripped = False
    stop = {"signal": False}
    vouching = True
    next_check = clock() + check_s

    def on_signal(signum, frame):
        stop["signal"] = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    last_heartbeat = clock()
    while not stop["signal"]:
        now = clock()
        if check is not None and now >= next_check:
            next_check = now + check_s
            ok = bool(check())
            if ok != vouching:
                vouching = ok
                try:
                    sock.send(VOUCH + (b"1" if ok else b"0"))
                except OSError:
                    pass
        wait = max(0.0, last_heartbeat + timeout_s - clock())
        if check is not None:
            wait = min(wait, max(0.0, next_check - clock()))
        try:
            ready, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if stop["signal"]:
            break
        if not ready and clock() < last_heartbeat + timeout_s:
            continue                              # woke for the connection check, not a missed heartbeat
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
    parser.add_argument("--gpio", required=True, help="comma-separated outputs of the ESCs (BCM GPIOs; board "
                                                          "channels on a PCA9685)")
    parser.add_argument("--neutral-us", required=True, help="comma-separated neutral pulses, same order [us]")
    parser.add_argument("--backend", default=None, help="the ESC backend as JSON (drivers/esc/contract.py)")
    parser.add_argument("--host", default="localhost", help="pigpiod host when --backend is not given")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--timeout-s", type=float, default=0.4, help="heartbeat timeout [s]")
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.fd)
    gpios = [int(g) for g in args.gpio.split(",")]
    neutrals = [int(n) for n in args.neutral_us.split(",")]
    if len(gpios) != len(neutrals):
        sock.send(ERROR + b"--gpio and --neutral-us differ in length")
        return 2
    try:
        backend = EscBackend.from_json(args.backend) if args.backend else EscBackend(host=args.host, port=args.port)
        out = _GuardedOutputs(backend, gpios, neutrals)
    except (EscError, ValueError, TypeError) as e:
        sock.send(ERROR + str(e).encode())
        return 2
    sock.send(READY)
    reason = guard(sock, out.set_neutral, args.timeout_s, check=out.reachable)
    if out.last_neutral_ok:
        print(f"esc_deadman: outputs set to neutral ({reason})", file=sys.stderr, flush=True)
    else:
        print(f"esc_deadman: COULD NOT set the outputs to neutral ({reason}): {out.last_error}", file=sys.stderr,
              flush=True)
    out.close()
    return 0 if out.last_neutral_ok else 1


class _GuardedOutputs:
    """The guardian's own port (pigpiod connection, sysfs PWM files or PCA9685 on I2C): checked, re-opened when
    it stopped answering (pigpiod restarted), neutral verified by reading it back."""

    def __init__(self, backend, gpios, neutrals):
        self._connect = lambda: open_port(backend, gpios)
        self.kind = backend.kind
        self.gpios, self.neutrals = list(gpios), list(neutrals)
        self.pi = self._connect()                 # EscError at start-up: the guardian cannot start
        self.last_neutral_ok = False
        self.last_error = ""

    def _reconnect(self) -> bool:
        old, self.pi = self.pi, None
        if old is not None:
            try:
                old.stop()
            except Exception:     # noqa: BLE001 - a dead connection may fail to close
                pass
        try:
            self.pi = self._connect()
            print(f"esc_deadman: reopened its {self.kind} port", file=sys.stderr, flush=True)
            return True
        except Exception as e:    # noqa: BLE001 - EscError, or the port failing while it opens
            self.last_error = str(e)
            return False

    def reachable(self) -> bool:
        """True if our port answers (reopening it once if it does not)."""
        if self.pi is not None and probe(self.pi, self.gpios[0]):
            return True
        self.last_error = f"its {self.kind} port stopped answering"
        return self._reconnect()

    def set_neutral(self) -> bool:
        """Neutral on every ESC, read back; one reconnect and retry if that fails. True only when verified."""
        for _ in range(2):
            if self.pi is None and not self._reconnect():
                continue
            try:
                for gpio, pulse in zip(self.gpios, self.neutrals):
                    self.pi.set_servo_pulsewidth(gpio, pulse)
                wrong = [g for g, p in zip(self.gpios, self.neutrals) if self.pi.get_servo_pulsewidth(g) != p]
                if not wrong:
                    self.last_neutral_ok = True
                    return True
                self.last_error = f"GPIO {wrong} did not read back neutral"
            except Exception as e:    # noqa: BLE001 - a dead connection: reconnect and retry
                self.last_error = f"{type(e).__name__}: {e}"
                print(f"esc_deadman: neutral failed: {self.last_error}", file=sys.stderr, flush=True)
                self._reconnect()
        self.last_neutral_ok = False
        return False

    def close(self) -> None:
        if self.pi is not None:
            try:
                self.pi.stop()
            except Exception:         # noqa: BLE001
                pass


if __name__ == "__main__":
    raise SystemExit(main())
