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

Size first: a text over MAX_COMMAND_BYTES (autopilot/commands/limits.py) is refused before anything else is
done with it, signed or not, auth on or off, and the refusal names the limit; only a `disarm` is still carried
out (its reason cut to ECHO_CHARS) and `mode HOLD` still taken, so stopping the boat never depends on length.

Replays across a restart. The nonces admitted within the window are remembered in `nonce_file` (beside the
token: the token's folder is the one place on the boat kept private for command secrets), rewritten atomically
(a temporary file, then rename) after each admitted command and read back at start, so an autopilot restarted
within the window still refuses a command it obeyed before. Chosen over a boot id in the envelope because it
keeps the envelope and every signer (`autopilot command`, ground-station bridges) as they are, and because a
boot id needs the station to learn it from the boat before it can sign. The file is bounded: at most
MAX_REMEMBERED_NONCES entries, and when one has to be forgotten early, every command signed at or before its
time is refused from then on (`not_before`), so forgetting never reopens a replay. When the file is missing,
unreadable or damaged at start (the first start, a power cut during the rename), `not_before` is the start
time: a command signed before this autopilot started is refused, which is what it could not tell from a
replay. The file is not fsynced (that would stall the loop on an SD card): it survives a process restart; a
power cut may lose its newest writes, and a Pi takes longer than the window to boot.

Pure logic: no ROS here. `CommandGate.admit(text, sender)` -> `Admission`; `sign(token, origin, command)`.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import stat
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Tuple

from autopilot.commands.limits import ECHO_CHARS, MAX_COMMAND_BYTES, utf8_size

SCHEME = "AUTH1"
MAC_HEX_DIGITS = 32
TOKEN_BYTES = 32
MAX_TOKEN_FILE_BYTES = 4096
ALWAYS_ADMITTED = ("disarm", "mode hold")      # stopping the boat never waits for a token
MAX_REMEMBERED_NONCES = 4096                   # in the nonce file (about 130 kB)
NONCE_FILE_HEADER = "AUTH1-nonces"


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
                 max_age_s: float = 30.0, clock: Callable[[], float] = time.time,
                 nonce_file: Optional[Path] = None, on_problem: Callable[[str], object] = lambda text: None):
        """auth: "token" (signed commands) or "off" (everything admitted). token: None when it could not be read
        (then only the always-admitted commands pass, and refusals say why). nonce_file: where admitted nonces
        outlive a restart (see the module docstring); None: memory only (a restart forgets them).
        on_problem(text): told when the nonce file cannot be written (once) or was not readable at start."""
        if auth not in ("token", "off"):
            raise ValueError(f"auth {auth!r}: use 'token' or 'off'")
        self.auth = auth
        self.token = token
        self.allowed_nodes = tuple(allowed_nodes)
        self.max_age_s = max_age_s
        self.clock = clock
        self.token_problem = ""          # set by the owner when the token could not be read
        self._seen: deque = deque()      # (signed time, nonce) admitted within the window, oldest first
        self._seen_set: set = set()
        self.nonce_file = Path(nonce_file) if nonce_file is not None else None
        self._on_problem = on_problem
        self._write_failed = False
        self.not_before = -float("inf")     # a command signed at or before this [unix s] is refused
        if self.nonce_file is not None:
            self._load_nonces()

    def admit(self, text: str, sender_node: Optional[str] = None) -> Admission:
        """`text` as received; `sender_node`: the publishing ROS node's full name when known. Never raises."""
        via = f"node {sender_node}" if sender_node else "an unknown node"
        size = utf8_size(text, MAX_COMMAND_BYTES)
        if size > MAX_COMMAND_BYTES:
            return self._oversize(text, size, via)
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
        if t <= self.not_before:
            return Admission(None, who, "command refused: signed before this autopilot's memory of used "
                                        "signatures begins (a replay, or sent just before a restart: send it "
                                        "again)")
        self._seen.append((t, nonce))
        self._seen_set.add(nonce)
        while len(self._seen) > MAX_REMEMBERED_NONCES:
            old_t, old = self._seen.popleft()
            self._seen_set.discard(old)
            self.not_before = max(self.not_before, old_t)
        self._save_nonces()
        return Admission(command, who, signed=True)

    def _oversize(self, text: str, size: int, via: str) -> Admission:
        """A text over MAX_COMMAND_BYTES: refused unread, but a stop is still a stop (see the module doc)."""
        limit = f"{size} bytes is over the {MAX_COMMAND_BYTES}-byte limit of a command"
        head = text[:MAX_COMMAND_BYTES].strip()
        if not head.startswith(SCHEME + " "):
            words = head.split(maxsplit=2)
            verb = words[0].lower() if words else ""
            if verb == "disarm":
                rest = head.split(maxsplit=1)[1] if len(words) > 1 else ""
                reason = f"{rest[:ECHO_CHARS]}... ({size} bytes)"
                return Admission(f"disarm {reason}", f"unsigned, from {via} ({limit}: reason cut)")
            if [w.lower() for w in words[:2]] == ["mode", "hold"]:
                return Admission("mode hold", f"unsigned, from {via} ({limit}: the rest left out)")
        return Admission(None, f"a {size}-byte text from {via}", f"command refused: {limit}")

    @staticmethod
    def _open(text: str) -> Optional[Tuple[str, str, str, str, str]]:
        if not text.startswith(SCHEME + " "):
            return None
        parts = text.split(" ", 5)
        if len(parts) != 6:
            return None
        return parts[1], parts[2], parts[3], parts[4], parts[5].strip()

    def _forget(self, now: float) -> None:
        """Nonces signed longer ago than the window: their commands fail the age check anyway. (Admission order
        is nearly signing order; one signed earlier than its predecessor is kept until they all age out.)"""
        while self._seen and now - self._seen[0][0] > self.max_age_s + 1.0:
            _, nonce = self._seen.popleft()
            self._seen_set.discard(nonce)

    def _load_nonces(self) -> None:
        """The nonces admitted before a restart; when they cannot be known, nothing signed before now passes."""
        assert self.nonce_file is not None
        now = self.clock()
        start = math.floor(now * 1000.0) / 1000.0 - 0.001     # signatures carry milliseconds
        try:
            raw = self.nonce_file.read_text(encoding="ascii")
            lines = raw.splitlines()
            if not lines or lines[0] != NONCE_FILE_HEADER:
                raise ValueError("not a nonce file")
            not_before = float(lines[1].split()[1]) if lines[1].startswith("not_before ") else None
            if not_before is None:
                raise ValueError("no not_before line")
            entries = []
            for line in lines[2:]:
                t_s, nonce = line.split(" ")
                entries.append((float(t_s), nonce))
        except FileNotFoundError:
            self.not_before = start
            return
        except (OSError, ValueError, IndexError, UnicodeDecodeError) as e:
            self.not_before = start
            self._on_problem(f"commands: {self.nonce_file}: unreadable ({e}); commands signed before this start "
                             f"are refused")
            return
        self.not_before = not_before
        for t, nonce in sorted(entries)[-MAX_REMEMBERED_NONCES:]:
            if now - t <= self.max_age_s + 1.0 and nonce not in self._seen_set:
                self._seen.append((t, nonce))
                self._seen_set.add(nonce)

    def _save_nonces(self) -> None:
        if self.nonce_file is None:
            return
        body = "".join(f"{t:.3f} {nonce}\n" for t, nonce in self._seen)
        text = f"{NONCE_FILE_HEADER}\nnot_before {self.not_before:.3f}\n{body}"
        tmp = self.nonce_file.with_name(self.nonce_file.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(text)
            os.replace(tmp, self.nonce_file)
        except OSError as e:
            if not self._write_failed:
                self._write_failed = True
                self._on_problem(f"commands: cannot keep used signatures in {self.nonce_file} ({e.strerror}): a "
                                 f"restart within {self.max_age_s:g} s would forget them")


def _always_admitted(command: str) -> bool:
    words = " ".join(command.lower().split())
    return any(words == a or words.startswith(a + " ") for a in ALWAYS_ADMITTED)
