"""How much one MAVLink link may cost the boat: a budget of bytes and frames parsed per second, and the rate of
the reads that make the boat send a lot (parameter lists, mission downloads).

pymavlink parses in Python, in the interpreter the control loop runs in: a link that brings in megabytes a
second of anything (random bytes, a mis-set baud rate, a hostile sender) would keep the server's thread busy
parsing and take the loop's time. So a link's input passes `LinkBudget` before it reaches the parser: what is
beyond the budget is not read at all (a datagram socket drops it in the kernel, a TCP sender is slowed by its
own window, a serial port's buffer overflows), the link is left out of the server's select until the budget
has refilled, and the server says at most once per `FLOOD_TEXT_EVERY_S` that the link is flooded. The budget is
far above what a ground station sends at its busiest (a mission upload, 50 Hz sticks: a few kB/s and at most a
hundred frames a second), so a genuine one does not meet it; the flooded link loses commands, the others none.
Frames count too (each costs a decode): many tiny frames are as heavy as many bytes.
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, Optional

LINK_BYTES_PER_S = 100_000        # per link: 10x a 115200-baud radio, far above a ground station's commands
LINK_FRAMES_PER_S = 1_000         # per link, counting BAD_DATA runs: 20x a 50 Hz MANUAL_CONTROL stream
BURST_S = 0.5                     # a full budget holds this long at the rates above
FLOOD_TEXT_EVERY_S = 10.0         # "link flooded" is said at most this often per link
MAX_PARSER_BACKLOG = 512          # bytes: no new input while the parser holds more than this (a frame is <= 280)
REOPEN_AT = 0.25                  # a spent budget reopens the link once it has refilled this share of its burst


class TokenBucket:
    """`rate` tokens a second, at most `burst` kept; `take(n)` spends n (the balance may go negative: an input
    read whole is paid for whole, and the debt is waited out)."""

    def __init__(self, rate: float, burst: float, now: float):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.t = now

    def _refill(self, now: float) -> None:
        if now > self.t:
            self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
        self.t = now

    def available(self, now: float) -> bool:
        self._refill(now)
        return self.tokens > 0.0

    def take(self, n: float, now: float) -> bool:
        """Spend n if any token is left (True); else spend nothing (False)."""
        self._refill(now)
        if self.tokens <= 0.0:
            return False
        self.tokens -= n
        return True

    def wait_s(self, now: float, level: float = 0.0) -> float:
        """Seconds until more than `level` tokens are held (0 when they are)."""
        self._refill(now)
        return 0.0 if self.tokens > level else (level + 1e-3 - self.tokens) / self.rate


class LinkBudget:
    """One link's budget: `admit(data)` before the parser, `frame()` for each message it gives, `open()` to say
    whether the link may be read now: once the budget is spent, not until it has refilled REOPEN_AT of its
    burst (so a flood wakes the server a few times a second, not at every byte). `flood_report()` returns the
    "flooded" text when one is due (at most once per FLOOD_TEXT_EVERY_S, and only when input was refused since
    the last), else None."""

    def __init__(self, name: str, clock: Callable[[], float], bytes_per_s: float = LINK_BYTES_PER_S,
                 frames_per_s: float = LINK_FRAMES_PER_S):
        now = clock()
        self.name = name
        self.clock = clock
        self.bytes = TokenBucket(bytes_per_s, bytes_per_s * BURST_S, now)
        self.frames = TokenBucket(frames_per_s, frames_per_s * BURST_S, now)
        self.dropped_bytes = 0          # read but not parsed (the read that found the budget spent)
        self.shut_count = 0             # times the budget ran out
        self._shut_since_report = 0
        self._dropped_since_report = 0
        self._next_report = now
        self._closed = False

    def open(self) -> bool:
        if self._closed:
            if self.wait_s() > 0.0:
                return False
            self._closed = False
        now = self.clock()
        if self.bytes.available(now) and self.frames.available(now):
            return True
        self._closed = True
        return False

    def wait_s(self) -> float:
        """Seconds until the link may be read again (0: now)."""
        now = self.clock()
        b, f = self.bytes, self.frames
        if not self._closed:
            return max(b.wait_s(now), f.wait_s(now))
        return max(b.wait_s(now, REOPEN_AT * b.burst), f.wait_s(now, REOPEN_AT * f.burst))

    def admit(self, data):
        """`data` (just read from the link) if the budget has room, else b"" (dropped, counted)."""
        n = len(data)
        if n == 0:
            return data
        if self.bytes.take(n, self.clock()):
            if not self.bytes.tokens > 0.0:
                self._shut()
            return data
        self.dropped_bytes += n
        self._dropped_since_report += n
        return b""

    def frame(self) -> bool:
        """Count one parsed message; False when that spent the frame budget (stop reading the link)."""
        now = self.clock()
        self.frames.take(1, now)
        if self.frames.tokens > 0.0:
            return True
        self._shut()
        return False

    def _shut(self) -> None:
        self._closed = True
        self.shut_count += 1
        self._shut_since_report += 1

    def flood_report(self) -> Optional[str]:
        now = self.clock()
        if now < self._next_report or not (self._shut_since_report or self._dropped_since_report):
            return None
        text = (f"MAVLink link {self.name} flooded: more than {self.bytes.rate / 1e3:g} kB/s or "
                f"{self.frames.rate:g} frames/s coming in; input beyond that is dropped unread "
                f"(budget spent {self._shut_since_report} times"
                + (f", {self._dropped_since_report} bytes dropped" if self._dropped_since_report else "")
                + f" in the last {FLOOD_TEXT_EVERY_S:g} s)")
        self._shut_since_report = self._dropped_since_report = 0
        self._next_report = now + FLOOD_TEXT_EVERY_S
        return text


def budget_input(conn, budget: LinkBudget) -> None:
    """Make mavutil connection `conn` read through `budget`: its `recv` returns nothing while the parser still
    holds a backlog or when the budget is spent. (pymavlink's UDP reader parses one message per datagram it
    reads: a flood of datagrams faster than it parses would pile up in its buffer; this bounds it.)"""
    raw = conn.recv
    mav = conn.mav

    def recv(*args):
        if mav.buf_len() > MAX_PARSER_BACKLOG or not budget.open():
            return b""
        return budget.admit(raw(*args))

    conn.recv = recv


class SenderLimits:
    """Rate limits keyed by sender (or by anything hashable): `allow(key, now)` is True while `key` has a token
    left (`rate` a second, `burst` at most). Keys are forgotten when more than `max_keys` are held (senders are
    free to invent system ids), which only ever lets a request through, never refuses one it should not."""

    def __init__(self, rate: float, burst: float, max_keys: int = 256):
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: Dict[Hashable, TokenBucket] = {}

    def allow(self, key: Hashable, now: float) -> bool:
        b = self._buckets.get(key)
        if b is None:
            if len(self._buckets) >= self.max_keys:
                self._buckets.clear()
            b = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
        return b.take(1, now)
