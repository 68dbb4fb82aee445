"""Read a run directory back: state.csv as numpy columns, events.jsonl as dicts, meta.json.

Made for logs cut short by a crash: a last line without its newline (half written when the process died) and
lines with the wrong number of fields or a cell that is not a number are skipped and counted, never fatal; a
file that is not a regular file reads as empty. run.mcap is read by autopilot.runlog.mcap_log.read_mcap,
estimator_inputs.bin by
autopilot.runlog.estimator_inputs (EstimatorInputsReader, read_estimator_inputs).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from autopilot.runlog.columns import column_kind


@dataclass
class RunData:
    run_dir: Path
    columns: Dict[str, np.ndarray]           # float arrays (NaN for empty cells); 'mode' is an array of str
    events: List[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    skipped_lines: int = 0                   # partial or malformed lines left out (a crash's cut tail)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return len(self.columns.get("time_s", ()))

    @property
    def closed_cleanly(self) -> bool:
        return "closed_utc" in self.meta

    def thruster_count(self) -> int:
        return sum(1 for c in self.columns if c.startswith("thrust_n_"))

    def file(self, role: str) -> Optional[Path]:
        """The copy of the vessel or mission file kept in the run directory (None if there is none)."""
        name = self.meta.get("files", {}).get(role)
        return self.run_dir / name if name else None


def read_run(run_dir) -> RunData:
    """Read a run directory (or a state.csv path; its folder is taken as the run)."""
    p = Path(run_dir)
    run_dir = p.parent if p.is_file() else p
    state = p if p.is_file() else run_dir / "state.csv"
    columns, skipped = read_state_csv(state)
    events, skipped_ev = read_events(run_dir / "events.jsonl")
    meta = {}
    try:
        meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    return RunData(run_dir, columns, events, meta, skipped + skipped_ev)


def read_state_csv(path) -> tuple:
    """(columns, skipped line count) of a state.csv."""
    lines, skipped = _complete_lines(Path(path))
    if not lines:
        return {}, skipped
    rows = list(csv.reader(io.StringIO("".join(lines))))
    header, body = rows[0], rows[1:]
    numeric = [j for j, name in enumerate(header) if column_kind(name) != "text"]
    good, values = [], []
    for r in body:
        if len(r) != len(header):
            continue
        try:
            values.append([float(r[j]) if r[j] else np.nan for j in numeric])
        except ValueError:              # a cell that is not a number: a damaged line, like a cut one
            continue
        good.append(r)
    skipped += len(body) - len(good)
    cols: Dict[str, np.ndarray] = {}
    table = np.array(values, dtype=float).reshape(len(good), len(numeric))
    for k, j in enumerate(numeric):
        cols[header[j]] = table[:, k]
    for j, name in enumerate(header):
        if j not in numeric:
            cols[name] = np.array([r[j] for r in good], dtype=str)
    return {name: cols[name] for name in header}, skipped


def read_events(path) -> tuple:
    """(events, skipped line count) of an events.jsonl."""
    lines, skipped = _complete_lines(Path(path))
    events = []
    for ln in lines:
        try:
            events.append(json.loads(ln))
        except ValueError:
            skipped += 1
    return events, skipped


def _complete_lines(path: Path):
    """The file's complete, non-blank lines and 1 if its last line was cut. A missing file, or one that is not a
    regular file (a FIFO would block the reader), reads as empty."""
    if not path.is_file():
        return [], 0
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], 0
    lines = text.splitlines(keepends=True)
    skipped = 0
    if lines and not lines[-1].endswith("\n"):
        lines.pop()                    # cut mid-line by a crash
        skipped = 1
    return [ln for ln in lines if ln.strip()], skipped
