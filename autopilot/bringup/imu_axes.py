"""The LSM9DS1 axis check a user runs on the bench: `autopilot bench imu --axes-check`.

Five minutes with the board in the hand, before it goes in the hull. It judges the Adafruit library's raw
values (chip axes) against the datasheet's conventions, and the driver's FRD output against what the boat
needs, so a board, a driver or a mounting with a mirrored axis is caught on the bench, not on the water.
Opposite pairs of positions cancel the hard-iron offset of an uncalibrated magnetometer: the east/west pair is
the one that catches a mirrored Y axis (it swaps east and west), which a check with the X arrow north alone
cannot see.

  1. flat, top up: accel (0, 0, +9.8); stood on an edge with the Y arrow pointing straight up: ay = +9.8;
     with the X arrow pointing straight up: ax = +9.8. Seen from above, X away from you, Y must point right.
  2. turning clockwise seen from above: raw gz < 0 and the driver's yaw rate > 0.
  3. flat, X arrow north / south / east / west, and upside down with X north (a phone compass is enough):
     (mx_N - mx_S)/2 < 0, (my_E - my_W)/2 < 0 and, in the northern hemisphere, (mz_up - mz_down)/2 < 0.
  4. the driver's field: north gives FRD x > 0, east gives FRD y < 0 (north is to port when the bow is east).

`run_axes_check(measure, ask, say)` walks the steps: `ask(pose)` waits until the board is in the pose (a prompt
on the bench; the emulator is moved there in tests), `measure(seconds)` returns the mean `Reading` over that
time, `say(line)` prints. Returns True when every judgement passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

Vec = Tuple[float, float, float]

# pose name -> what the user is asked to do
POSES = {
    "flat": "board flat, top up, X arrow pointing north",
    "y_up": "stand the board on an edge so that the Y arrow points straight up",
    "x_up": "stand the board on an edge so that the X arrow points straight up",
    "turning": "board flat, turning it clockwise seen from above, steadily (about a turn in 10 s); keep turning",
    "north": "board flat, top up, X arrow pointing north",
    "south": "board flat, top up, X arrow pointing south",
    "east": "board flat, top up, X arrow pointing east",
    "west": "board flat, top up, X arrow pointing west",
    "upside_down": "board upside down (top facing the ground), X arrow pointing north",
}
G = 9.80665


@dataclass(frozen=True)
class Reading:
    """Mean values over a measurement: raw = the Adafruit library's (chip axes: m/s^2, rad/s, gauss),
    frd = the driver's body-frame output (m/s^2, rad/s, tesla)."""
    raw_accel: Vec
    raw_gyro: Vec
    raw_mag_gauss: Vec
    frd_accel: Vec
    frd_gyro: Vec
    frd_field_t: Vec


def _fmt(v: Sequence[float], digits: int = 3) -> str:
    return "(" + ", ".join(f"{x:+.{digits}f}" for x in v) + ")"


def run_axes_check(measure: Callable[[float], Reading], ask: Callable[[str, str], None],
                   say: Callable[[str], None] = print, seconds: float = 1.0) -> bool:
    readings: Dict[str, Reading] = {}
    for pose, text in POSES.items():
        ask(pose, text)
        readings[pose] = r = measure(2.0 if pose == "turning" else seconds)
        say(f"  {pose:<12} library accel {_fmt(r.raw_accel, 2)} gyro {_fmt(r.raw_gyro)} mag {_fmt(r.raw_mag_gauss)} G"
            f"  | driver FRD accel {_fmt(r.frd_accel, 2)} yaw rate {r.frd_gyro[2]:+.3f} rad/s "
            f"field {_fmt(tuple(v * 1e6 for v in r.frd_field_t), 1)} uT")
    checks: List[Tuple[str, float, bool]] = []

    def judge(what: str, value: float, ok: bool) -> None:
        checks.append((what, value, ok))

    f, y, x = readings["flat"].raw_accel, readings["y_up"].raw_accel, readings["x_up"].raw_accel
    judge("1. flat: library az ~ +9.8 m/s^2", f[2], abs(f[2] - G) < 2.0 and abs(f[0]) < 2.0 and abs(f[1]) < 2.0)
    judge("1. Y arrow up: library ay ~ +9.8 m/s^2", y[1], abs(y[1] - G) < 2.0)
    judge("1. X arrow up: library ax ~ +9.8 m/s^2", x[0], abs(x[0] - G) < 2.0)
    t = readings["turning"]
    judge("2. turning clockwise: library gz < 0 rad/s", t.raw_gyro[2], t.raw_gyro[2] < -0.05)
    judge("2. turning clockwise: driver yaw rate > 0 rad/s", t.frd_gyro[2], t.frd_gyro[2] > 0.05)
    m = {k: readings[k].raw_mag_gauss for k in ("north", "south", "east", "west", "upside_down")}
    judge("3. (mx_N - mx_S)/2 < 0 gauss", (m["north"][0] - m["south"][0]) / 2, m["north"][0] < m["south"][0])
    judge("3. (my_E - my_W)/2 < 0 gauss (a mirrored Y fails here)", (m["east"][1] - m["west"][1]) / 2,
          m["east"][1] < m["west"][1])
    judge("3. (mz_up - mz_down)/2 < 0 gauss (northern hemisphere)", (m["north"][2] - m["upside_down"][2]) / 2,
          m["north"][2] < m["upside_down"][2])
    fn = [a - b for a, b in zip(readings["north"].frd_field_t, readings["south"].frd_field_t)]
    fe = [a - b for a, b in zip(readings["east"].frd_field_t, readings["west"].frd_field_t)]
    judge("4. driver, north minus south: FRD field x > 0", fn[0] * 1e6 / 2, fn[0] > 0)
    judge("4. driver, east minus west: FRD field y < 0", fe[1] * 1e6 / 2, fe[1] < 0)
    for what, value, ok in checks:
        say(f"{'PASS' if ok else 'FAIL'}  {what}: {value:+.3f}")
    passed = all(ok for _, _, ok in checks)
    say("axes check: " + ("PASS: the board, the driver and the mounting agree with the datasheet" if passed else
                          "FAIL: see above; a failed step 3 east/west pair means a mirrored Y axis"))
    return passed
