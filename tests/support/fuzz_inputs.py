"""Seeded mutations of the project's own vessel, mission and QGC files, fed to the loaders and `check`.

`mutate(text, rng)` applies one of: a byte flip, a deleted or duplicated line, a value replaced by a hostile
one (huge numbers, inf/nan, deep nesting, wrong types, unicode, YAML tags and anchors), a number inside a line
(a flow list's element: a trajectory point) replaced by an extreme one, or a truncation.
Kinds: vessel, mission, qgc; trajectory (missions with a `trajectory:` section of every kind: sinusoid,
circle, spiral, points, csv, path; the csv kind's reference file is written beside, intact) and trajcsv (the
csv kind's reference file mutated, its mission intact).
`run_case(kind, text, tmp_dir)` writes it and loads it the way `check` and `sim` do; it returns "ok",
"refused" (a ConfigError, the contract; for trajcsv a ValueError naming the reference file, which check reports
under the mission's trajectory key) or "crash: ..." (anything else: the bug this exists to find).
Used by tests/files/test_fuzz_inputs.py (a few hundred cases in CI) and benchmarks/bench_fuzz_inputs.py (more).
"""
from __future__ import annotations

import os
import random
import re
from pathlib import Path

from tests.support.paths import REPO

SEEDS = {
    "vessel": [REPO / "config/vessels" / n for n in ("foka.yaml", "iacquabot.yaml", "wamv.yaml")],
    "mission": [REPO / "config/missions" / n for n in ("demo.yaml", "hexagon.yaml", "straight_line.yaml",
                                                         "identify.yaml")],
    "trajectory": [REPO / "config/missions" / n for n in ("trajectory_circle.yaml", "trajectory_sinusoid.yaml",
                                                            "trajectory_spiral.yaml", "path_diagonal.yaml")],
}
_TRAJ_HEAD = ("name: fuzz-{kind}\nstart:\n  point: {{lat_deg: 51.1099101, lon_deg: 17.0598572}}\n  heading_deg: 45\n"
              "waypoints:\n  - {{lat_deg: 51.1100000, lon_deg: 17.0600000}}\ncruise_speed_mps: 0.8\n"
              "acceptance_radius_m: 2.0\ntrajectory:\n")
TRAJECTORY_TEXTS = [
    _TRAJ_HEAD.format(kind="points") + "  kind: points\n  points: [[0, 0, 0], [20, 10, 0], [40, 10, 10], "
                                       "[70, 0, 5]]\n  duration_s: 70\n  max_lag_m: 4\n",
    _TRAJ_HEAD.format(kind="csv") + "  kind: csv\n  csv_file: case_reference.csv\n  duration_s: 60\n"
                                    "  control_point_m: 1.5\n  gain_per_s: 0.5\n",
    _TRAJ_HEAD.format(kind="spline") + "  kind: path\n  path_points: [[0, 0], [20, 5], [30, 25], [10, 40]]\n"
                                       "  speed_mps: 0.6\n  path_law: ilos\n  max_lateral_accel_mps2: 0.2\n",
]
REFERENCE_CSV = "t_s,north_m,east_m\n# a bend\n0,0,0\n10,5,0\n20,10,3\n30,12,8\n45,12,15\n60,5,20\n"
# YAML 1.1 reads 1e12 (no dot) as a string: the floats are spelt so PyYAML takes them as numbers
EXTREME_NUMBERS = ["1.0e+12", "-1.0e+12", "1.0e+200", "-1.0e+200", "1.0e+308", "1.0e-320", "1.0e+7", "25000.0",
                   "0", "-0.0", "-1", "4294967296", "9" * 400, ".nan", ".inf", "-.inf", "'7'", "true", "null", "[]",
                   "[1, [2]]"]
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
QGC = ("QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t51.11\t17.06\t0\t1\n1\t0\t3\t16\t0\t2\t0\t0\t51.1105\t17.0605\t0\t1\n"
       "2\t0\t3\t178\t1\t0.8\t-1\t0\t0\t0\t0\t1\n3\t0\t3\t16\t0\t2\t0\t0\t51.1110\t17.0610\t0\t1\n"
       "4\t0\t3\t20\t0\t0\t0\t0\t0\t0\t0\t1\n")
HOSTILE = ["9" * 5000, "1e400", "-1e400", ".inf", ".nan", "inf", "nan", "[" * 50 + "]" * 50, "{a: {b: {c: 1}}}",
           "!!python/object:os.system 'true'", "&a [*a]", "\u202e\u0000x", "''", "~", "true", "-0", "0x7fffffff",
           "[1, 2, 3]", "\"\\x00\"", "2026-11-22", "? complex key", "*undefined", "|\n  block", "1_000", "0o777",
           "/dev/zero", "case_fifo", "."]       # file names: a device, a FIFO (run_case makes it), a directory


def mutate(text: str, rng: random.Random) -> str:
    op = rng.randrange(7)
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
    if op == 6 and lines:                                  # a number inside a line (a list element) made extreme
        spots = [(i, m) for i, line in enumerate(lines) for m in _NUMBER.finditer(line)]
        if spots:
            i, m = rng.choice(spots)
            lines[i] = lines[i][:m.start()] + rng.choice(EXTREME_NUMBERS) + lines[i][m.end():]
            return "".join(lines)
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
    from autopilot.files.check import check_config
    from autopilot.files.mission_files import read_mission_file
    from autopilot.vocab.config import ConfigError, load_vessel
    path = tmp_dir / ("case.yaml" if kind != "qgc" else "case.waypoints")
    if not (tmp_dir / "case_fifo").exists():
        os.mkfifo(tmp_dir / "case_fifo")     # a file name in HOSTILE: opening it for reading would block
    reference = tmp_dir / "case_reference.csv"
    if kind == "trajcsv":                  # the reference file is the case; its mission is the csv seed
        reference.write_text(text, encoding="utf-8", errors="surrogateescape")
        text = TRAJECTORY_TEXTS[1]
    elif kind == "trajectory":
        reference.write_text(REFERENCE_CSV, encoding="utf-8")
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        if kind == "vessel":
            load_vessel(str(path))
            check_config(path)
        elif kind == "trajcsv":         # the mission is always the same: only the reference file differs, and
            from autopilot.guidance.trajectory import make_reference
            from autopilot.vocab.config import load_mission  # check reads it through make_reference (0.6 s saved)
            mission = load_mission(path)
            try:
                make_reference(mission.trajectory, mission.source_file)
            except ValueError as e:     # check reports this as a problem of the mission's trajectory key
                return "refused" if str(e).startswith(str(reference)) else f"crash: unnamed file: {e}"[:300]
        else:
            read_mission_file(path)
            check_config(REPO / "config/vessels/foka.yaml", path)
        return "ok"
    except ConfigError:
        return "refused"
    except Exception as e:                  # noqa: BLE001 -- any other exception is the finding
        return f"crash: {type(e).__name__}: {e}"[:300]


def cases(n: int, seed: int, kinds=None):
    """n (kind, text) pairs, deterministic by seed; `kinds` limits them (default: every kind)."""
    rng = random.Random(seed)
    texts = {kind: [p.read_text() for p in paths] for kind, paths in SEEDS.items()}
    texts["qgc"] = [QGC]
    texts["trajectory"] += TRAJECTORY_TEXTS
    texts["trajcsv"] = [REFERENCE_CSV]
    kinds = sorted(kinds or texts)
    for _ in range(n):
        kind = rng.choice(kinds)
        text = rng.choice(texts[kind])
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        yield kind, text
