"""The operator's latest command and how old it may grow: shared by the modes an operator drives (MANUAL,
VELOCITY), so a dead joystick or link gives neutral the same way in each."""
from __future__ import annotations

import math
from typing import Optional


class OperatorCommand:
    """The last command a mode was given, with its time [s]. `current(t_s)` gives its values while it is at most
    `timeout_s` old, else None; `take_notice()` then says once that the thrusters went neutral (the mode passes
    it on as its own notice), until a fresh command arrives. `what` names the command in that message."""

    def __init__(self, timeout_s: float, what: str):
        self.timeout_s = timeout_s
        self.what = what
        self._t_s: Optional[float] = None
        self._values: tuple[float, ...] = ()
        self._stale = True
        self._notice: Optional[str] = None

    def store(self, t_s: float, *values: float) -> None:
        """Keep `values` as given at `t_s`. ValueError (the mode's message) is for the caller to raise first:
        this only refuses a non-finite time."""
        if not math.isfinite(t_s):
            raise ValueError(f"{self.what} command time must be a finite number, got {t_s!r}")
        self._t_s, self._values = t_s, tuple(values)

    def clear(self) -> None:
        """Forget the command (a mode entered afresh does not fly one given before) and be stale again."""
        self._t_s, self._values = None, ()
        self._stale = True

    def restart(self) -> None:
        """Be stale again without forgetting the command: it is flown if still fresh, and silence is said anew."""
        self._stale = True

    @property
    def values(self) -> tuple[float, ...]:
        """The stored values, fresh or not (empty before the first command)."""
        return self._values

    def current(self, t_s: float) -> Optional[tuple[float, ...]]:
        """The command's values if it is at most `timeout_s` old at `t_s`, else None (and a notice once)."""
        if self._t_s is None or t_s - self._t_s > self.timeout_s:
            if not self._stale:
                self._stale = True
                self._notice = f"no {self.what} command for {self.timeout_s:g} s: thrusters neutral"
            return None
        self._stale = False
        return self._values

    def take_notice(self) -> Optional[str]:
        """The "went neutral" message once after the command went stale, else None."""
        notice, self._notice = self._notice, None
        return notice
