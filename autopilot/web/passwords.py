"""The web page's password, kept on the boat as a salted scrypt hash (hashlib; no plain text on disk).

File format, one line: `scrypt$N$r$p$SALT_HEX$HASH_HEX`. `write_password_file(path, password)` creates it with
mode 600 (refusing a password shorter than MIN_LENGTH); `read_password_file(path)` loads it, raising
PasswordFileError with the file and the reason when it is missing, unreadable, readable by others or malformed;
`PasswordHash.verify(password)` compares in constant time and never raises.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

MIN_LENGTH = 8
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1      # about 16 MiB and 50 ms on a Pi 4 per check
_MAX_PASSWORD_BYTES = 1024                        # a longer "password" is refused before hashing


class PasswordFileError(Exception):
    """The password file cannot be used; the message names the file and says what to do."""


@dataclass(frozen=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    def verify(self, password: str) -> bool:
        """True when `password` is the one hashed; False for anything else (wrong type, too long, wrong)."""
        if not isinstance(password, str):
            return False
        raw = password.encode("utf-8", "replace")
        if len(raw) > _MAX_PASSWORD_BYTES:
            return False
        got = _scrypt(raw, self.salt, self.n, self.r, self.p, len(self.digest))
        return hmac.compare_digest(got, self.digest)

    def line(self) -> str:
        return f"scrypt${self.n}${self.r}${self.p}${self.salt.hex()}${self.digest.hex()}"


def _scrypt(raw: bytes, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(raw, salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=128 * r * n * p + (1 << 20))


def hash_password(password: str) -> PasswordHash:
    """A new salted hash of `password`; ValueError when it is shorter than MIN_LENGTH characters."""
    if len(password) < MIN_LENGTH:
        raise ValueError(f"the web password must have at least {MIN_LENGTH} characters")
    if len(password.encode()) > _MAX_PASSWORD_BYTES:
        raise ValueError(f"the web password must have at most {_MAX_PASSWORD_BYTES} bytes")
    salt = secrets.token_bytes(16)
    return PasswordHash(SCRYPT_N, SCRYPT_R, SCRYPT_P, salt,
                        _scrypt(password.encode(), salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, 32))


def write_password_file(path, password: str) -> PasswordHash:
    """Hash `password` into `path` (mode 600, replaced atomically); ValueError for a short password."""
    h = hash_password(password)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(h.line() + "\n")
    os.replace(tmp, path)
    return h


def read_password_file(path) -> PasswordHash:
    """The hash in `path`; PasswordFileError (naming the file) when it is missing, group/world readable or not
    a line this module wrote."""
    path = Path(path)
    fix = "run `autopilot keys web --config BOAT.yaml` to set the password"
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PasswordFileError(f"{path}: no web password is set; {fix}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PasswordFileError(f"{path}: cannot read the web password file: {e}") from None
    if st.st_mode & 0o077:
        raise PasswordFileError(f"{path}: the web password file is readable by others "
                                f"(mode {st.st_mode & 0o777:o}); chmod 600 it")
    parts = text.strip().split("$")
    try:
        if len(parts) != 6 or parts[0] != "scrypt":
            raise ValueError("not a scrypt line")
        n, r, p = (int(x) for x in parts[1:4])
        salt, digest = bytes.fromhex(parts[4]), bytes.fromhex(parts[5])
        if not (2 <= n <= 2 ** 20 and 1 <= r <= 32 and 1 <= p <= 16 and len(salt) >= 8 and len(digest) >= 16):
            raise ValueError("parameters out of range")
    except ValueError as e:
        raise PasswordFileError(f"{path}: not a web password file ({e}); {fix}") from None
    return PasswordHash(n, r, p, salt, digest)
