"""Thrust allocation for azimuth pods: (surge force, yaw moment) -> thrust and angle per pod.

Body frame FRD. Pod i sits at (x_i, y_i) with x_i < 0 (aft of the CG) and pushes with thrust T_i along its
angle delta_i, measured from body +x and positive when the thrust vector points to starboard. Its force is
T_i (cos delta_i, sin delta_i), so
    surge X = sum T_i cos delta_i        yaw N = sum T_i (x_i sin delta_i - y_i cos delta_i)
(a stern pod pointing its thrust to port, delta < 0, pushes the stern to port and turns the bow to starboard,
N > 0). For paper 002's two identical pods at (-LCG, +-B/2) with T_p = T_s = T and equal angles this is its
Eqs. 8 and 10: X = 2 T cos delta, N = -2 LCG T sin delta (the paper prints -LCG T sin delta; the sum of its two
moment arms gives twice that). The side force 2 T sin delta is left to the hull, as in the paper.

The pods turn together (one angle for all). Each cycle:
1. the wanted angle is that of the least-norm force split (the smallest sum of |F_i|^2 giving X and N); it
   shares the yaw moment between steering (arm x_i) and differential thrust (arm y_i). When that split asks
   for no forward force (X <= 0: stopping, astern) the pods are brought straight and steer by differential
   thrust only, so the angle does not flip sides as the surge demand crosses zero.
2. the angle moves toward it at most slew_dps * (t_s - previous t_s) and stays within +-max_deg;
3. at that angle the pods are fixed thrusters with effective arms y_i cos delta - x_i sin delta and surge gain
   cos delta, so the thrusts come from the same split and saturation as autopilot.control.allocation.Allocator (yaw
   priority by default: a demand beyond the limits keeps the yaw moment and gives up surge, pushing no
   harder ahead or astern than asked).
The thrusts are therefore right for the angle the pods are commanded to this cycle, also while they are still
slewing. A zero demand gives zero thrust.

Controller limits: max_surge_n and min_surge_n are those of the pods straight (delta = 0); max_yaw_nm is the
largest moment either way over the pods' angle range at the best surge for it (what step 3 delivers once the
pods have turned).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

from autopilot.control.allocation import Allocator, _clamp
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.types import ThrustCommand, Wrench

_LIMIT_GRID = 91                   # angles sampled over [-max, +max] for the controllers' limits


class AzimuthAllocator(Allocator):
    """Wrench -> ThrustCommand (thrust_n and angle_rad) for a vessel whose thrusters all have `azimuth`.

    Keeps the last commanded angle [rad] (`angle_rad`), starting at 0; `allocate(wrench, t_s)` moves it by at
    most the slew rate since the previous call's t_s (no limit on the first call or when t_s is None).
    """

    def __init__(self, vessel: VesselConfig, maps: Sequence):
        thrusters = vessel.thrusters
        if len(maps) != len(thrusters):
            raise ValueError(f"allocation: {len(maps)} thrust maps for {len(thrusters)} thrusters")
        if not thrusters or any(t.azimuth is None for t in thrusters):
            raise ValueError("allocation: AzimuthAllocator needs every thruster to have an azimuth block")
        cfg = vessel.control.allocation
        self.maps = tuple(maps)
        self._xs = tuple(float(t.x_m) for t in thrusters)
        self._ys0 = tuple(float(t.y_m) for t in thrusters)
        assert thrusters[0].azimuth is not None    # checked above: every thruster has one
        self.max_angle_rad = math.radians(thrusters[0].azimuth.max_deg)
        self.slew_rps = math.radians(thrusters[0].azimuth.slew_dps)
        self._cfg = (cfg.priority, cfg.allow_reverse)
        # Least-norm split: F_x,i = l1 - l2 y_i, F_y,i = l2 x_i, with (l1, l2) from the 2 x 2 normal equations.
        n = len(self._xs)
        sy = sum(self._ys0)
        srr = sum(x * x + y * y for x, y in zip(self._xs, self._ys0))
        self._normal = (n, -sy, -sy, srr)
        self.angle_rad = 0.0
        self._last_t: Optional[float] = None
        self._split_angle: Optional[float] = None
        n_max_best = n_min_best = 0.0
        for k in range(_LIMIT_GRID):
            d = -self.max_angle_rad + 2.0 * self.max_angle_rad * k / (_LIMIT_GRID - 1)
            self._at_angle(d)
            lo, hi = self._n_range_all
            n_max_best, n_min_best = max(n_max_best, hi), min(n_min_best, lo)
        self._at_angle(0.0)
        lo0, hi0 = self.surge_range(0.0)
        self.max_surge_n = hi0
        self.min_surge_n = lo0
        self.max_yaw_nm = min(n_max_best, -n_min_best)

    def _at_angle(self, delta_rad: float) -> None:
        """Set the fixed-thruster split for all pods at delta_rad (surge measured in sum T_i, i.e. X / cos)."""
        if self._split_angle == delta_rad:
            return
        c, s = math.cos(delta_rad), math.sin(delta_rad)
        self._setup([y * c - x * s for x, y in zip(self._xs, self._ys0)], *self._cfg)
        self._split_angle = delta_rad

    def wanted_angle_rad(self, surge_n: float, yaw_nm: float) -> float:
        """The pods' angle [rad] of the least-norm force split for (surge_n, yaw_nm), before limits; 0 when that
        split asks for no forward force."""
        a, b, c, d = self._normal
        det = a * d - b * c
        l1 = (d * surge_n - b * yaw_nm) / det
        l2 = (a * yaw_nm - c * surge_n) / det
        fx = sum(l1 - l2 * y for y in self._ys0)
        fy = sum(l2 * x for x in self._xs)
        if fx <= 0.0:
            return 0.0
        return math.atan2(fy, fx)

    def allocate(self, wrench: Wrench, t_s: Optional[float] = None) -> ThrustCommand:
        """Thrust [N] and angle [rad] per pod (vessel config order) for `wrench`, within thrust, angle and slew
        limits. A non-finite component of the wrench is taken as 0."""
        s = wrench.surge_n if math.isfinite(wrench.surge_n) else 0.0
        n = wrench.yaw_nm if math.isfinite(wrench.yaw_nm) else 0.0
        want = _clamp(self.wanted_angle_rad(s, n), -self.max_angle_rad, self.max_angle_rad)
        if t_s is not None and self._last_t is not None and math.isfinite(t_s):
            step = self.slew_rps * max(0.0, t_s - self._last_t)
            want = _clamp(want, self.angle_rad - step, self.angle_rad + step)
        if t_s is not None and math.isfinite(t_s):
            self._last_t = t_s
        self.angle_rad = want
        self._at_angle(want)
        fixed = super().allocate(Wrench(s / math.cos(want), n))
        return ThrustCommand(fixed.thrust_n, angle_rad=(want,) * len(fixed.thrust_n))

    def wrench_of(self, thrust_n: Sequence[float], angle_rad: Optional[Sequence[float]] = None) -> Wrench:
        """The (surge, yaw) that thrusts [N] at angles [rad] produce (angles None: the current angle)."""
        angles = angle_rad if angle_rad is not None else (self.angle_rad,) * len(thrust_n)
        return wrench_of_pods(self._xs, self._ys0, thrust_n, angles)


def wrench_of_pods(xs: Sequence[float], ys: Sequence[float], thrust_n: Sequence[float],
                   angle_rad: Sequence[float]) -> Wrench:
    """Surge force X = sum T cos a [N] and yaw moment N = sum T (x sin a - y cos a) [N*m] of pods at (x, y) [m]."""
    x_n = sum(t * math.cos(a) for t, a in zip(thrust_n, angle_rad))
    n_nm = sum(t * (x * math.sin(a) - y * math.cos(a)) for x, y, t, a in zip(xs, ys, thrust_n, angle_rad))
    return Wrench(surge_n=float(x_n), yaw_nm=float(n_nm))


def make_allocator(vessel: VesselConfig, maps: Sequence) -> Allocator:
    """The allocator for this vessel: AzimuthAllocator when its thrusters are pods, else the fixed one."""
    if any(t.azimuth is not None for t in vessel.thrusters):
        return AzimuthAllocator(vessel, maps)
    return Allocator(vessel, maps)


def angles_or_zero(command: ThrustCommand) -> Tuple[float, ...]:
    """The command's pod angles, or zeros for fixed thrusters."""
    return command.angle_rad if command.angle_rad is not None else (0.0,) * len(command.thrust_n)
