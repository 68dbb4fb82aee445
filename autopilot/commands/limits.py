"""How much of what anyone sends the boat is looked at, echoed and logged.

Anyone on the ROS domain or a MAVLink link can send text; none of it may cost the control loop time or fill a
disk or a pipe. The contracts:
- a text command longer than MAX_COMMAND_BYTES (UTF-8) is refused before it is parsed, its signature checked or
  a path in it resolved (`disarm` still stops the boat, its reason cut; see autopilot/commands/auth.py);
- a path longer than MAX_PATH_BYTES, or with a component over MAX_NAME_BYTES, is refused before the file
  system is asked anything (Linux's PATH_MAX and NAME_MAX);
- wherever received input is echoed (an answer, a log line) at most ECHO_CHARS of it are, then "... (N bytes)";
- `RepeatQuieter` lets a repeated refusal from the same origin through to a log at most once per interval,
  the next one saying how many were left out.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, Optional, Tuple

MAX_COMMAND_BYTES = 4096        # a text command, envelope included [bytes of UTF-8]
MAX_PATH_BYTES = 4096           # PATH_MAX
MAX_NAME_BYTES = 255            # NAME_MAX: one component of a path
ECHO_CHARS = 200                # of received input, in an answer or a log line
MAX_LOGGED_CHARS = 1000         # any one answer or note, whatever it quotes


def utf8_size(text: str, limit: int) -> int:
    """The UTF-8 size of `text` [bytes], exactly when it is at most `limit`; above, some size over `limit`
    (a 1 MB text is not encoded to be measured)."""
    n = len(text)
    if n > limit:
        return n if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if 4 * n <= limit:
        return n if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-8", "surrogatepass"))


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """`text` as it may be echoed: whole when at most `limit` characters, else its first `limit` characters
    then "... (N bytes)" (N: the whole text's UTF-8 size)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({utf8_size(text, 0)} bytes)"


def path_problem(path: str) -> Optional[str]:
    """Why `path` is refused unread (over PATH_MAX, or a component over NAME_MAX), or None."""
    size = utf8_size(path, MAX_PATH_BYTES)
    if size > MAX_PATH_BYTES:
        return f"a path of {size} bytes is over the {MAX_PATH_BYTES}-byte limit (PATH_MAX)"
    longest = max((len(part.encode("utf-8", "surrogatepass")) for part in path.split("/")), default=0)
    if longest > MAX_NAME_BYTES:
        return f"a path component of {longest} bytes is over the {MAX_NAME_BYTES}-byte limit (NAME_MAX)"
    return None


class RepeatQuieter:
    """Which refusals reach a log: the first from an origin, then at most one per `interval_s` from it; the one
    let through after a quiet spell says how many were left out. `clock`: monotonic seconds.
    At most `max_origins` origins are remembered (the longest silent forgotten first)."""

    def __init__(self, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 max_origins: int = 256):
        self.interval_s = interval_s
        self.clock = clock
        self.max_origins = max_origins
        self._origins: Dict[str, Tuple[float, int]] = {}      # origin -> (time last let through, left out since)
        self.left_out = 0                                       # in all, since start

    def __call__(self, origin: str, text: str) -> Optional[str]:
        """`text` (from `origin`) to log, with the count of those left out before it; None: leave it out."""
        now = self.clock()
        last = self._origins.get(origin)
        if last is not None and now - last[0] < self.interval_s:
            self._origins[origin] = (last[0], last[1] + 1)
            self.left_out += 1
            return None
        if last is None and len(self._origins) >= self.max_origins:
            oldest = min(self._origins, key=lambda k: self._origins[k][0])
            del self._origins[oldest]
        self._origins[origin] = (now, 0)
        if last is not None and last[1]:
            return f"{text} [{last[1]} more refused from it in the last {now - last[0]:.0f} s, not logged]"
        return text


def origin_of(text: str) -> str:
    """The origin an answer names ("... (from ORIGIN)", as OperatorDesk logs them), else its first words."""
    head, sep, origin = text.rpartition(" (from ")
    if sep and origin.endswith(")"):
        return origin[:-1]
    return " ".join(text.split()[:2])
