"""Reading systemd unit files and the files install.sh says it writes, for the service and installer tests."""
from __future__ import annotations

import re


def parse_unit(text: str) -> dict:
    """{section: {key: [values...]}} -- systemd keys may repeat, so every value is kept in order."""
    sections, cur = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            cur = sections.setdefault(m.group(1), {})
            continue
        key, _, value = line.partition("=")
        assert cur is not None and _, f"not a key=value line outside a section: {raw!r}"
        cur.setdefault(key.strip(), []).append(value.strip())
    return sections


def written_file(output: str, path: str) -> str:
    """The content install.sh --dry-run shows for a file it would write."""
    lines = output.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith(f"+ write {path} ")))
    body = []
    for ln in lines[start + 1:]:
        if not ln.startswith("|"):
            break
        body.append(ln[4:])
    return "\n".join(body) + "\n"
