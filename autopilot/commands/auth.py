"""Who may command the boat: signed commands, an allow-list of senders, and the directories missions load from.

Without it anyone on the ROS domain (or the MAVLink network) can arm and steer the boat. Each command a
ground station or `autopilot command` sends is wrapped in an envelope signed with the boat's shared token:

    AUTH1 <origin> <unix_time_s> <nonce> <mac> <command text>

`mac` is HMAC-SHA256 (hex, 32 digits) under the token of "AUTH1\\n<origin>\\n<time>\\n<nonce>\\n<command>".
The autopilot admits a command when the MAC is right, the time is within `max_age_s` of its own clock (the
boat and the station need a clock within that of each other: NTP or GNSS time) and the nonce was not seen in
that window (a recorded command cannot be replayed). When `allowed_nodes` is not empty, the publishing ROS
node must also be one of them. The token never crosses the network; a sniffer learns one-time MACs only.

Always admitted, signed or not, and logged with their origin: `disarm` and `mode HOLD` (stopping the boat
must never wait for a token). Everything else unsigned is refused with the reason. `auth: off` in the boat
config admits every command, and says so at start-up; it is never the default.

Pure logic: no ROS here. `CommandGate.admit(text, sender)` -> `Admission`; `sign(token, origin, command)`.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Tuple

SCHEME = "AUTH1"
MAC_HEX_DIGITS = 32
TOKEN_BYTES = 32
MAX_TOKEN_FILE_BYTES = 4096
ALWAYS_ADMITTED = ("disarm", "mode hold")      # stopping the boat never waits for a token


class TokenError(ValueError):
    """The token file is missing, unreadable, empty or readable by other users."""


@dataclass(frozen=True)
class Admission:
    command: Optional[str]        # the command to carry out; None: refused
    origin: str                   # who sent it, as far as the autopilot can tell (for the log)
    reason: str = ""              # why it was refused ("" when admitted)
    signed: bool = False


def _mac(token: bytes, origin: str, t_s: str, nonce: str, command: str) -> str:
    msg = f"{SCHEME}\n{origin}\n{t_s}\n{nonce}\n{command}".encode("utf-8")
    return hmac.new(token, msg, hashlib.sha256).hexdigest()[:MAC_HEX_DIGITS]


def sign(token: bytes, origin: str, command: str, now_s: Optional[float] = None) -> str:
    """The envelope for `command` from `origin` (no spaces; e.g. 'alice@laptop'), signed now."""
    origin = "".join(ch if ch.isprintable() and not ch.isspace() else "_" for ch in origin) or "unnamed"
    t_s = f"{time.time() if now_s is None else now_s:.3f}"
    nonce = secrets.token_hex(8)
    return f"{SCHEME} {origin} {t_s} {nonce} {_mac(token, origin, t_s, nonce, command)} {command}"


def read_token(path) -> bytes:
    """The token in `path` (its text, stripped). TokenError if missing, empty, too long, or open to other users
    (group or world readable or writable: a token everyone on the Pi can read authorises nothing)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise TokenError(f"{p}: no command token ({e.strerror}); create one with `autopilot keys token`") from None
    if not stat.S_ISREG(st.st_mode):
        raise TokenError(f"{p}: not a regular file")
    if st.st_mode & 0o077:
        raise TokenError(f"{p}: permissions {stat.S_IMODE(st.st_mode):04o} let other users read or change the "
                         f"command token: chmod 600 {p}")
    if st.st_size > MAX_TOKEN_FILE_BYTES:
        raise TokenError(f"{p}: {st.st_size} bytes is not a token")
    try:
        token = p.read_bytes().strip()
    except OSError as e:
        raise TokenError(f"{p}: cannot read the command token ({e.strerror})") from None
    if len(token) < 16:
        raise TokenError(f"{p}: the command token is empty or shorter than 16 characters")
    return token


def write_new_token(path) -> Path:
    """Create `path` (mode 0600) holding a new random token (64 hex digits); refuses to overwrite one."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(TOKEN_BYTES) + "\n")
    return p


def node_allowed(node: Optional[str], allowed: Sequence[str]) -> bool:
    """Does the publishing node ('/ns/name' or 'name') match an allow-list entry (a full name, or a bare name
    matching in any namespace)?"""
    if not allowed:
        return True
    if not node:
        return False
    bare = node.rsplit("/", 1)[-1]
    return any(a == node or ("/" not in a and a == bare) for a in allowed)


class CommandGate:
    """Admits or refuses command texts; see the module docstring."""

    def __init__(self, *, auth: str, token: Optional[bytes], allowed_nodes: Sequence[str] = (),
                 max_age_s: float = 30.0, clock: Callable[[], float] = time.time):
        """auth: "token" (signed commands) or "off" (everything admitted). token: None when it could not be read
        (then only the always-admitted commands pass, and refusals say why)."""
        if auth not in ("token", "off"):
            raise ValueError(f"auth {auth!r}: use 'token' or 'off'")
        self.auth = auth
        self.token = token
        self.allowed_nodes = tuple(allowed_nodes)
        self.max_age_s = max_age_s
        self.clock = clock
        self.token_problem = ""          # set by the owner when the token could not be read
        self._seen: deque = deque()      # (time, nonce) admitted within max_age_s
        self._seen_set: set = set()

    def admit(self, text: str, sender_node: Optional[str] = None) -> Admission:
        """`text` as received; `sender_node`: the publishing ROS node's full name when known."""
        via = f"node {sender_node}" if sender_node else "an unknown node"
        envelope = self._open(text)
        if envelope is None:                                  # unsigned
            command = text.strip()
            if self.auth == "off":
                return Admission(command, f"unsigned, from {via} (auth off)")
            if _always_admitted(command):
                return Admission(command, f"unsigned, from {via}")
            why = self.token_problem or "commands must be signed with the boat's token (`autopilot command " \
                                        "--config FILE` signs them)"
            return Admission(None, f"unsigned, from {via}", f"unauthenticated command refused: {why}")
        origin, t_s, nonce, mac, command = envelope
        who = f"{origin} via {via}"
        if self.auth == "off":
            return Admission(command, f"{who} (auth off)", signed=True)
        if not node_allowed(sender_node, self.allowed_nodes):
            return Admission(None, who, f"command refused: {via} is not in commands.allowed_nodes")
        if self.token is None:
            return Admission(None, who, f"command refused: {self.token_problem or 'no command token'}")
        try:
            t = float(t_s)
        except ValueError:
            return Admission(None, who, "command refused: malformed signature time")
        now = self.clock()
        if not abs(now - t) <= self.max_age_s:
            return Admission(None, who, f"command refused: signed {now - t:+.0f} s from the boat's clock "
                                        f"(more than {self.max_age_s:g} s: a replay, or a clock to set)")
        if not hmac.compare_digest(mac, _mac(self.token, origin, t_s, nonce, command)):
            return Admission(None, who, "command refused: bad signature (not the boat's token)")
        self._forget(now)
        if nonce in self._seen_set:
            return Admission(None, who, "command refused: replayed (this signature was used already)")
        self._seen.append((now, nonce))
        self._seen_set.add(nonce)
        return Admission(command, who, signed=True)

    @staticmethod
    def _open(text: str) -> Optional[Tuple[str, str, str, str, str]]:
        if not text.startswith(SCHEME + " "):
            return None
        parts = text.split(" ", 5)
        if len(parts) != 6:
            return None
        return parts[1], parts[2], parts[3], parts[4], parts[5].strip()

    def _forget(self, now: float) -> None:
        while self._seen and now - self._seen[0][0] > 2.0 * self.max_age_s:
            _, nonce = self._seen.popleft()
            self._seen_set.discard(nonce)


def _always_admitted(command: str) -> bool:
    words = " ".join(command.lower().split())
    return any(words == a or words.startswith(a + " ") for a in ALWAYS_ADMITTED)
