"""The interactive side of `autopilot bench imu --axes-check` and `--orientation-check`: prompts, sampling, and
the scripted emulated board that stands in for a person when there is no hardware (--emulated, and the tests).

`Sampler` reads an Lsm9ds1Driver every PERIOD_S: in real time on a board; on the emulated chip it advances the
chip's clock and, when a pose script is set, moves the emulated boat along it. A pose script maps the seconds
since it was set to a hil.sim.plant.Truth (heading, roll, pitch and body rates), so moves (a tilt, a turn) are
emulated with the rates a gyro sees, not as jumps.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict, Iterator, Optional, Tuple

import numpy as np

PERIOD_S = 0.02
SETTLE_S = 0.2
EMULATED_HEADING_DEG = 30.0


def truth_at(t_s: float, heading_deg: float, roll_deg: float = 0.0, pitch_deg: float = 0.0,
             yaw_rate_dps: float = 0.0, roll_rate_dps: float = 0.0, pitch_rate_dps: float = 0.0):
    """A still-in-the-water true state (the registered "truth" stand-in, hil.sim.plant.Truth from the CLI) with
    the given attitude (deg) and body rates (deg/s)."""
    from autopilot.bringup import stand_ins
    r = math.radians
    return stand_ins.make("truth", t_s, 0.0, 0.0, r(heading_deg), 0.0, 0.0, r(yaw_rate_dps), 0.0, 0.0, (),
                 roll_rad=r(roll_deg), pitch_rad=r(pitch_deg), roll_rate_rps=r(roll_rate_dps),
                 pitch_rate_rps=r(pitch_rate_dps))


def ramp(t: float, start_s: float, end_s: float, angle_deg: float) -> Tuple[float, float]:
    """(angle [deg], rate [deg/s]) of a steady move from 0 to angle_deg between start_s and end_s, held after."""
    if t <= start_s:
        return 0.0, 0.0
    if t >= end_s:
        return angle_deg, 0.0
    rate = angle_deg / (end_s - start_s)
    return rate * (t - start_s), rate


def _bow_up(t: float):
    pitch, rate = ramp(t, 1.0, 3.0, 30.0)
    return truth_at(t, EMULATED_HEADING_DEG, pitch_deg=pitch, pitch_rate_dps=rate)


def _starboard_down(t: float):
    roll, rate = ramp(t, 1.0, 3.0, 25.0)
    return truth_at(t, EMULATED_HEADING_DEG, roll_deg=roll, roll_rate_dps=rate)


def _turn(t: float):
    """Clockwise seen from above at 36 deg/s (a turn in 10 s) from 0.3 s on."""
    turning = t > 0.3
    return truth_at(t, EMULATED_HEADING_DEG + 36.0 * max(0.0, t - 0.3), yaw_rate_dps=36.0 if turning else 0.0)


# --orientation-check --emulated: a person doing the moves as asked (tests replace entries to do them badly)
EMULATED_MOVES: Dict[str, Callable[[float], object]] = {
    "flat": lambda t: truth_at(t, EMULATED_HEADING_DEG),
    "bow_up": _bow_up,
    "starboard_down": _starboard_down,
    "turn": _turn,
}

# --axes-check --emulated: (heading deg, roll deg, pitch deg, yaw rate rad/s), held still
EMULATED_POSES = {"flat": (0, 0, 0, 0), "y_up": (0, -90, 0, 0), "x_up": (0, 0, 90, 0), "turning": (0, 0, 0, 0.6),
                  "north": (0, 0, 0, 0), "south": (180, 0, 0, 0), "east": (90, 0, 0, 0), "west": (-90, 0, 0, 0),
                  "upside_down": (0, 180, 0, 0)}


class Sampler:
    """Fresh driver samples for a given time, on a board (real time) or the emulated chip (its own clock)."""

    def __init__(self, driver, emulator=None, clock: Callable[[], float] = time.monotonic):
        self.driver, self.emulator, self.clock = driver, emulator, clock
        self.field_t: Optional[Tuple[float, float, float]] = None
        self._script: Optional[Callable[[float], object]] = None
        self._script_t0 = 0.0

    def move_along(self, script: Callable[[float], object]) -> None:
        """Emulated chip only: the boat's truth becomes script(seconds since this call + SETTLE_S), after SETTLE_S
        of reads in the script's opening pose (a person takes that long to press Enter; a chip's output registers
        hold the previous pose until its next conversion)."""
        self._script, self._script_t0 = script, self.emulator.t_s + SETTLE_S
        for _ in self.samples(SETTLE_S):
            pass

    def _pose(self) -> None:
        if self._script is not None:
            self.emulator.update(self.emulator.t_s, self._script(self.emulator.t_s - self._script_t0))

    def samples(self, seconds: float) -> Iterator[tuple]:
        """(t_s, ImuSample, newest field [T]) for each fresh accel/gyro sample once a field has been read in this
        call (a field from before it belongs to the previous pose)."""
        self.field_t = None
        end = self.clock() + seconds
        while self.clock() < end:
            if self.emulator is not None:
                self.emulator.advance(PERIOD_S)
                self._pose()
            else:
                time.sleep(PERIOD_S)
            t = self.clock()
            imu, mag = self.driver.read(t)
            if mag is not None and not mag.stale:
                self.field_t = mag.field_t
            if imu is None or imu.stale or self.field_t is None:
                continue
            yield t, imu, self.field_t


def _prompt(sampler: Sampler, text: str) -> None:
    if sampler.emulator is None:
        input(f"bench imu: {text}; then press Enter ")
    else:
        print(f"bench imu (emulated): {text}")


def axes_check(sampler: Sampler) -> bool:
    """`--axes-check`: the nine positions of autopilot/bringup/imu_axes.py. True on PASS."""
    from autopilot.bringup.imu_axes import Reading, run_axes_check

    def ask(pose: str, text: str) -> None:
        if sampler.emulator is not None:
            heading, roll, pitch, rate = EMULATED_POSES[pose]
            sampler.move_along(lambda t: truth_at(t, heading, roll, pitch, yaw_rate_dps=math.degrees(rate)))
        _prompt(sampler, text)

    def measure(seconds: float) -> Reading:
        sums, n = np.zeros((6, 3)), 0
        driver = sampler.driver
        for _, imu, field_t in sampler.samples(seconds):
            if driver.last_raw_mag_gauss is None:
                continue
            (ra, rg), rm = driver.last_raw_accel_gyro, driver.last_raw_mag_gauss
            sums += np.array([ra, rg, rm, imu.accel_mps2, imu.gyro_rps, field_t])
            n += 1
        mean = sums / max(n, 1)
        return Reading(*((float(x), float(y), float(z)) for x, y, z in mean))

    print("bench imu: axis check of the board (the vessel's mounting is ignored: the board is the boat)")
    return run_axes_check(measure, ask)


def orientation_check(sampler: Sampler, mount_rpy_deg, mag_cfg, from_vessel_file: bool = True) -> int:
    """`--orientation-check`: the four moves of autopilot/bringup/imu_orientation.py with the mounting
    `mount_rpy_deg` (the vessel file's, or one given to try). Returns the exit status: 0 PASS, 1 FAIL, 2 refused
    (a move to redo) or abandoned."""
    from autopilot.bringup.imu_orientation import Recording, run_orientation_check

    def ask(move: str, text: str) -> None:
        if sampler.emulator is not None:
            sampler.move_along(EMULATED_MOVES[move])
        _prompt(sampler, f"{move}: {text}")

    def record(seconds: float) -> Recording:
        rows = [(t, imu.accel_mps2, imu.gyro_rps, [v * 1e6 for v in field_t])
                for t, imu, field_t in sampler.samples(seconds)]
        return Recording.of(rows)

    source = "the vessel file's" if from_vessel_file else "the given (--mount, not the vessel file's)"
    print(f"bench imu: orientation check of the IMU in the boat, with {source} mount_rpy_deg {list(mount_rpy_deg)}")
    try:
        verdict = run_orientation_check(record, ask, mount_rpy_deg=mount_rpy_deg,
                                        inclination_deg=mag_cfg.inclination_deg, field_ut=mag_cfg.field_t * 1e6)
    except (EOFError, KeyboardInterrupt):
        print("bench imu: orientation check abandoned (no answer at a prompt)")
        return 2
    if verdict.passed and not from_vessel_file:
        print(f"bench imu: now put mount_rpy_deg: {list(mount_rpy_deg)} in the vessel file (sensors.imu)")
    return verdict.exit_status
