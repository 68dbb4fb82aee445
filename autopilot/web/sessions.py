"""Who is logged in to the web page: sessions, their CSRF tokens, and the brake on guessing the password.

`Sessions(idle_timeout_s)`: `open(who)` makes a session (a random 256-bit id for the cookie and a separate
random CSRF token the page sends back in a header with every state change); `find(session_id)` returns the
live session or None (unknown, logged out, idle too long); `close(session_id)` logs it out for good (the same
cookie is refused afterwards). At most MAX_SESSIONS live at once: opening one more closes the oldest.

`LoginBrake`: after FREE_TRIES wrong passwords from one address, each further try from it waits a doubling
delay (1 s, 2 s, ... capped at MAX_DELAY_S) before it is even looked at; `wait_s(addr)` says how long is left.
Every address counts against one shared budget too, so spreading the guesses over addresses does not help.

Times are `clock()` seconds (monotonic). Thread-safe.
"""
from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

MAX_SESSIONS = 64
FREE_TRIES = 5
MAX_DELAY_S = 60.0


@dataclass
class Session:
    session_id: str
    csrf: str
    who: str                   # the address the login came from: logged with every command
    opened_s: float
    seen_s: float = field(default=0.0)

    def csrf_ok(self, token: Optional[str]) -> bool:
        return isinstance(token, str) and hmac.compare_digest(token.encode(), self.csrf.encode())


class Sessions:
    def __init__(self, idle_timeout_s: float = 8 * 3600.0, clock: Callable[[], float] = time.monotonic):
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._live: Dict[str, Session] = {}

    def open(self, who: str) -> Session:
        now = self._clock()
        s = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), who, now, now)
        with self._lock:
            while len(self._live) >= MAX_SESSIONS:
                oldest = min(self._live.values(), key=lambda x: x.seen_s)
                del self._live[oldest.session_id]
            self._live[s.session_id] = s
        return s

    def find(self, session_id: Optional[str]) -> Optional[Session]:
        if not session_id or len(session_id) > 128:
            return None
        now = self._clock()
        with self._lock:
            s = self._live.get(session_id)
            if s is None:
                return None
            if now - s.seen_s > self.idle_timeout_s:
                del self._live[session_id]
                return None
            s.seen_s = now
            return s

    def close(self, session_id: Optional[str]) -> None:
        with self._lock:
            self._live.pop(session_id or "", None)

    def count(self) -> int:
        with self._lock:
            return len(self._live)


class LoginBrake:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._fails: Dict[str, int] = {}
        self._next_ok_s: Dict[str, float] = {}
        self._all = "*"                         # the shared budget's key

    def wait_s(self, addr: str) -> float:
        """Seconds before a login from `addr` will be looked at (0: now)."""
        now = self._clock()
        with self._lock:
            return max(0.0, max(self._next_ok_s.get(addr, 0.0), self._next_ok_s.get(self._all, 0.0)) - now)

    def failed(self, addr: str) -> None:
        now = self._clock()
        with self._lock:
            if len(self._fails) > 10_000:           # a flood of addresses: forget all but the shared budget
                keep = self._fails.get(self._all, 0)
                self._fails.clear()
                self._next_ok_s = {self._all: self._next_ok_s.get(self._all, 0.0)}
                self._fails[self._all] = keep
            for key, free in ((addr, FREE_TRIES), (self._all, 4 * FREE_TRIES)):
                n = self._fails.get(key, 0) + 1
                self._fails[key] = n
                if n > free:
                    self._next_ok_s[key] = now + min(MAX_DELAY_S, 2.0 ** (n - free - 1))

    def succeeded(self, addr: str) -> None:
        with self._lock:
            self._fails.pop(addr, None)
            self._next_ok_s.pop(addr, None)
