"""Figures of merit of a simulated run, computed from ground truth the autopilot never sees.

`distance_to_path_m` measures a fault run: the true position's distance to the planned path (launch point and
waypoints), reported per fault as `max_distance_from_path_m` over the fault's window, and for the whole
mission as `path_rms_m` / `path_max_m`: every AUTO cycle past the first waypoint, corners included. A boat that
cuts a corner short (turning before its waypoint) is that far off the path; one that overshoots, likewise.

Cross-track statistics (`xte_rms_m`, `xte_max_m`) use the TRUE position against the leg guidance was flying
at that moment. The approach from the launch point to the first waypoint is not a path and is left out. On
every other leg the transient after the waypoint switch is left out until the leg has *converged*: the first
moment the true cross-track error crosses zero or falls under 0.1 m, or the boat has gone two lookahead
distances along the leg, whichever comes first. Everything after that on the leg counts, turns included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from autopilot.vocab.angles import wrap_pi


@dataclass
class _LegTrack:
    index: int
    converged: bool = False
    last_xte: Optional[float] = None


@dataclass
class SimMetrics:
    lookahead_m: float
    xte_converge_m: float = 0.1
    xte: list = field(default_factory=list)            # (t, xte_true) counted samples
    xte_all: list = field(default_factory=list)        # (t, xte_true, counted) every AUTO sample
    pos_err: list = field(default_factory=list)        # |estimate - truth| per cycle with a valid estimate
    heading_err: list = field(default_factory=list)    # wrapped estimate - truth [rad]
    gps_err: list = field(default_factory=list)        # |raw fix - truth| per valid fix
    path_dist: list = field(default_factory=list)      # true distance to the mission path [m], AUTO past wp 0
    _leg: Optional[_LegTrack] = None

    def add_cycle(self, t_s: float, truth_ne: tuple[float, float], truth_heading: float, nav, leg, leg_index: int,
                  in_auto: bool) -> None:
        if nav.valid:
            self.pos_err.append(math.hypot(nav.north_m - truth_ne[0], nav.east_m - truth_ne[1]))
            self.heading_err.append(wrap_pi(nav.heading_rad - truth_heading))
        if not in_auto or leg is None:
            return
        if self._leg is None or self._leg.index != leg_index:
            self._leg = _LegTrack(leg_index)
        along, y = leg.along_cross_m(*truth_ne)
        lt = self._leg
        if leg_index > 0 and not lt.converged:
            crossed = lt.last_xte is not None and (lt.last_xte > 0) != (y > 0)
            if crossed or abs(y) < self.xte_converge_m or along >= 2.0 * self.lookahead_m:
                lt.converged = True
        lt.last_xte = y
        counted = leg_index > 0 and lt.converged
        self.xte_all.append((t_s, y, counted))
        if counted:
            self.xte.append((t_s, y))

    def add_gps(self, fix_ne: tuple[float, float], truth_ne: tuple[float, float]) -> None:
        self.gps_err.append(math.hypot(fix_ne[0] - truth_ne[0], fix_ne[1] - truth_ne[1]))

    def summary(self) -> dict:
        def rms(a):
            return float(np.sqrt(np.mean(np.square(a)))) if len(a) else float("nan")

        def mae(a):
            return float(np.mean(np.abs(a))) if len(a) else float("nan")

        xte = np.array([x for _, x in self.xte])
        return {
            "xte_rms_m": rms(xte),
            "xte_max_m": float(np.max(np.abs(xte))) if len(xte) else float("nan"),
            "xte_samples": int(len(xte)),
            "path_rms_m": rms(self.path_dist),
            "path_max_m": float(np.max(self.path_dist)) if self.path_dist else float("nan"),
            "pos_err_rms_m": rms(self.pos_err),
            "pos_err_mae_m": mae(self.pos_err),
            "gps_err_rms_m": rms(self.gps_err),
            "gps_err_mae_m": mae(self.gps_err),
            "heading_err_rms_deg": math.degrees(rms(self.heading_err)),
        }


def distance_to_path_m(path_ne, north_m: float, east_m: float) -> float:
    """Distance [m] from a point to a polyline [(n, e), ...] (the launch point and the waypoints in order)."""
    best = math.inf
    for (n0, e0), (n1, e1) in zip(path_ne, path_ne[1:]):
        dn, de = n1 - n0, e1 - e0
        L2 = dn * dn + de * de
        t = 0.0 if L2 == 0.0 else max(0.0, min(1.0, ((north_m - n0) * dn + (east_m - e0) * de) / L2))
        d = math.hypot(n0 + t * dn - north_m, e0 + t * de - east_m)
        if d < best:
            best = d
    if len(path_ne) == 1:
        best = math.hypot(path_ne[0][0] - north_m, path_ne[0][1] - east_m)
    return best
