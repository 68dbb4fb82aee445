"""systemd readiness and watchdog notifications (the sd_notify datagram protocol), without libsystemd.

Protocol (sd_notify(3)): the service manager passes a Unix socket path in $NOTIFY_SOCKET; the service sends
newline-separated `KEY=VALUE` assignments as one datagram (SOCK_DGRAM). A path starting with '@' names a
socket in the Linux abstract namespace (the '@' becomes a NUL byte). Messages used here:

    READY=1      start-up finished (Type=notify units become "active" only after this)
    STATUS=...   one line of free text shown by `systemctl status`
    WATCHDOG=1   keep-alive; with WatchdogSec= the manager expects one at least every $WATCHDOG_USEC us
    STOPPING=1   orderly shutdown has begun

Outside systemd ($NOTIFY_SOCKET unset) every call is a no-op that returns False, so the same code runs on a
laptop. Send errors (the manager went away) are counted, never raised: a notification must not stop the loop.

`Watchdog` is the piece the control loop uses: the loop calls `tick(t_wall_s)` once per cycle and a
WATCHDOG=1 leaves at most every WATCHDOG_USEC/2. Pings come only from those calls -- no helper thread -- so a
hung loop stops them and systemd's watchdog fires, which is the point.
"""
from __future__ import annotations

import os
import socket
from typing import Mapping, Optional


def notify_socket_address(env: Mapping[str, str] = os.environ) -> Optional[str]:
    """The address to send to, with '@' turned into the abstract-namespace NUL; None outside systemd."""
    path = env.get("NOTIFY_SOCKET", "")
    if not path:
        return None
    if path.startswith("@"):
        return "\0" + path[1:]
    return path


def watchdog_interval_s(env: Mapping[str, str] = os.environ, pid: Optional[int] = None) -> Optional[float]:
    """The watchdog timeout systemd expects [s] (from WATCHDOG_USEC), or None when no watchdog applies.

    As in sd_watchdog_enabled(3): when WATCHDOG_PID is set and names another process, the watchdog is not
    ours. A malformed or non-positive WATCHDOG_USEC counts as no watchdog.
    """
    usec = env.get("WATCHDOG_USEC", "")
    if not usec:
        return None
    wpid = env.get("WATCHDOG_PID", "")
    if wpid:
        try:
            if int(wpid) != (os.getpid() if pid is None else pid):
                return None
        except ValueError:
            return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1e6 if value > 0 else None


class Notifier:
    """Sends sd_notify messages to the manager's socket. One datagram socket, opened on first use."""

    def __init__(self, env: Mapping[str, str] = os.environ):
        self.address = notify_socket_address(env)
        self.sent = 0            # datagrams delivered to the socket
        self.errors = 0          # datagrams that could not be sent
        self.last_error: Optional[str] = None
        self._sock: Optional[socket.socket] = None

    @property
    def enabled(self) -> bool:
        """True when running under a manager that listens ($NOTIFY_SOCKET set)."""
        return self.address is not None

    def send(self, *assignments: str) -> bool:
        """Send `KEY=VALUE` assignments as one datagram. Returns True when the datagram left."""
        if self.address is None:
            return False
        for a in assignments:
            if "=" not in a or "\n" in a.partition("=")[0]:
                raise ValueError(f"sd_notify: not a KEY=VALUE assignment: {a!r}")
        payload = "\n".join(assignments).encode("utf-8")
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(payload, self.address)
        except OSError as e:
            self.errors += 1
            self.last_error = f"{type(e).__name__}: {e}"
            return False
        self.sent += 1
        return True

    def ready(self, status: Optional[str] = None) -> bool:
        """READY=1, optionally with a STATUS line."""
        return self.send("READY=1", *([_status(status)] if status else []))

    def status(self, text: str) -> bool:
        return self.send(_status(text))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self, status: Optional[str] = None) -> bool:
        return self.send("STOPPING=1", *([_status(status)] if status else []))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _status(text: str) -> str:
    # STATUS is one line; newlines would start new assignments.
    return "STATUS=" + " ".join(str(text).splitlines())


class Watchdog:
    """Rate-limits WATCHDOG=1 to the control loop's ticks.

    `interval_s` is the manager's timeout (WatchdogSec); a ping is sent when at least `interval_s / 2` of the
    caller's wall clock has passed since the last one. With no watchdog (interval None) `tick` does nothing.
    """

    def __init__(self, notifier: Notifier, interval_s: Optional[float]):
        if interval_s is not None and not interval_s > 0:
            raise ValueError(f"watchdog interval must be > 0 s, got {interval_s}")
        self.notifier = notifier
        self.interval_s = interval_s
        self._last_ping_s: Optional[float] = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "Watchdog":
        """A Watchdog set up from $NOTIFY_SOCKET and $WATCHDOG_USEC (inactive outside systemd)."""
        return cls(Notifier(env), watchdog_interval_s(env))

    @property
    def active(self) -> bool:
        return self.interval_s is not None and self.notifier.enabled

    def tick(self, t_wall_s: float) -> bool:
        """Call once per loop cycle with the wall clock [s] (time.monotonic()). True when a ping was sent."""
        if not self.active:
            return False
        assert self.interval_s is not None      # active: a watchdog interval is set
        if self._last_ping_s is not None and 0.0 <= t_wall_s - self._last_ping_s < self.interval_s / 2:
            return False            # (a clock that stepped backwards pings at once rather than going silent)
        self._last_ping_s = t_wall_s
        return self.notifier.watchdog()
