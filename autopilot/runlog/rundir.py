"""Run directories: naming (runs/<UTC timestamp>_<mission>), creation, and rotation of old runs.

Only directories whose names look like ours (`YYYYmmddTHHMMSSZ_...`) are ever counted or deleted, so pointing
the logger at a folder that holds other things is safe.
"""
from __future__ import annotations

import os
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

RUN_NAME_RE = re.compile(r"^\d{8}T\d{6}Z_")


def slug(text: str) -> str:
    """A file-name-safe version of a mission name."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip()).strip("-.")
    return s[:60] or "run"


def run_dir_name(start_utc: datetime, mission_name: str) -> str:
    return f"{start_utc:%Y%m%dT%H%M%SZ}_{slug(mission_name)}"


def create_run_dir(base_dir: Path, start_utc: datetime, mission_name: str) -> Path:
    """Make a fresh run directory (a -2, -3 ... suffix when two runs start in the same second)."""
    base_dir.mkdir(parents=True, exist_ok=True)
    name = run_dir_name(start_utc, mission_name)
    for k in range(1, 1000):
        path = base_dir / (name if k == 1 else f"{name}-{k}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{base_dir / name}: too many runs started in the same second")


def list_runs(base_dir: Path) -> List[Path]:
    """Our run directories in base_dir, oldest first (names sort by start time)."""
    try:
        entries = list(os.scandir(base_dir))
    except FileNotFoundError:
        return []
    return sorted((Path(e.path) for e in entries if e.is_dir(follow_symlinks=False) and RUN_NAME_RE.match(e.name)),
                  key=lambda p: p.name)


RUN_FILES = ("state.csv", "run.mcap", "events.jsonl", "meta.json")     # any one of them makes a run folder


def find_run(path) -> Tuple[Path, str]:
    """The run a user means by `path`: a run folder (or a file in one) as it is, or for a log folder holding
    `<time>_<mission>/` runs (what `--log DIR` and logging.dir fill) its newest run. Returns (path, note), the
    note saying which run was taken ('' when `path` was taken as given); FileNotFoundError (its message says
    what is wrong) for a path that is neither."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: not found (not a run directory, nor a log folder)")
    if not p.is_dir() or any((p / f).exists() for f in RUN_FILES):
        return p, ""
    runs = list_runs(p)
    if not runs:
        raise FileNotFoundError(f"{p}: no run.mcap or state.csv here: neither a run folder nor a log folder "
                                f"holding runs (<time>_<mission>/ folders)")
    newest = runs[-1]
    many = f"the newest of its {len(runs)} runs" if len(runs) > 1 else "its only run"
    return newest, f"{p} is a log folder: using {many}, {newest.name}"


def dir_size_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def rotate_runs(base_dir: Path, keep_runs: Optional[int], max_total_bytes: Optional[int],
                protect: Sequence[Path] = (), reserve_runs: int = 0) -> List[Path]:
    """Delete the oldest runs until at most `keep_runs` remain (counting `reserve_runs` about to be created)
    and all runs together take at most `max_total_bytes`. Runs in `protect` are never deleted but count.
    None disables a limit. Returns the deleted directories."""
    protected = {Path(p).resolve() for p in protect}
    runs = list_runs(base_dir)
    sizes = {r: dir_size_bytes(r) for r in runs}
    total = sum(sizes.values())
    count = len(runs) + reserve_runs
    removed = []
    for r in runs:
        over_count = keep_runs is not None and count > keep_runs
        over_size = max_total_bytes is not None and total > max_total_bytes
        if not (over_count or over_size):
            break
        if r.resolve() in protected:
            continue
        shutil.rmtree(r, ignore_errors=True)
        removed.append(r)
        count -= 1
        total -= sizes[r]
    return removed
