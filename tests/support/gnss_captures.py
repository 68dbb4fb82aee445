"""The gpsd receiver captures in tests/data/gpsd as the bytes a receiver sends."""
from __future__ import annotations

from tests.support.paths import DATA as TEST_DATA

DATA = TEST_DATA / "gpsd"     # gpsd's regression captures, BSD-2-Clause


def raw_bytes(name):
    lines = (DATA / name).read_bytes().splitlines(keepends=True)
    return b"".join(line for line in lines if not line.startswith(b"#"))
