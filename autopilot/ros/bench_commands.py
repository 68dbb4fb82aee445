"""Commands from a bench (a simulator driving the autopilot over a link) that survive a lossy link.

A command is sent until the autopilot's state shows its effect. It is resent when its answer on the events
topic was a refusal (after `refused_wait_s`: arming waits for the pre-arm checks) or when neither an answer nor
the effect came within `timeout_s` of wall time: the request or its reply was lost. Resending is safe because
what a bench sends is idempotent on the autopilot: `arm` when armed answers "armed", `mode AUTO` in AUTO is
requested again with no effect; each copy carries a fresh signature (a replayed one would be refused).
"""
from __future__ import annotations

import time
from typing import Callable, Optional


class RetriedCommand:
    def __init__(self, text: str, done: Callable[[dict], bool], answer_word: str, timeout_s: float = 1.0,
                 refused_wait_s: float = 0.2, clock=time.monotonic):
        """`done(state)` says the command took effect; `answer_word` is in the autopilot's answer to it (its events
        line), refused or not; `timeout_s` / `refused_wait_s` are wall seconds."""
        self.text = text
        self._done = done
        self._word = answer_word.lower()
        self.timeout_s, self.refused_wait_s = timeout_s, refused_wait_s
        self._clock = clock
        self.confirmed = False
        self.sent = self.timed_out = self.refused = 0
        self._sent_at: Optional[float] = None
        self._events_at = 0
        self._answered_at: Optional[float] = None

    def tick(self, state: dict, events: list, send: Callable[[str], None]) -> bool:
        """Call once per bench step with the newest state and the events list; sends when due. True once done."""
        if self.confirmed:
            return True
        if state and self._done(state):
            self.confirmed = True
            return True
        now = self._clock()
        if self._sent_at is None:
            return self._send(now, events, send)
        if self._answered_at is None:
            for line in events[self._events_at:]:
                low = line.lower()
                if self._word in low:
                    self._answered_at = now
                    if "refused" in low:
                        self.refused += 1
                    break
            self._events_at = len(events)
        if self._answered_at is not None:
            if now - self._answered_at >= self.refused_wait_s and now - self._sent_at >= self.refused_wait_s:
                return self._send(now, events, send)      # answered, but the state does not show it: again
        elif now - self._sent_at >= self.timeout_s:
            self.timed_out += 1
            return self._send(now, events, send)
        return False

    def _send(self, now: float, events: list, send) -> bool:
        self._events_at = len(events)
        self._answered_at = None
        self._sent_at = now
        self.sent += 1
        send(self.text)
        return False

    def summary(self) -> dict:
        return {"sent": self.sent, "timed_out": self.timed_out, "refused": self.refused,
                "confirmed": self.confirmed}
