"""Checks on a decoded GNSS fix that a driver can make alone, before anything trusts its position.

Input: fixes the epoch assembler already found well formed and self-consistent. Each check below marks a fix
that cannot be true `valid=False` (its position is not used; time and counters stay for diagnostics), names the
check in `refused` and counts it:

- backward: its UTC lies before the last accepted fix's (a corruption of the time or date, a replay).
- skew: its UTC runs ahead of the driver's clock by more than `MAX_TIME_SKEW_S` beyond the most timely accepted
  fix (UTC minus reception time; a late or bunched reading only lowers it).
- frozen: the position repeats the previous ones to the last digit while the receiver reports the boat moving.
- jump: reaching it from the last accepted fix would need more than `max_speed_mps`, after allowing for both
  fixes' position noise (`JUMP_SIGMAS` sigmas of their difference).
- calendar: its date is more than `MAX_CALENDAR_SKEW_DAYS` from the system clock, when that clock is trusted
  (later than `CLOCK_TRUSTED_AFTER`).

Two more checks keep the position and repair the fix:
- hdop: an HDOP below `HDOP_FLOOR`, or below `HDOP_MAX_FALL` of the lowest of the last three, is replaced by
  the larger of those when the fix's `pos_std_m` is computed.
- velocity: a speed over ground that changed from the last kept one faster than `MAX_ACCEL_MPS2` allows (plus
  `SOG_NOISE_MPS`), or a course that turned faster than `MAX_TURN_RATE_DPS` at speed, is dropped (sog and cog
  set to None); the position stays.

`RUN_TO_FOLLOW` (2) backward or jump refusals in a row that agree with each other (time ascending, no jump
between them) are taken as the new truth: the second is accepted. A date far from a trusted clock is refused
however long it lasts (counted in `calendar_fixes`).

Pure logic: no I/O; the calendar is injected (seconds since the Unix epoch) and None disables that check.
Why: docs/design-notes/estimation-and-drivers.md, "GNSS driver".
"""
from __future__ import annotations

import datetime as _dt
import math
from collections import deque
from dataclasses import dataclass, fields, replace
from typing import Callable, List, Optional, Tuple

from autopilot.vocab.geodesy import haversine_m
from autopilot.vocab.types import GpsFix

CLOCK_TRUSTED_AFTER = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)   # before: the Pi's clock is unset
MAX_CALENDAR_SKEW_DAYS = 366.0     # "a year far from the clock"; a stored boat's fake-hwclock lags by months
DEFAULT_MAX_SPEED_MPS = 20.0       # 39 kn: beyond any boat this autopilot drives
MAX_TIME_SKEW_S = 2.0              # UTC may run ahead of the reception clock by this much (receiver latency)
JUMP_SIGMAS = 6.0                  # noise allowance, in sigmas of the difference of two fixes
HDOP_FLOOR = 0.5                   # below any real multi-constellation geometry
HDOP_MAX_FALL = 0.7                # one epoch's HDOP may fall to this share of the previous one
MAX_ACCEL_MPS2 = 2.0               # a small boat's acceleration, generously (a kayak or catamaran: < 1)
SOG_NOISE_MPS = 0.5                # allowance for speed noise between two fixes
MAX_TURN_RATE_DPS = 90.0           # a course change faster than this at speed is not a boat
COURSE_MIN_SOG_MPS = 1.0           # below this, course over ground is noise and is not checked
COURSE_NOISE_DEG = 30.0
FROZEN_RUN = 3                     # identical positions in a row, at speed, before the position counts as frozen
FROZEN_MIN_SOG_MPS = 0.5
RUN_TO_FOLLOW = 2                  # consistent refused fixes in a row before they are taken as the new truth


@dataclass
class PlausibilityCounters:
    backward_fixes: int = 0     # refused: UTC before the last accepted fix's
    skew_fixes: int = 0         # refused: UTC ahead of the last accepted fix's by more than the clock moved
    frozen_fixes: int = 0       # refused: position repeated to the last digit while moving
    jump_fixes: int = 0         # refused: unreachable from the last accepted fix at max_speed_mps
    calendar_fixes: int = 0     # refused: date more than MAX_CALENDAR_SKEW_DAYS from the trusted system clock
    hdop_floored: int = 0       # kept, with pos_std_m for a larger HDOP than the one reported
    velocity_dropped: int = 0   # kept without sog/cog: speed or course changed faster than a boat can
    followed_runs: int = 0      # runs of consistent refused fixes accepted as the receiver's new truth

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def utc_seconds(utc: Optional[str]) -> Optional[float]:
    """Seconds since the Unix epoch of a fix's ISO 8601 UTC ('YYYY-MM-DDThh:mm:ss.sssZ'); None if absent or
    not in that form."""
    if not utc:
        return None
    try:
        return _dt.datetime.fromisoformat(utc.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class FixPlausibility:
    """`check(fix) -> fix`, the same fix or a copy with `valid=False`; see the module docstring."""

    def __init__(self, *, max_speed_mps: float = DEFAULT_MAX_SPEED_MPS,
                 calendar: Optional[Callable[[], float]] = None,
                 max_time_skew_s: Optional[float] = MAX_TIME_SKEW_S):
        """max_speed_mps: the fastest the boat can go over ground [m/s] (> 0).
        calendar: the system clock [s since the Unix epoch] (e.g. time.time), or None: no calendar check.
        max_time_skew_s: see "skew" above; None for a recording replayed faster than real time."""
        if not (math.isfinite(max_speed_mps) and max_speed_mps > 0.0):
            raise ValueError(f"max_speed_mps must be > 0, got {max_speed_mps!r}")
        self.max_speed_mps = max_speed_mps
        self.calendar = calendar
        self.max_time_skew_s = max_time_skew_s
        self.counters = PlausibilityCounters()
        self._accepted: Optional[GpsFix] = None       # the last valid fix let through
        self._refused: List[GpsFix] = []              # the current run of refused, mutually consistent fixes
        self._utc_ahead_s: Optional[float] = None     # max of UTC minus reception time over accepted fixes [s]
        self._frozen_key: Optional[Tuple[float, float]] = None
        self._frozen_run = 0
        self._recent_hdop: deque = deque(maxlen=3)     # the last reported HDOPs
        self._velocity_ref: Optional[GpsFix] = None    # the last fix whose sog/cog were kept

    def check(self, f: GpsFix) -> GpsFix:
        if not f.valid:
            return f
        if self._calendar(f):
            self.counters.calendar_fixes += 1
            return replace(f, valid=False, refused="calendar")
        reason = self._backward(f) or self._skew(f) or self._jump(f)
        if reason:
            if self._follows_run(f):
                self._refused.append(f)
                if len(self._refused) >= RUN_TO_FOLLOW:
                    self.counters.followed_runs += 1
                    return self._accept(f, restart=True)
            else:
                self._refused = [f]
            setattr(self.counters, reason, getattr(self.counters, reason) + 1)
            return replace(f, valid=False, refused=reason.removesuffix("_fixes"))
        return self._accept(f)

    # -- the checks: each returns the counter's name when the fix fails it -----------------------------
    def _calendar(self, f: GpsFix) -> Optional[str]:
        if self.calendar is None:
            return None
        now_s = self.calendar()
        if not (math.isfinite(now_s) and now_s > CLOCK_TRUSTED_AFTER.timestamp()):
            return None
        t = utc_seconds(f.utc)
        if t is not None and abs(t - now_s) > MAX_CALENDAR_SKEW_DAYS * 86400.0:
            return "calendar_fixes"
        return None

    def _backward(self, f: GpsFix) -> Optional[str]:
        last = self._accepted
        if last is None or not f.utc or not last.utc:
            return None
        t, t_last = utc_seconds(f.utc), utc_seconds(last.utc)
        if t is not None and t_last is not None and t < t_last:
            return "backward_fixes"
        return None

    def _skew(self, f: GpsFix) -> Optional[str]:
        t = utc_seconds(f.utc)
        if t is None or self._utc_ahead_s is None or self.max_time_skew_s is None:
            return None
        return "skew_fixes" if (t - f.time_s) - self._utc_ahead_s > self.max_time_skew_s else None

    def _jump(self, f: GpsFix) -> Optional[str]:
        last = self._accepted
        if last is None:
            return None
        return "jump_fixes" if not self._reachable(last, f) else None

    def _reachable(self, a: GpsFix, b: GpsFix) -> bool:
        """Could the boat have gone from fix a to fix b, given the time between them and their noise?"""
        ta, tb = utc_seconds(a.utc), utc_seconds(b.utc)
        dt = tb - ta if ta is not None and tb is not None and tb >= ta else abs(b.time_s - a.time_s)
        noise_m = JUMP_SIGMAS * math.hypot(_finite_std(a.pos_std_m), _finite_std(b.pos_std_m))
        return haversine_m(a.lat_deg, a.lon_deg, b.lat_deg, b.lon_deg) <= self.max_speed_mps * dt + noise_m

    def _follows_run(self, f: GpsFix) -> bool:
        """Does f continue the run of refused fixes (later in time, reachable from the run's last one)?"""
        if not self._refused:
            return False
        prev = self._refused[-1]
        tp, tf = utc_seconds(prev.utc), utc_seconds(f.utc)
        if tp is not None and tf is not None and tf <= tp:
            return False
        return self._reachable(prev, f)

    # -- acceptance -----------------------------------------------------------------------------------
    def _accept(self, f: GpsFix, restart: bool = False) -> GpsFix:
        self._refused = []
        self._accepted = f
        t = utc_seconds(f.utc)
        if t is not None:
            ahead = t - f.time_s
            self._utc_ahead_s = ahead if restart or self._utc_ahead_s is None else max(self._utc_ahead_s, ahead)
        key = (f.lat_deg, f.lon_deg)
        moving = f.sog_mps is not None and f.sog_mps >= FROZEN_MIN_SOG_MPS
        if key == self._frozen_key and moving:
            self._frozen_run += 1
        else:
            self._frozen_key, self._frozen_run = key, 1
        if self._frozen_run >= FROZEN_RUN:
            self.counters.frozen_fixes += 1
            return replace(f, valid=False, refused="frozen")
        return self._velocity(self._hdop(f))

    # -- repairs of an accepted fix ----------------------------------------------------------------------
    def _hdop(self, f: GpsFix) -> GpsFix:
        if not (math.isfinite(f.hdop) and f.hdop > 0):
            return f
        # against the lowest of the last few: one high HDOP (a forged 99.9) must not distrust the next fixes
        floor = max(HDOP_FLOOR, HDOP_MAX_FALL * min(self._recent_hdop)) if self._recent_hdop else HDOP_FLOOR
        self._recent_hdop.append(f.hdop)
        if f.hdop >= floor:
            return f
        self.counters.hdop_floored += 1
        return replace(f, pos_std_m=f.pos_std_m * floor / f.hdop)

    def _velocity(self, f: GpsFix) -> GpsFix:
        if f.sog_mps is None:
            return f
        ref, ok = self._velocity_ref, True
        if ref is not None:
            assert ref.sog_mps is not None              # only a fix with a sog becomes the reference
            ta, tb = utc_seconds(ref.utc), utc_seconds(f.utc)
            dt = tb - ta if ta is not None and tb is not None and tb >= ta else abs(f.time_s - ref.time_s)
            ok = abs(f.sog_mps - ref.sog_mps) <= MAX_ACCEL_MPS2 * dt + SOG_NOISE_MPS and f.sog_mps <= self.max_speed_mps
            if ok and f.cog_rad is not None and ref.cog_rad is not None and \
                    min(f.sog_mps, ref.sog_mps) >= COURSE_MIN_SOG_MPS:
                turn_deg = abs(math.degrees(math.remainder(f.cog_rad - ref.cog_rad, math.tau)))
                ok = turn_deg <= MAX_TURN_RATE_DPS * dt + COURSE_NOISE_DEG
        if ok:
            self._velocity_ref = f
            return f
        self.counters.velocity_dropped += 1
        return replace(f, sog_mps=None, cog_rad=None)


def _finite_std(s: float) -> float:
    return s if math.isfinite(s) and s > 0.0 else 10.0
