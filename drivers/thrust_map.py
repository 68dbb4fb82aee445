"""Thruster maps: ESC pulse width [us] <-> thrust [N] for one forward-mounted thruster at one battery voltage.

Pure math. The only I/O is reading the T200 table shipped in drivers/data/ when a T200 map is first made.
Reverse mounting, trim and slew limiting are the ESC driver's job (drivers/esc/output.py): a map here always
describes a thruster whose pulses above neutral push the boat forward.

Sign: positive thrust pushes the boat forward, negative is reverse thrust.
Dead zone: the closed pulse interval around neutral in which the thruster gives no thrust. A map never
commands a pulse inside it other than the neutral pulse itself.

Thruster types (ThrusterConfig.type):
  t200   Blue Robotics T200, from drivers/data/t200_thrust_n.csv (derived from Blue Robotics' published
         10-20 V performance tables by tools/make_t200_table.py). Between two tabulated voltages the thrust
         at each pulse is interpolated linearly in voltage; below 10 V the 10 V table is used and above 20 V
         the 20 V table (the T200 is rated to 20 V, and no data exists outside that range).
  u5     ApisQueen U5, from the vessel's u5_table (bench table at u5_table.voltage_v). At another battery
         voltage V the table's thrust is scaled by (V / voltage_v)^2: propeller thrust goes with rpm^2 and
         rpm roughly with voltage. An approximation; measure a table at the pack voltage when it matters.
  ideal  linear from the dead-zone edge (0 N) to pulse_max_us (max_forward_n) and pulse_min_us
         (-max_reverse_n), with a dead zone of IDEAL_DEAD_BAND_US either side of neutral (the Gazebo / VRX
         thruster driven in newtons, given an ESC-like pulse interface).
Every type's thrust is multiplied by the thruster's `thrust_scale` (a motor measured to push more or less than
its table). The map's pulse range is the thruster's configured [pulse_min_us, pulse_max_us] intersected with
the table's.
Measured curves are made monotonic outward from the dead zone (running maximum of the thrust magnitude), which
removes the small wiggles of the bench data near full thrust, so that the inverse map is well defined.
"""
from __future__ import annotations

import bisect
import csv
import functools
import math
import re
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

from autopilot.vocab.config import ThrusterConfig, VesselConfig

T200_TABLE_PATH = Path(__file__).resolve().parent / "data" / "t200_thrust_n.csv"
IDEAL_DEAD_BAND_US = 25          # half-width of the ideal thruster's dead zone around neutral [us]
_ZERO_N = 1e-9                   # thrust magnitudes below this count as "no thrust" in a table [N]


class ThrustMap:
    """Pulse width <-> thrust for one forward-mounted thruster at one battery voltage.

    Built from breakpoints (pulse_us strictly increasing, thrust_n; linear between them), which must give
    zero thrust at the neutral pulse. Public attributes (read-only by convention):
      neutral_pulse_us   pulse giving no thrust [us]
      pulse_min_us, pulse_max_us   pulse range the map covers [us]
      dead_zone_us       (low, high): closed interval of zero thrust around neutral [us]
      max_forward_n      thrust at full forward, >= 0 [N]
      max_reverse_n      magnitude of the thrust at full reverse, >= 0 [N]
      voltage_v          battery voltage the map is for (None when not voltage-dependent)
    """

    def __init__(self, pulse_us: Sequence[float], thrust_n: Sequence[float], neutral_pulse_us: int,
                 name: str = "", voltage_v: Optional[float] = None):
        self.name = name
        self.voltage_v = voltage_v
        pulses = [float(p) for p in pulse_us]
        thrusts = [float(t) for t in thrust_n]
        label = f"thrust map {name!r}" if name else "thrust map"
        if len(pulses) != len(thrusts):
            raise ValueError(f"{label}: {len(pulses)} pulse widths but {len(thrusts)} thrust values")
        if len(pulses) < 2:
            raise ValueError(f"{label}: needs at least 2 breakpoints")
        if not all(math.isfinite(v) for v in pulses + thrusts):
            raise ValueError(f"{label}: pulse widths and thrust values must be finite numbers")
        if any(b <= a for a, b in zip(pulses, pulses[1:])):
            raise ValueError(f"{label}: pulse widths must be strictly increasing")
        neutral = int(neutral_pulse_us)
        if not pulses[0] <= neutral <= pulses[-1]:
            raise ValueError(f"{label}: neutral pulse {neutral} us is outside the table's range "
                             f"{pulses[0]:g}-{pulses[-1]:g} us")
        zero = [abs(t) <= _ZERO_N for t in thrusts]
        # The zero-thrust run of breakpoints containing neutral.
        i = bisect.bisect_right(pulses, neutral) - 1
        if pulses[i] == neutral:
            if not zero[i]:
                raise ValueError(f"{label}: thrust at the neutral pulse {neutral} us is "
                                 f"{thrusts[i]:g} N, not 0: neutral must lie in the dead zone")
            lo = hi = i
        else:
            if not (zero[i] and zero[i + 1]):
                raise ValueError(f"{label}: neutral pulse {neutral} us is not inside the table's dead zone")
            lo, hi = i, i + 1
        while lo > 0 and zero[lo - 1]:
            lo -= 1
        while hi < len(pulses) - 1 and zero[hi + 1]:
            hi += 1
        self.neutral_pulse_us = neutral
        self.pulse_min_us = pulses[0]
        self.pulse_max_us = pulses[-1]
        self.dead_zone_us = (pulses[lo], pulses[hi])
        # Each branch: offsets from its dead-zone edge (ascending) and thrust magnitude (non-decreasing).
        self._fwd_off, self._fwd_mag = _branch([p - pulses[hi] for p in pulses[hi:]], thrusts[hi:])
        self._rev_off, self._rev_mag = _branch([pulses[lo] - p for p in reversed(pulses[:lo + 1])],
                                               [-t for t in reversed(thrusts[:lo + 1])])
        self.max_forward_n = self._fwd_mag[-1]
        self.max_reverse_n = self._rev_mag[-1]
        if self.max_forward_n <= 0.0:
            raise ValueError(f"{label}: gives no forward thrust anywhere in its pulse range")
        self._pulse_lo = math.ceil(pulses[0])
        self._pulse_hi = math.floor(pulses[-1])

    def __repr__(self) -> str:
        v = f", {self.voltage_v:g} V" if self.voltage_v is not None else ""
        return (f"ThrustMap({self.name!r}{v}: {self.pulse_min_us:g}-{self.pulse_max_us:g} us, "
                f"dead zone {self.dead_zone_us[0]:g}-{self.dead_zone_us[1]:g} us, "
                f"+{self.max_forward_n:.2f}/-{self.max_reverse_n:.2f} N)")

    def pulse_to_thrust(self, pulse_us: float) -> float:
        """Thrust [N] the thruster gives at this pulse width [us]; 0 inside the dead zone.

        Pulses outside the map's range read as the range's end (the ESC saturates there).
        """
        p = float(pulse_us)
        if not math.isfinite(p):
            raise ValueError(f"pulse_us must be a finite number, got {pulse_us!r}")
        lo, hi = self.dead_zone_us
        if p > hi:
            return _interp(self._fwd_off, self._fwd_mag, p - hi)
        if p < lo:
            return -_interp(self._rev_off, self._rev_mag, lo - p)
        return 0.0

    def thrust_to_pulse(self, thrust_n: float) -> int:
        """Pulse width [us] giving the thrust nearest to thrust_n [N] (negative = reverse).

        Thrust is clamped to [-max_reverse_n, max_forward_n]; 0 N gives the neutral pulse. The result is the
        integer pulse nearest to the exact inverse; when that falls on the dead zone's edge (a thrust smaller
        than half of what the first pulse outside the dead zone gives), the result is neutral, so a pulse
        inside the dead zone other than neutral is never returned. Where the curve is flat (after making it
        monotonic) the pulse closest to neutral is chosen. A non-finite thrust gives neutral (the safe output).
        """
        t = thrust_n
        if t > 0.0:
            off = _inverse(self._fwd_off, self._fwd_mag, min(t, self.max_forward_n))
            pulse = math.floor(self.dead_zone_us[1] + off + 0.5)
            if pulse <= self.dead_zone_us[1]:
                return self.neutral_pulse_us
            return min(pulse, self._pulse_hi)
        if t < 0.0:
            if self.max_reverse_n <= 0.0:
                return self.neutral_pulse_us
            off = _inverse(self._rev_off, self._rev_mag, min(-t, self.max_reverse_n))
            pulse = math.ceil(self.dead_zone_us[0] - off - 0.5)
            if pulse >= self.dead_zone_us[0]:
                return self.neutral_pulse_us
            return max(pulse, self._pulse_lo)
        return self.neutral_pulse_us   # 0, -0 and NaN


def _branch(offsets, thrust):
    """Monotonic branch: running maximum of the thrust magnitude, starting from 0 at the dead-zone edge."""
    mags, m = [], 0.0
    for t in thrust:
        m = max(m, t)
        mags.append(m)
    mags[0] = 0.0
    return offsets, mags


def _interp(xs, ys, x):
    """Linear interpolation in ascending xs, clamped to the ends."""
    if x >= xs[-1]:
        return ys[-1]
    if x <= xs[0]:
        return ys[0]
    i = bisect.bisect_right(xs, x)
    x0, x1 = xs[i - 1], xs[i]
    y0 = ys[i - 1]
    return y0 + (ys[i] - y0) * (x - x0) / (x1 - x0)


def _inverse(xs, ys, y):
    """Smallest x with interp(x) == y, for ys non-decreasing from ys[0] = 0 and 0 < y <= ys[-1]."""
    i = bisect.bisect_left(ys, y)          # ys[i-1] < y <= ys[i]
    y0 = ys[i - 1]
    x0 = xs[i - 1]
    return x0 + (xs[i] - x0) * (y - y0) / (ys[i] - y0)


# ------------------------------------------------------------------------------------------ construction
@functools.lru_cache(maxsize=None)
def load_t200_table(
    path: Path = T200_TABLE_PATH,
) -> Tuple[Tuple[float, ...], Tuple[Tuple[float, Tuple[float, ...]], ...]]:
    """The shipped T200 table: (pulse_us, ((voltage_v, thrust_n per pulse), ...)), voltages ascending."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    header, body = rows[0], rows[1:]
    voltages = []
    for name in header[1:]:
        m = re.fullmatch(r"thrust_n_(\d+(?:\.\d+)?)v", name.strip())
        if not m:
            raise ValueError(f"{path}: unexpected column {name!r} (want thrust_n_<V>v)")
        voltages.append(float(m.group(1)))
    pulses = tuple(float(r[0]) for r in body)
    cols = tuple((v, tuple(float(r[j + 1]) for r in body)) for j, v in enumerate(voltages))
    return pulses, tuple(sorted(cols))


def t200_curve(voltage_v: float) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    """(pulse_us, thrust_n) of the T200 at voltage_v: linear in voltage between the two nearest tables,
    the 10 V table below 10 V and the 20 V table above 20 V."""
    pulses, cols = load_t200_table()
    volts = [v for v, _ in cols]
    if voltage_v <= volts[0]:
        return pulses, cols[0][1]
    if voltage_v >= volts[-1]:
        return pulses, cols[-1][1]
    j = bisect.bisect_right(volts, voltage_v)
    (v0, t0), (v1, t1) = cols[j - 1], cols[j]
    w = (voltage_v - v0) / (v1 - v0)
    return pulses, tuple(a + w * (b - a) for a, b in zip(t0, t1))


def _clip_range(pulses, thrusts, p_min, p_max):
    """Breakpoints restricted to [p_min, p_max] (intersected with the table's own range), with the cut
    ends interpolated."""
    lo, hi = max(p_min, pulses[0]), min(p_max, pulses[-1])
    if lo >= hi:
        raise ValueError(f"pulse range {p_min}-{p_max} us does not overlap the table's "
                         f"{pulses[0]:g}-{pulses[-1]:g} us")

    inner = [(p, t) for p, t in zip(pulses, thrusts) if lo < p < hi]
    pts = [(lo, _interp(pulses, thrusts, lo))] + inner + [(hi, _interp(pulses, thrusts, hi))]
    return [p for p, _ in pts], [t for _, t in pts]


def make_thrust_map(thruster: ThrusterConfig, vessel: VesselConfig, voltage_v: Optional[float] = None) -> ThrustMap:
    """The map of one configured thruster at voltage_v (default: the vessel's battery.voltage_v).

    Raises ValueError naming the thruster when the voltage is not a positive number or its table does not
    fit its configured pulse range and neutral.
    """
    volts = vessel.battery.voltage_v if voltage_v is None else voltage_v
    if not (isinstance(volts, (int, float)) and math.isfinite(volts) and volts > 0):
        raise ValueError(f"thruster {thruster.name!r}: battery voltage must be a positive number, got {volts!r}")
    volts = float(volts)
    pulses: Sequence[float]
    thrusts: Sequence[float]
    try:
        if thruster.type == "t200":
            pulses, thrusts = t200_curve(volts)
        elif thruster.type == "u5":
            table = vessel.u5_table
            if table is None:
                raise ValueError("type u5 needs the vessel's u5_table")
            k = (volts / table.voltage_v) ** 2
            pulses, thrusts = table.pulse_us, [t * k for t in table.thrust_n]
        elif thruster.type == "ideal":
            n = thruster.pulse_neutral_us
            lo = max(n - IDEAL_DEAD_BAND_US, thruster.pulse_min_us)
            hi = min(n + IDEAL_DEAD_BAND_US, thruster.pulse_max_us)
            k = thruster.thrust_scale
            pts: Dict[float, float] = {thruster.pulse_min_us: -thruster.max_reverse_n * k, lo: 0.0, n: 0.0, hi: 0.0,
                                      thruster.pulse_max_us: thruster.max_forward_n * k}
            pulses = sorted(pts)
            return ThrustMap(pulses, [pts[p] for p in pulses], n, name=thruster.name, voltage_v=None)
        else:
            raise ValueError(f"unknown thruster type {thruster.type!r}")
        thrusts = [t * thruster.thrust_scale for t in thrusts]
        pulses, thrusts = _clip_range(list(pulses), list(thrusts), thruster.pulse_min_us, thruster.pulse_max_us)
        return ThrustMap(pulses, thrusts, thruster.pulse_neutral_us, name=thruster.name, voltage_v=volts)
    except ValueError as e:
        msg = str(e)
        prefix = f"thruster {thruster.name!r} ({thruster.type})"
        raise ValueError(msg if msg.startswith(prefix) else f"{prefix}: {msg}") from None


def make_thrust_maps(vessel: VesselConfig, voltage_v: Optional[float] = None) -> Tuple[ThrustMap, ...]:
    """One map per thruster, in the vessel config's order."""
    return tuple(make_thrust_map(t, vessel, voltage_v) for t in vessel.thrusters)


class VoltageFollowingMaps:
    """The vessel's thrust maps at the pack's present voltage: the T200 tables interpolated, the U5 table scaled
    (make_thrust_map), at a low-pass filtered measured voltage.

    `update(t_s, voltage_v)` feeds one measurement [V] at time t_s [s] through a first-order filter of time
    constant `tau_s` (the pack's sag follows the thrust within a cycle, the maps should not: a map that chased
    the sag would feed back through the current it causes); the maps are rebuilt when the filtered voltage is
    `step_v` or more from theirs and at least `min_interval_s` after the last rebuild (at most 1/min_interval_s
    times a second). Returns True when `maps` changed. A voltage of None (not measured), not finite or not above
    zero is ignored: the maps stay as they are. `voltage_v` is the voltage the maps are at [V], `filtered_v` the
    filter's state (None before the first measurement).
    """

    def __init__(self, vessel: VesselConfig, voltage_v: Optional[float] = None, tau_s: float = 2.0,
                 min_interval_s: float = 0.25, step_v: float = 0.05):
        self.vessel = vessel
        self.voltage_v = float(vessel.battery.voltage_v if voltage_v is None else voltage_v)
        self.maps = make_thrust_maps(vessel, self.voltage_v)
        self.tau_s, self.min_interval_s, self.step_v = tau_s, min_interval_s, step_v
        self.filtered_v: Optional[float] = None
        self._t_last: Optional[float] = None
        self._built_at = -math.inf
        self.rebuilds = 0

    def update(self, t_s: float, voltage_v: Optional[float]) -> bool:
        if voltage_v is None or not math.isfinite(voltage_v) or voltage_v <= 0:
            return False
        if self.filtered_v is None or self._t_last is None:
            self.filtered_v = float(voltage_v)
        else:
            dt = max(0.0, t_s - self._t_last)
            a = 1.0 - math.exp(-dt / self.tau_s) if self.tau_s > 0 else 1.0
            self.filtered_v += a * (float(voltage_v) - self.filtered_v)
        self._t_last = t_s
        if abs(self.filtered_v - self.voltage_v) < self.step_v or t_s - self._built_at < self.min_interval_s:
            return False
        self.voltage_v = self.filtered_v
        self.maps = make_thrust_maps(self.vessel, self.voltage_v)
        self._built_at = t_s
        self.rebuilds += 1
        return True
