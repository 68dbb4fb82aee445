"""Write the gamepad sequences of tests/data/gamepad/ (t_s, throttle, steering in [-1, 1] at 10 Hz), each made
with a seeded generator and played as MANUAL commands (in process, or as sensor_msgs/Joy by hil/ros/joy_standin.py).

foka_gamepad_90s.csv (seed 13, issue 13; the model-following benchmark): the sticks hold a value for 1.5-6 s and
then move to a new one over 0.3-0.8 s, as a thumb does; throttle mostly forward (0.2-0.9, now and then back to 0
or a short reverse), steering mostly small (|s| < 0.4) with some full turns, both with a little thumb tremor
(std 0.02).

ident_gamepad_fit.csv (seed 21) and ident_gamepad_validate.csv (seed 22), issue 12: what an operator flies to
identify the hull from MANUAL, about 2 minutes each. Surge steps up to three levels (0.25-0.4, 0.55-0.7,
0.9-1.0 held 8-10 s each) and a coast down; then, in an order drawn from the seed: steady turns both ways
(steering 0.7-1.0 held 8-10 s at throttle 0.55-0.8: the hull slides sideways), weaving (steering swept as a
sine of amplitude 0.5-0.8 and period 4-7 s, three cycles, at throttle 0.4-0.7), a square weave (steering
flipped between +-0.5-0.8 every 2.5-4 s, six times, at throttle 0.7) and spins on the spot (full steering each
way for 5 s, throttle 0); a coast at the end. Every move is a 0.3-0.8 s ramp and both sticks carry the same
tremor as above.
Run: python tools/make_gamepad_sequence.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "gamepad"
OUT = DATA / "foka_gamepad_90s.csv"
IDENT = {DATA / "ident_gamepad_fit.csv": 21, DATA / "ident_gamepad_validate.csv": 22}


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


def identification_sequence(seed: int, rate_hz: float = 10.0) -> np.ndarray:
    """An operator's identification drive (see the module docstring): rows t_s, throttle, steering."""
    rng = np.random.default_rng(seed)
    knots = [(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)]        # (t_s, throttle, steering) the thumbs reach at t

    def move(th, st):
        t = knots[-1][0] + rng.uniform(0.3, 0.8)
        knots.append((t, th, st))

    def hold(seconds):
        t, th, st = knots[-1]
        knots.append((t + seconds, th, st))

    def steps():
        for lo, hi in ((0.25, 0.4), (0.55, 0.7), (0.9, 1.0)):
            move(rng.uniform(lo, hi), 0.0)
            hold(rng.uniform(8.0, 10.0))
        move(0.0, 0.0)
        hold(rng.uniform(6.0, 8.0))

    def turns():
        th, st = rng.uniform(0.55, 0.8), rng.uniform(0.7, 1.0)
        for sign in rng.permutation([1.0, -1.0]):
            move(th, sign * st)
            hold(rng.uniform(8.0, 10.0))
        move(th, 0.0)
        hold(2.0)

    def weave():
        th, amp, period = rng.uniform(0.4, 0.7), rng.uniform(0.5, 0.8), rng.uniform(4.0, 7.0)
        move(th, 0.0)
        t0 = knots[-1][0]
        for k in range(1, int(3 * period * 4) + 1):                # a sine drawn in quarter-second strokes
            knots.append((t0 + 0.25 * k, th, amp * np.sin(2 * np.pi * 0.25 * k / period)))
        move(th, 0.0)

    def square():
        amp, every = rng.uniform(0.5, 0.8), rng.uniform(2.5, 4.0)
        sign = rng.choice([1.0, -1.0])
        for _ in range(6):
            move(0.7, sign * amp)
            hold(every)
            sign = -sign
        move(0.7, 0.0)

    def spins():
        for sign in rng.permutation([1.0, -1.0]):
            move(0.0, sign)
            hold(5.0)
            move(0.0, 0.0)
            hold(2.0)

    steps()
    for part in rng.permutation(4):
        (turns, weave, square, spins)[part]()
    move(0.0, 0.0)
    hold(6.0)
    kt, kth, kst = (np.array(c) for c in zip(*knots))
    t = np.arange(0.0, kt[-1], 1.0 / rate_hz)
    throttle = np.interp(t, kt, kth) + rng.normal(0.0, 0.02, len(t))
    steering = np.interp(t, kt, kst) + rng.normal(0.0, 0.02, len(t))
    return np.column_stack([t, np.clip(throttle, -1, 1), np.clip(steering, -1, 1)])


def write(path: Path, rows: np.ndarray, note: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(f"# made by tools/make_gamepad_sequence.py ({note}, 10 Hz); throttle/steering in [-1, 1]\n")
        f.write("t_s,throttle,steering\n")
        for t, th, st in rows:
            f.write(f"{t:.1f},{th:.3f},{st:.3f}\n")
    print(f"wrote {path} ({len(rows)} rows, {rows[-1, 0]:.0f} s)")


def main() -> None:
    write(OUT, sequence(), "seed 13")
    for path, seed in IDENT.items():
        write(path, identification_sequence(seed), f"identification drive, seed {seed}")


if __name__ == "__main__":
    main()
