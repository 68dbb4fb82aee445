"""The guided mounting check a user runs with the IMU in the boat: `autopilot bench imu --orientation-check`.

Four moves, prompted one by one, with the vessel file's mounting (sensors.imu.mount_rpy_deg) applied as the
autopilot applies it:

  flat            level and still (2 s): accel must read (0, 0, -g) in body FRD; gyro ~0.
  bow_up          from level, raise the bow 20-45 deg and hold it: accel gains +x (g sin(pitch)); the gyro
                  integrated over the move is +pitch about +y (bow up is a positive pitch).
  starboard_down  from level, lower the starboard side 20-45 deg and hold it: accel gains -y (-g sin(roll));
                  the gyro integrated over the move is +roll about +x.
  turn            turn clockwise seen from above, level, steadily (>= 40 deg): the gyro reads +r about +z (down),
                  and the Earth's field, seen from the boat, turns the other way (counter-clockwise from above).

From these the check finds, for each sensor, the signed axis permutation C with measured = C @ true (see
autopilot/bringup/signed_axes.py); identity is a PASS.

What each move settles, and what is not checkable:
- Accelerometer: all three axes and their signs (flat gives down; the bow-up and starboard-down tilts, with the
  down component removed, give forward and starboard).
- Gyro: all three axes and their signs from the integrated rate of the two tilts and the turn. The gyro is
  judged on its own, so a gyro that disagrees with the accelerometer (the driver maps both with one matrix) is
  reported as such.
- Magnetometer (uncalibrated: the hard iron of the boat is in the readings): the turn gives the axis the field
  turns about (free of hard iron: only changes of the field are used); the change of the field from level to
  each tilt, which is dominated by the vertical component of the Earth's field turning into the tilted axis,
  gives forward and starboard with their signs (free of hard iron, but needs a field that is not near
  horizontal: |inclination| >= 20 deg); the sign of the down axis (equivalently, whether the magnetometer is
  mirrored) comes from the sign of the vertical field during the turn against the hemisphere of the vessel
  file's inclination_deg. That last judgement is the one a hard iron larger than the local vertical field
  could fool: it is shown with its value. Near the magnetic equator the check refuses to judge it. The turn's
  sense is not a separate test of the magnetometer (any signed permutation keeps it consistent with the tilts);
  it is checked as a sign that the moves were done as asked.
- Moves done the wrong way. One tilt or the turn done the wrong way (bow lowered, port lowered, turned
  counter-clockwise) makes the field's turn disagree with its tilts, which no axis error can do: refused. Bow
  lowered with the turn counter-clockwise makes the gyro disagree with the accelerometer: a FAIL that names the
  gyro. Both tilts done the wrong way is exactly what a board turned 180 deg in yaw reads: it cannot be told
  apart, so a printed yaw of 180 deg more than the file's comes with that warning. No combination of wrong moves
  looks like a mirror. Headings are never needed: no compass, no knowledge of north.

A correction that is a rotation (det +1), shared by all three sensors, is printed as the exact mount_rpy_deg to
put in the vessel file (composed with the present one, and checked by re-applying it). A mirror (det -1), or
sensors that disagree with each other, cannot be fixed by the mounting: the report names the axes.

`run_orientation_check(record, ask, say, ...)` walks the moves: `ask(move, text)` waits until the person is ready
(Enter on the bench; the emulated boat is scripted in tests), `record(seconds)` returns the `Recording` of that
time, `say(line)` prints. `analyse(recordings, ...)` is the pure judgement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from autopilot.bringup.signed_axes import (
    corrected_mount_rpy_deg,
    describe,
    is_signed_permutation,
    signed_axis,
    snap_to_axis,
    wrong_axes,
)

G = 9.80665
FLAT_S = 2.0              # still, level
LEAD_S = 0.5              # still and level before "go" in a tilt move
MOVE_S = 5.5              # after "go": tilt and hold until "done"
HOLD_S = 1.0              # the end of a tilt move that must be held still
TURN_S = 4.0              # after "go": turning clockwise
CHUNK_S = 0.25            # magnetometer means over this long for the turn's field rotation

STILL_GYRO_RPS = 0.05     # |mean rate| and per-axis std while "still"
STILL_ACCEL_STD = 0.5     # m/s^2, per axis
MIN_TILT_DEG, MAX_TILT_DEG = 12.0, 70.0
MIN_TURN_DEG = 40.0
LEVEL_DEG = 15.0          # flat must be this close to an axis (else not level, or an odd mounting)
SAME_LEVEL_DEG = 8.0      # a tilt move must start this close to the flat attitude
OFF_AXIS_DEG = 30.0       # a move's direction must be this close to an axis to be read as one
MIN_INCLINATION_DEG = 20.0

MOVES = {
    "flat": "boat level and still (on its stand or trailer, or in calm water), nobody touching it",
    "bow_up": "start level; at 'go' raise the BOW 20-45 degrees and hold it still until 'done'",
    "starboard_down": "start level; at 'go' lower the STARBOARD side (right, looking forward) 20-45 degrees "
                      "and hold it still until 'done'",
    "turn": "boat level; at 'go' turn it CLOCKWISE seen from above, steadily (about a turn in 10 s), "
            "until 'done'",
}


@dataclass(frozen=True)
class Recording:
    """Samples of one move as the autopilot sees them, in body FRD with the configured mounting applied.

    t_s (N,) increasing seconds; accel_mps2 (N, 3) specific force (level and still: (0, 0, -9.81));
    gyro_rps (N, 3) body rates (clockwise from above: +z); field_ut (N, 3) magnetometer in microtesla as read
    (no calibration)."""
    t_s: np.ndarray
    accel_mps2: np.ndarray
    gyro_rps: np.ndarray
    field_ut: np.ndarray

    @staticmethod
    def of(rows) -> "Recording":
        """From rows (t_s, accel xyz, gyro xyz, field xyz in uT)."""
        a = np.asarray([(r[0], *r[1], *r[2], *r[3]) for r in rows], dtype=float).reshape(-1, 10)
        return Recording(a[:, 0], a[:, 1:4], a[:, 4:7], a[:, 7:10])

    @staticmethod
    def concat(*parts: "Recording") -> "Recording":
        return Recording(*(np.concatenate([getattr(p, f) for p in parts])
                           for f in ("t_s", "accel_mps2", "gyro_rps", "field_ut")))

    def __len__(self) -> int:
        return len(self.t_s)

    def first(self, seconds: float) -> "Recording":
        """The samples of the first `seconds` (t - t[0] <= seconds)."""
        return self._keep(self.t_s - self.t_s[0] <= seconds + 1e-9)

    def last(self, seconds: float) -> "Recording":
        """The samples of the last `seconds` (t[-1] - t <= seconds)."""
        return self._keep(self.t_s[-1] - self.t_s <= seconds + 1e-9)

    def _keep(self, keep) -> "Recording":
        return Recording(self.t_s[keep], self.accel_mps2[keep], self.gyro_rps[keep], self.field_ut[keep])

    def integrated_gyro_rad(self) -> np.ndarray:
        """Trapezoidal integral of the body rate over the recording [rad] (a rotation vector for a one-axis move)."""
        if len(self) < 2:
            return np.zeros(3)
        dt = np.diff(self.t_s)[:, None]
        return (0.5 * (self.gyro_rps[1:] + self.gyro_rps[:-1]) * dt).sum(axis=0)


class Refused(Exception):
    """A move was not done (well enough) to judge; the message says which and what to do."""


@dataclass
class Finding:
    """One sensor's result: `c` the signed permutation with measured = c @ true, `evidence` printed lines."""
    sensor: str
    c: np.ndarray
    evidence: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(np.array_equal(self.c, np.eye(3, dtype=int)))


@dataclass
class Verdict:
    """passed: every sensor reads body FRD. refused: why no judgement was made (then findings may be partial).
    mount_rpy_deg: the value to put in the vessel file when a mounting rotation fixes everything, else None."""
    passed: bool
    refused: Optional[str]
    findings: List[Finding]
    mount_rpy_deg: Optional[Tuple[float, float, float]]
    lines: List[str]

    @property
    def exit_status(self) -> int:
        """0 PASS, 1 FAIL, 2 refused (a move to redo)."""
        return 0 if self.passed else (2 if self.refused else 1)


# ------------------------------------------------------------------------------------------------ the moves
def _mean(v: np.ndarray) -> np.ndarray:
    return v.mean(axis=0)


def _angle_deg(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    c = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def _require_still(rec: Recording, move: str, part: str) -> None:
    if len(rec) < 3:
        raise Refused(f"{move}: too few samples {part} ({len(rec)}): is the IMU answering?")
    g_mean = float(np.linalg.norm(_mean(rec.gyro_rps)))
    g_std = float(rec.gyro_rps.std(axis=0).max())
    a_std = float(rec.accel_mps2.std(axis=0).max())
    if g_mean > STILL_GYRO_RPS or g_std > STILL_GYRO_RPS or a_std > STILL_ACCEL_STD:
        where = f" {part}" if part else ""
        raise Refused(f"{move}: the boat was moving{where} (gyro {g_mean:.3f} rad/s, std {g_std:.3f} rad/s, "
                      f"accel std {a_std:.2f} m/s^2): keep it still and redo the check")


def _axis(v, move: str, what: str) -> np.ndarray:
    if not np.linalg.norm(v) > 0:
        raise Refused(f"{move}: no {what} seen: redo the move")
    axis, off = snap_to_axis(v)
    if off > OFF_AXIS_DEG:
        raise Refused(f"{move}: the {what} {_fmt(v)} is {off:.0f} deg from any axis: do the move about one axis "
                      f"only (or the board sits at an angle that is not a multiple of 90 deg from the vessel "
                      f"file's mounting)")
    return axis


def _fmt(v, digits: int = 2) -> str:
    return "(" + ", ".join(f"{x:+.{digits}f}" for x in v) + ")"


@dataclass
class _Tilt:
    start_accel: np.ndarray
    held_accel: np.ndarray
    tilt_deg: float
    gyro_rad: np.ndarray
    field_change_ut: np.ndarray


def _tilt(rec: Recording, move: str, flat_accel: np.ndarray) -> _Tilt:
    if len(rec) < 3:
        raise Refused(f"{move}: too few samples ({len(rec)}): is the IMU answering?")
    lead, held = rec.first(LEAD_S), rec.last(HOLD_S)
    _require_still(lead, move, "before 'go'")
    if _angle_deg(_mean(lead.accel_mps2), flat_accel) > SAME_LEVEL_DEG:
        raise Refused(f"{move}: the boat was not level before 'go' (it must start as in 'flat'): redo the move")
    _require_still(held, move, "at the end (hold the tilt until 'done')")
    start, end = _mean(lead.accel_mps2), _mean(held.accel_mps2)
    tilt = _angle_deg(start, end)
    if tilt < MIN_TILT_DEG:
        raise Refused(f"{move}: tilted only {tilt:.0f} deg: tilt it 20-45 deg and hold it until 'done'")
    if tilt > MAX_TILT_DEG:
        raise Refused(f"{move}: tilted {tilt:.0f} deg: tilt it 20-45 deg")
    gyro = rec.integrated_gyro_rad()
    turned = math.degrees(float(np.linalg.norm(gyro)))
    if not 0.7 * tilt <= turned <= 1.4 * tilt:
        raise Refused(f"{move}: the gyro turned {turned:.0f} deg while the accelerometer tilted {tilt:.0f} deg: "
                      f"start only at 'go' and hold the tilt until 'done'")
    return _Tilt(start, end, tilt, gyro, _mean(held.field_ut) - _mean(lead.field_ut))


# ------------------------------------------------------------------------------------------------ judgement
def _accel_finding(flat_accel, bow: _Tilt, stbd: _Tilt) -> Finding:
    up = flat_accel / np.linalg.norm(flat_accel)      # level and still, the specific force points up
    z = _axis(-flat_accel, "flat", "accelerometer's down (minus the specific force)")

    def horizontal(a):                                 # what the tilt added, level-frame vertical removed
        return a - np.dot(a, up) * up
    x = _axis(horizontal(bow.held_accel), "bow_up", "accelerometer's change of tilt")
    y = _axis(-horizontal(stbd.held_accel), "starboard_down", "accelerometer's change of tilt")
    c = _columns(x, y, z, "accelerometer")
    return Finding("accelerometer", c, [
        f"flat: accel {_fmt(flat_accel)} m/s^2 -> down reads as {signed_axis(z)}",
        f"bow up {bow.tilt_deg:.0f} deg: accel {_fmt(bow.held_accel)} -> forward reads as {signed_axis(x)}",
        f"starboard down {stbd.tilt_deg:.0f} deg: accel {_fmt(stbd.held_accel)} -> starboard reads as "
        f"{signed_axis(y)}"])


def _gyro_finding(bow: _Tilt, stbd: _Tilt, turn_rad: np.ndarray) -> Finding:
    x = _axis(stbd.gyro_rad, "starboard_down", "gyro's rotation")
    y = _axis(bow.gyro_rad, "bow_up", "gyro's rotation")
    z = _axis(turn_rad, "turn", "gyro's rotation")
    c = _columns(x, y, z, "gyro")
    deg = np.degrees
    return Finding("gyro", c, [
        f"bow up: integrated rate {_fmt(deg(bow.gyro_rad), 1)} deg -> pitch (about starboard) reads as "
        f"{signed_axis(y)}",
        f"starboard down: integrated rate {_fmt(deg(stbd.gyro_rad), 1)} deg -> roll (about forward) reads as "
        f"{signed_axis(x)}",
        f"turn: integrated rate {_fmt(deg(turn_rad), 1)} deg -> yaw (about down) reads as {signed_axis(z)}"])


def _field_rotation(rec: Recording) -> Tuple[np.ndarray, float]:
    """(unit axis the field turned about, signed angle about it [deg]) from chord-to-chord turns of the field's
    chunk means: changes only, so a constant hard iron drops out. The angle is between the first and the last
    chord, so about two chunks' worth (CHUNK_S each) less than the turn."""
    t = rec.t_s - rec.t_s[0]
    chunks = [rec.field_ut[(t >= k * CHUNK_S) & (t < (k + 1) * CHUNK_S)] for k in range(int(t[-1] / CHUNK_S) + 1)]
    means = np.array([c.mean(axis=0) for c in chunks if len(c)])
    d = np.diff(means, axis=0)
    if len(d) < 2:
        raise Refused("turn: too few magnetometer samples: is the magnetometer answering?")
    crosses = np.cross(d[:-1], d[1:])
    total = crosses.sum(axis=0)
    if not np.linalg.norm(total) > 0:
        raise Refused("turn: the field did not change during the turn: is the magnetometer answering?")
    n = total / np.linalg.norm(total)
    angle = np.arctan2(crosses @ n, np.einsum("ij,ij->i", d[:-1], d[1:])).sum()
    return n, math.degrees(float(angle))


def _mag_finding(bow: _Tilt, stbd: _Tilt, turn: Recording, turn_deg: float, inclination_deg: float,
                 field_ut: float) -> Finding:
    if abs(inclination_deg) < MIN_INCLINATION_DEG:
        raise Refused(f"magnetometer: the vessel file's inclination_deg {inclination_deg:g} is near the magnetic "
                      f"equator, where tilting hardly changes the field: this check cannot judge it there")
    n, mag_deg = _field_rotation(turn)
    if mag_deg < 0.5 * turn_deg:
        raise Refused(f"turn: the field turned {mag_deg:.0f} deg while the gyro turned {turn_deg:.0f} deg: a "
                      f"magnetometer not answering, or iron moving with the boat? redo the turn away from iron")
    line = _axis(n, "turn", "axis the field turned about")
    hemi = 1 if inclination_deg > 0 else -1            # sign of the vertical (down) field

    def across(v):                                     # the part of a change not along the turn's axis
        return v - np.dot(v, line) * line
    # the vertical field turns into the tilted axis: bow up puts -Bd on forward, starboard down +Bd on starboard
    x = -hemi * _axis(across(bow.field_change_ut), "bow_up", "magnetometer's change of field")
    y = hemi * _axis(across(stbd.field_change_ut), "starboard_down", "magnetometer's change of field")
    if abs(int(np.dot(x, y))) == 1:
        raise Refused(f"magnetometer: both tilts changed the field along {signed_axis(x)}: redo the moves as asked")
    xy = np.cross(x, y)                                # = det(C) * (where down reads)
    if not np.array_equal(line, -xy):
        raise Refused("turn: the field turned the same way as the boat, against what the tilts show: was the "
                      "turn clockwise seen from above, and the tilts as asked? redo the moves")
    vertical = float(np.dot(_mean(turn.field_ut), xy))  # = det(C) * (vertical field + hard iron)
    expected = field_ut * math.sin(math.radians(abs(inclination_deg)))
    if abs(vertical) < 0.25 * expected:
        raise Refused(f"magnetometer: the vertical field reads only {vertical:+.1f} uT (expected about "
                      f"{hemi * expected:+.1f} uT): a hard iron near the sensor hides it; move iron away, or "
                      f"judge the magnetometer with --axes-check on the bench")
    det = (1 if vertical > 0 else -1) * hemi
    z = det * xy
    c = _columns(x, y, z, "magnetometer")
    return Finding("magnetometer", c, [
        f"bow up: field changed {_fmt(bow.field_change_ut, 1)} uT -> forward reads as {signed_axis(x)}",
        f"starboard down: field changed {_fmt(stbd.field_change_ut, 1)} uT -> starboard reads as {signed_axis(y)}",
        f"turn: the field turned {mag_deg:.0f} deg about {signed_axis(-xy)} (counter-clockwise from above, "
        f"as it must)",
        f"turn: vertical field {det * vertical:+.1f} uT on {signed_axis(z)} (the vessel file's inclination "
        f"{inclination_deg:g} deg: {hemi * expected:+.1f} uT, plus any hard iron) -> down reads as "
        f"{signed_axis(z)}"])


def _columns(x, y, z, sensor: str) -> np.ndarray:
    c = np.column_stack([x, y, z]).astype(int)
    if not is_signed_permutation(c):
        raise Refused(f"{sensor}: two moves gave the same axis ({signed_axis(x)}, {signed_axis(y)}, "
                      f"{signed_axis(z)}): redo the moves as asked")
    return c


def analyse(recordings: Dict[str, Recording], *, mount_rpy_deg=(0.0, 0.0, 0.0), inclination_deg: float = 60.0,
            field_ut: float = 50.0) -> Verdict:
    """Judge the four moves' recordings (keys of MOVES). Never raises for bad data: a move that cannot be
    judged gives a Verdict with `refused` set. mount_rpy_deg is the mounting the recordings were made with;
    inclination_deg (down positive) and field_ut (total field) are the vessel file's sensors.mag values."""
    findings: List[Finding] = []
    try:
        flat = recordings["flat"]
        _require_still(flat, "flat", "")
        flat_accel = _mean(flat.accel_mps2)
        g = float(np.linalg.norm(flat_accel))
        if not 0.85 * G < g < 1.15 * G:
            raise Refused(f"flat: the accelerometer reads {g:.2f} m/s^2, not about {G:.2f}: is it the IMU's range "
                          f"or a faulty chip?")
        _, off = snap_to_axis(flat_accel)
        if off > LEVEL_DEG:
            raise Refused(f"flat: the boat is {off:.0f} deg from level by the accelerometer: level it (or the board "
                          f"sits at an angle that is not a multiple of 90 deg from the vessel file's mounting)")
        bow = _tilt(recordings["bow_up"], "bow_up", flat_accel)
        stbd = _tilt(recordings["starboard_down"], "starboard_down", flat_accel)
        turn = recordings["turn"]
        if len(turn) < 3:
            raise Refused("turn: too few samples: is the IMU answering?")
        turn_rad = turn.integrated_gyro_rad()
        turn_deg = math.degrees(float(np.linalg.norm(turn_rad)))
        if turn_deg < MIN_TURN_DEG:
            raise Refused(f"turn: turned only {turn_deg:.0f} deg: turn at least a quarter turn before 'done'")
        if _angle_deg(_mean(turn.accel_mps2), flat_accel) > LEVEL_DEG:
            raise Refused("turn: the boat was not level during the turn: keep it level")
        findings.append(_accel_finding(flat_accel, bow, stbd))
        findings.append(_gyro_finding(bow, stbd, turn_rad))
        findings.append(_mag_finding(bow, stbd, turn, turn_deg, inclination_deg, field_ut))
    except Refused as e:
        lines = [line for f in findings for line in _finding_lines(f)]
        lines.append(f"orientation check: REFUSED: {e}")
        return Verdict(False, str(e), findings, None, lines)
    return _verdict(findings, mount_rpy_deg)


def _finding_lines(f: Finding) -> List[str]:
    return [f"{'PASS' if f.ok else 'FAIL'}  {f.sensor}"] + [f"      {e}" for e in f.evidence] + \
        ([] if f.ok else [f"      {d}" for d in describe(f.c)])


def _verdict(findings: List[Finding], mount_rpy_deg) -> Verdict:
    lines = [line for f in findings for line in _finding_lines(f)]
    accel, gyro, mag = findings
    if all(f.ok for f in findings):
        lines.append("orientation check: PASS: accelerometer, gyro and magnetometer read body FRD with "
                     f"mount_rpy_deg {list(mount_rpy_deg)}")
        return Verdict(True, None, findings, None, lines)
    mount = None
    shared = np.array_equal(accel.c, gyro.c) and np.array_equal(accel.c, mag.c)
    if not np.array_equal(accel.c, gyro.c):
        lines.append("orientation check: FAIL: the gyro disagrees with the accelerometer (the driver maps both with "
                     "one matrix, so no mounting fixes this): a gyro axis convention error in the driver or chip; "
                     "relative to the accelerometer the gyro's")
        lines += [f"  {d}" for d in describe(accel.c.T @ gyro.c)]
    elif not shared:
        fix = corrected_mount_rpy_deg(accel.c, mount_rpy_deg)
        if not accel.ok:
            lines.append("orientation check: FAIL: accelerometer and gyro are wrong by " +
                         (f"a rotation (mount_rpy_deg {list(fix)} would fix these two)" if fix is not None
                          else "a mirror (no mounting fixes it)") +
                         "; the magnetometer differently, so no mounting fixes all three")
        lines.append("orientation check: FAIL: the magnetometer disagrees with the accelerometer (the mounting is "
                     "shared, so no mounting fixes this): a magnetometer axis convention error in the driver "
                     "(drivers/lsm9ds1.py) or chip; relative to the accelerometer the magnetometer's")
        lines += [f"  {d}" for d in describe(accel.c.T @ mag.c)]
    else:
        mount = corrected_mount_rpy_deg(accel.c, mount_rpy_deg)
        if mount is not None:
            lines.append("orientation check: FAIL: the board is mounted differently from the vessel file's "
                         f"mount_rpy_deg {list(mount_rpy_deg)}. Put this in the vessel file (sensors.imu):")
            lines.append(f"  mount_rpy_deg: [{mount[0]:g}, {mount[1]:g}, {mount[2]:g}]")
            lines.append("  (checked: with it, every reading above is turned to body FRD), then run this check again")
            if np.array_equal(accel.c, np.diag([-1, -1, 1])):
                lines.append("  (a yaw of 180 deg from the file's: unless the board really sits turned round, the "
                             "bow was lowered and the port side lowered instead: redo the moves first)")
        else:
            axes = ", ".join(wrong_axes(accel.c))
            lines.append(f"orientation check: FAIL: a mirror (axes {axes} of body FRD read wrong, "
                         "determinant -1): no mounting rotation fixes it, and no moves done the wrong way read "
                         "like this. It is an axis sign convention error in the driver (drivers/lsm9ds1.py) or "
                         "the chip; --axes-check on the bench, the board in the hand, shows which")
    return Verdict(False, None, findings, mount, lines)


# ------------------------------------------------------------------------------------------------ the walk
def run_orientation_check(record: Callable[[float], Recording], ask: Callable[[str, str], None],
                          say: Callable[[str], None] = print, *, mount_rpy_deg=(0.0, 0.0, 0.0),
                          inclination_deg: float = 60.0, field_ut: float = 50.0) -> Verdict:
    """Prompt the four moves, record them, judge them and print the report. Returns the Verdict."""
    recordings: Dict[str, Recording] = {}
    for move, text in MOVES.items():
        ask(move, text)
        if move == "flat":
            recordings[move] = record(FLAT_S)
        elif move == "turn":
            say("  go: turn clockwise now")
            recordings[move] = record(TURN_S)
            say("  done")
        else:
            lead = record(LEAD_S)
            say("  go: tilt it now and hold it")
            recordings[move] = Recording.concat(lead, record(MOVE_S))
            say("  done: put it back level")
    verdict = analyse(recordings, mount_rpy_deg=mount_rpy_deg, inclination_deg=inclination_deg,
                      field_ut=field_ut)
    for line in verdict.lines:
        say(line)
    return verdict
