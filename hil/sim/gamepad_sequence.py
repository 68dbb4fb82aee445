"""Gamepad sequences: a recorded (or tool-made) operator's sticks as rows of t_s, throttle, steering.

Throttle + forward, steering + to starboard, each in -1..1, times increasing (tests/data/gamepad/*.csv, made by
tools/make_gamepad_sequence.py). Played by hil/ros/joy_standin.py as a joy_node would publish them.
"""
from __future__ import annotations

import csv
import math
from typing import List

import numpy as np


def read_sequence(path) -> np.ndarray:
    """Rows of t_s, throttle, steering from a gamepad sequence CSV ('#' comments and one header line allowed);
    ValueError naming the file, the line and what is wrong."""
    rows: List[List[float]] = []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for n, rec in enumerate(csv.reader(f), start=1):
                if not rec or rec[0].strip().startswith("#"):
                    continue
                try:
                    row = [float(x) for x in rec[:3]]
                except ValueError:
                    if rows:
                        raise ValueError(f"{path}: line {n}: expected t_s,throttle,steering") from None
                    continue                                   # the header
                if len(row) < 3 or not all(math.isfinite(x) for x in row) or max(abs(row[1]), abs(row[2])) > 1.0:
                    raise ValueError(f"{path}: line {n}: expected three finite numbers, throttle and steering "
                                     f"within -1..1")
                if rows and row[0] <= rows[-1][0]:
                    raise ValueError(f"{path}: line {n}: the times must increase")
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"{path}: cannot read ({e})") from None
    if len(rows) < 2:
        raise ValueError(f"{path}: need at least two rows of t_s,throttle,steering")
    return np.array(rows, dtype=float)
