"""Seeded mutations of the project's own vessel, mission and QGC files, fed to the loaders and `check`.

`mutate(text, rng)` applies one of: a byte flip, a deleted or duplicated line, a value replaced by a hostile
one (huge numbers, inf/nan, deep nesting, wrong types, unicode, YAML tags and anchors), or a truncation.
`run_case(kind, text, tmp_dir)` writes it and loads it the way `check` and `sim` do; it returns "ok",
"refused" (a ConfigError, the contract) or "crash: ..." (anything else: the bug this exists to find).
Used by tests/test_fuzz_inputs.py (a few hundred cases in CI) and benchmarks/bench_fuzz_inputs.py (more).
"""
from __future__ import annotations

import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEEDS = {
    "vessel": [REPO / "config/vessels" / n for n in ("foka.yaml", "iacquabot.yaml", "wamv.yaml")],
    "mission": [REPO / "config/missions" / n for n in ("demo.yaml", "hexagon.yaml", "straight_line.yaml",
                                                         "identify.yaml")],
}
QGC = ("QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t51.11\t17.06\t0\t1\n1\t0\t3\t16\t0\t2\t0\t0\t51.1105\t17.0605\t0\t1\n"
       "2\t0\t3\t178\t1\t0.8\t-1\t0\t0\t0\t0\t1\n3\t0\t3\t16\t0\t2\t0\t0\t51.1110\t17.0610\t0\t1\n"
       "4\t0\t3\t20\t0\t0\t0\t0\t0\t0\t0\t1\n")
HOSTILE = ["9" * 5000, "1e400", "-1e400", ".inf", ".nan", "inf", "nan", "[" * 50 + "]" * 50, "{a: {b: {c: 1}}}",
           "!!python/object:os.system 'true'", "&a [*a]", "\u202e\u0000x", "''", "~", "true", "-0", "0x7fffffff",
           "[1, 2, 3]", "\"\\x00\"", "2026-11-22", "? complex key", "*undefined", "|\n  block", "1_000", "0o777"]


def mutate(text: str, rng: random.Random) -> str:
    op = rng.randrange(6)
    lines = text.splitlines(keepends=True)
    if op == 0 and text:                                   # flip bytes
        data = bytearray(text.encode("utf-8"))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return data.decode("utf-8", errors="replace")
    if op == 1 and lines:                                  # delete a line
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    if op == 2 and lines:                                  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "".join(lines)
    if op == 3 and lines:                                  # truncate
        return text[:rng.randrange(len(text))]
    # replace a value (after a ':' in YAML, a tab field in QGC) with a hostile one
    i = rng.randrange(len(lines)) if lines else 0
    line = lines[i] if lines else ""
    hostile = rng.choice(HOSTILE)
    if "\t" in line:
        fields = line.rstrip("\n").split("\t")
        fields[rng.randrange(len(fields))] = hostile.replace("\n", " ")
        lines[i] = "\t".join(fields) + "\n"
    elif ":" in line:
        key = line.split(":", 1)[0]
        lines[i] = f"{key}: {hostile}\n"
    else:
        lines.insert(i, hostile + "\n")
    return "".join(lines)


def run_case(kind: str, text: str, tmp_dir: Path) -> str:
    from autopilot.config import ConfigError, load_vessel
    from autopilot.mission_check import check_config
    from autopilot.mission_io import read_mission_file
    path = tmp_dir / ("case.yaml" if kind != "qgc" else "case.waypoints")
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        if kind == "vessel":
            load_vessel(str(path))
            check_config(path)
        else:
            read_mission_file(path)
            check_config(REPO / "config/vessels/foka.yaml", path)
        return "ok"
    except ConfigError:
        return "refused"
    except Exception as e:                  # noqa: BLE001 -- any other exception is the finding
        return f"crash: {type(e).__name__}: {e}"[:300]


def cases(n: int, seed: int):
    """n (kind, text) pairs, deterministic by seed."""
    rng = random.Random(seed)
    texts = {kind: [p.read_text() for p in paths] for kind, paths in SEEDS.items()}
    texts["qgc"] = [QGC]
    kinds = sorted(texts)
    for _ in range(n):
        kind = rng.choice(kinds)
        text = rng.choice(texts[kind])
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        yield kind, text
