"""Thrust allocation: (surge force, yaw moment) -> thrust per thruster, for 2 or 4 fixed forward-pointing
thrusters in a differential (skid-steer) layout (azimuth pods: autopilot/control/azimuth_allocation.py, which reuses
this split at the pods' angle; make_allocator there picks the right one for a vessel).

Body frame FRD. Thruster i sits at (x_i, y_i) (y_i > 0 to starboard) and pushes along +x with thrust T_i, so
    surge X = sum T_i        yaw N = -sum y_i T_i
(thrust on the starboard side turns the boat to port, a negative moment). The demand is split by the
pseudo-inverse of that 2 x n map (the least-squares split: equal shares on each side), T_i = a_i X + b_i N.

Saturation: each thruster is limited to [-max_reverse_n, max_forward_n] of its thrust map (reverse is
usually weaker than forward), or to [0, max_forward_n] when control.allocation.allow_reverse is false. The
(X, N) pairs the split can deliver form a convex polygon. Within it the demand is delivered exactly; a zero
demand gives exactly zero thrust. Outside it:
- priority "yaw" (default): the yaw moment is kept as far as the thrusters can give it with a surge between 0
  and the demand, and the surge is the one nearest to the demand that allows that moment. Reverse is weaker
  than forward, so the very largest moment needs forward thrust; a boat asked to slow down therefore turns on
  what the thrusters give at zero surge (WAM-V: 2/3 of the largest moment) and slows on its drag. Without
  reversing (allow_reverse false) every moment needs forward thrust, and the moment is kept at any surge.
  Why: docs/design-notes/guidance.md, "Allocation".
- priority "surge": the surge is kept and the yaw moment is the one nearest to the demand that allows it.

The limits come from the maps at construction: when the battery voltage changes enough to matter, build a
new Allocator from new maps (cheap). `set_out(indices)` leaves failed thrusters out: they get no thrust and the
split is made over the others (ValueError when those cannot make a yaw moment).
"""
from __future__ import annotations

import itertools
import math
from typing import Optional, Sequence, Tuple

from autopilot.vocab.config import VesselConfig
from autopilot.vocab.types import PulseCommand, ThrustCommand, Wrench

_EPS = 1e-9


class Allocator:
    """Wrench -> ThrustCommand for one vessel. Attributes for the controllers (what the thrusters can do):
      max_surge_n   largest forward force with no yaw moment [N]
      min_surge_n   most negative (astern) force with no yaw moment [N], 0 without reversing
      max_yaw_nm    largest yaw moment either way at the best surge for it [N*m]
    """

    def __init__(self, vessel: VesselConfig, maps: Sequence):
        thrusters = vessel.thrusters
        if len(maps) != len(thrusters):
            raise ValueError(f"allocation: {len(maps)} thrust maps for {len(thrusters)} thrusters")
        cfg = vessel.control.allocation
        self.maps = tuple(maps)
        self._setup([float(t.y_m) for t in thrusters], cfg.priority, cfg.allow_reverse)

    out: frozenset = frozenset()       # indices of the thrusters left out (set_out)

    def set_out(self, indices) -> None:
        """Leave the thrusters at `indices` (vessel order) out of the split from now on: zero thrust for them,
        the demand shared among the others, the limits (max_surge_n, ...) recomputed. ValueError, leaving the
        split as it was, when an index is unknown or the others cannot make a yaw moment."""
        out = frozenset(int(i) for i in indices)
        if any(not 0 <= i < len(self.maps) for i in out):
            raise ValueError(f"allocation: no thruster {sorted(out)} among {len(self.maps)}")
        before = self.out
        self.out = out
        try:
            self._setup(self._ys, self.priority, self.allow_reverse)
        except ValueError:
            self.out = before
            self._setup(self._ys, self.priority, self.allow_reverse)
            raise

    def _setup(self, ys: Sequence[float], priority: str, allow_reverse: bool) -> None:
        """The split for thrusters pushing along +x at lateral arms ys [m] (or any geometry written that way)."""
        maps = self.maps
        self.priority = priority
        self.allow_reverse = allow_reverse
        used = [i not in self.out for i in range(len(ys))]
        kept = [y for y, u in zip(ys, used) if u]
        n = len(kept)
        sy, syy = sum(kept), sum(y * y for y in kept)
        det = n * syy - sy * sy
        if det <= _EPS:
            raise ValueError("allocation: the thrusters " + ("left " if self.out else "") +
                             "cannot make a yaw moment (all at the same y_m)")
        # Row i of the pseudo-inverse B^T (B B^T)^-1 of B = [[1 ...], [-y_i ...]] over the thrusters used.
        self._a = tuple((syy - y * sy) / det if u else 0.0 for y, u in zip(ys, used))
        self._b = tuple((sy - n * y) / det if u else 0.0 for y, u in zip(ys, used))
        self._ys = tuple(ys)
        self._hi = tuple(float(m.max_forward_n) if u else 0.0 for m, u in zip(maps, used))
        self._lo = tuple((-float(m.max_reverse_n) if self.allow_reverse else 0.0) if u else 0.0
                         for m, u in zip(maps, used))
        self._rows = tuple(zip(self._a, self._b, self._lo, self._hi))
        s_min, s_max, n_min, n_max = self._polygon_extent()
        self._s_range_all = (s_min, s_max)
        self._n_range_all = (n_min, n_max)
        lo0, hi0 = self.surge_range(0.0)
        self.max_surge_n = hi0
        self.min_surge_n = lo0
        self.max_yaw_nm = min(n_max, -n_min)

    def _polygon_extent(self):
        """Bounds of the feasible (X, N) polygon, from the intersections of its edge lines."""
        lines = [(a, b, c) for a, b, lo, hi in self._rows for c in (lo, hi)]
        xs, ns = [], []
        for (a1, b1, c1), (a2, b2, c2) in itertools.combinations(lines, 2):
            d = a1 * b2 - a2 * b1
            if abs(d) < _EPS:
                continue
            s = (c1 * b2 - c2 * b1) / d
            nn = (a1 * c2 - a2 * c1) / d
            if all(lo - 1e-7 <= a * s + b * nn <= hi + 1e-7 for a, b, lo, hi in self._rows):
                xs.append(s)
                ns.append(nn)
        return min(xs), max(xs), min(ns), max(ns)

    def surge_range(self, yaw_nm: float) -> Tuple[float, float]:
        """(lowest, highest) surge force [N] deliverable together with this yaw moment [N*m]."""
        return self._feasible(((a, b, lo, hi) for a, b, lo, hi in self._rows), yaw_nm)

    def yaw_range(self, surge_n: float) -> Tuple[float, float]:
        """(lowest, highest) yaw moment [N*m] deliverable together with this surge force [N]."""
        return self._feasible(((b, a, lo, hi) for a, b, lo, hi in self._rows), surge_n)

    @staticmethod
    def _feasible(rows, other: float) -> Tuple[float, float]:
        """Interval of x with lo <= c x + d other <= hi for every row (c, d, lo, hi)."""
        lo_x, hi_x = -math.inf, math.inf
        for c, d, lo, hi in rows:
            if c > _EPS:
                lo_x = max(lo_x, (lo - d * other) / c)
                hi_x = min(hi_x, (hi - d * other) / c)
            elif c < -_EPS:
                lo_x = max(lo_x, (hi - d * other) / c)
                hi_x = min(hi_x, (lo - d * other) / c)
        return lo_x, hi_x

    def allocate(self, wrench: Wrench, t_s: Optional[float] = None) -> ThrustCommand:
        """Thrust per thruster [N] (vessel config order) delivering `wrench` within the thrusters' limits.

        A non-finite component of the wrench is taken as 0 (no force rather than an undefined one). `t_s` (the
        cycle's time) is unused by fixed thrusters; the azimuth allocator needs it for the pods' slew limit.
        """
        s = wrench.surge_n
        n = wrench.yaw_nm
        if not math.isfinite(s):
            s = 0.0
        if not math.isfinite(n):
            n = 0.0
        if self.priority == "yaw":
            n = _clamp(n, *self._n_range_all)
            lo, hi = self.surge_range(n)
            nearest = max(s, 0.0) if lo > max(s, 0.0) else min(s, 0.0) if hi < min(s, 0.0) else None
            if nearest is not None and self.allow_reverse:     # the moment needs more surge than asked
                n = _clamp(n, *self.yaw_range(nearest))
                lo, hi = self.surge_range(n)
            s = _clamp(s, lo, hi)
        else:
            s = _clamp(s, *self._s_range_all)
            n = _clamp(n, *self.yaw_range(s))
        return ThrustCommand(tuple(_clamp(a * s + b * n, lo, hi) for a, b, lo, hi in self._rows))

    def wrench_of(self, thrust_n: Sequence[float]) -> Wrench:
        """The (surge, yaw) a set of thrusts produces: X = sum T_i, N = -sum y_i T_i."""
        return Wrench(surge_n=float(sum(thrust_n)),
                      yaw_nm=0.0 - float(sum(y * t for y, t in zip(self._ys, thrust_n))))

    def to_pulses(self, command: ThrustCommand) -> PulseCommand:
        """ESC pulse widths [us] for a thrust command, through each thruster's map."""
        return PulseCommand(tuple(m.thrust_to_pulse(t) for m, t in zip(self.maps, command.thrust_n)))


def _clamp(x: float, lo: float, hi: float) -> float:
    if lo > hi:                       # empty by rounding only: the interval is a point
        return 0.5 * (lo + hi)
    return lo if x < lo else hi if x > hi else x
