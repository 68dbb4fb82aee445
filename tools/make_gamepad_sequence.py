"""Write tests/data/gamepad/foka_gamepad_90s.csv: a gamepad sequence (t_s, throttle, steering in [-1, 1]) at
10 Hz, made with a seeded generator, for the model-following benchmark and tests (played as MANUAL commands).

How it is made: the sticks hold a value for 1.5-6 s and then move to a new one over 0.3-0.8 s, as a thumb does;
throttle mostly forward (0.2-0.9, now and then back to 0 or a short reverse), steering mostly small (|s| < 0.4)
with some full turns, both with a little thumb tremor (std 0.02). Seed 13 (issue 13).
Run: python tools/make_gamepad_sequence.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "gamepad" / "foka_gamepad_90s.csv"


def sequence(seed: int = 13, duration_s: float = 90.0, rate_hz: float = 10.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, duration_s, 1.0 / rate_hz)
    knots_t, knots_th, knots_st = [0.0], [0.0], [0.0]
    while knots_t[-1] < duration_s:
        hold, move = rng.uniform(1.5, 6.0), rng.uniform(0.3, 0.8)
        th = rng.choice([rng.uniform(0.2, 0.9), 0.0, rng.uniform(-0.4, -0.1)], p=[0.8, 0.12, 0.08])
        st = rng.uniform(-0.4, 0.4) if rng.random() < 0.75 else rng.choice([-1.0, 1.0]) * rng.uniform(0.6, 1.0)
        knots_t += [knots_t[-1] + hold, knots_t[-1] + hold + move]
        knots_th += [knots_th[-1], th]
        knots_st += [knots_st[-1], st]
    throttle = np.interp(t, knots_t, knots_th) + rng.normal(0.0, 0.02, len(t))
    steering = np.interp(t, knots_t, knots_st) + rng.normal(0.0, 0.02, len(t))
    return np.column_stack([t, np.clip(throttle, -1, 1), np.clip(steering, -1, 1)])


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    rows = sequence()
    with OUT.open("w") as f:
        f.write("# made by tools/make_gamepad_sequence.py (seed 13, 10 Hz); throttle/steering in [-1, 1]\n")
        f.write("t_s,throttle,steering\n")
        for t, th, st in rows:
            f.write(f"{t:.1f},{th:.3f},{st:.3f}\n")
    print(f"wrote {OUT} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
