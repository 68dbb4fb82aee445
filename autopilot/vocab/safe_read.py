"""Reading a file a user (or a stranger on the command topic) named: only regular files, bounded, never blocking.

`read_user_text(path, max_bytes)` is what every config, mission and calibration loader reads through. A path
to a device (/dev/zero), a FIFO, a socket or a directory is refused before it is opened for reading (a FIFO
is opened non-blocking and checked again on the open descriptor, so a swap between the check and the open
cannot make it block); more than `max_bytes` is refused without reading the rest; text that is not UTF-8 is
refused. Every refusal is a ConfigError naming the file and the reason and quoting none of its content.

`load_yaml_text(text, file)` parses YAML with PyYAML's safe loader, refusing duplicate keys (YAML keeps the
last silently: `mass_kg: 15` then `mass_kg: 1500` would fly a 1500 kg boat), numbers Python will not
convert (a 5000-digit integer), and nesting too deep to parse. Its errors give the line, never the text.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, Dict, Optional, Union

import yaml

from autopilot.vocab.schema import ConfigError

MAX_CONFIG_BYTES = 1 << 20        # 1 MiB: far more than any vessel, boat config or mission file
MAX_FLOW_DEPTH = 64               # nested [ ] / { } levels; a real config uses 3 at most

# Brackets, and the quoted strings and comments whose brackets do not count.
_FLOW_TOKEN = re.compile(r'[\[\]{}]|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|(?:^|(?<=\s))#[^\n]*', re.MULTILINE)


def read_user_text(path: Union[str, "os.PathLike[str]"], max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of a regular file of at most max_bytes; ConfigError(path, "", reason) otherwise."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(path, "", "file not found") from None
    except OSError as e:
        raise ConfigError(path, "", f"cannot read file: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(path, "", "not a regular file (a directory, device, FIFO or socket); give a file")
    if st.st_size > max_bytes:
        raise ConfigError(path, "", f"larger than {max_bytes // 1024} KiB; not a config or mission file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise ConfigError(path, "", f"cannot read file: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(path, "", "not a regular file (a directory, device, FIFO or socket); give a file")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(65536, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as e:
        raise ConfigError(path, "", f"cannot read file: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise ConfigError(path, "", f"larger than {max_bytes // 1024} KiB; not a config or mission file")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(path, "", f"cannot read file: not UTF-8 text (byte {e.start})") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: Dict[Any, int] = {}
        for key_node, _ in node.value:
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except TypeError:
                continue                # an unhashable key: the base class reports it
            if key in seen:
                raise _DuplicateKey(str(key)[:60], seen[key], key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class _DuplicateKey(Exception):
    def __init__(self, key: str, first_line: int, line: int):
        super().__init__(key)
        self.key, self.first_line, self.line = key, first_line, line


def _deepest_flow_line(text: str, limit: int) -> Optional[int]:
    """The line (1-based) where flow collections first nest deeper than `limit`, or None. PyYAML takes seconds
    to reach its recursion limit on 20,000 open brackets; this linear scan refuses them in milliseconds."""
    depth = 0
    for m in _FLOW_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, m.start()) + 1
        elif c in "]}":
            depth = max(0, depth - 1)
    return None


def load_yaml_text(text: str, file: object) -> object:
    """Parse YAML text; ConfigError(file, key-or-"", reason) for anything the safe loader cannot give."""
    line = _deepest_flow_line(text, MAX_FLOW_DEPTH)
    if line is not None:
        raise ConfigError(file, "", f"invalid YAML at line {line}: nested too deeply "
                                    f"(more than {MAX_FLOW_DEPTH} levels of [ ] or {{ }})")
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except _DuplicateKey as e:
        raise ConfigError(file, e.key, f"given twice (lines {e.first_line} and {e.line}); "
                                       f"YAML would silently keep the last") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(file, "", f"invalid YAML{where}: {getattr(e, 'problem', None) or 'cannot parse'}") from None
    except (ValueError, OverflowError):
        raise ConfigError(file, "", "invalid YAML: a value Python cannot convert (a number far too large?)") from None
    except RecursionError:
        raise ConfigError(file, "", "invalid YAML: nested too deeply") from None
