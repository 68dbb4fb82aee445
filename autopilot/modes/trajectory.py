"""AUTO on a trajectory mission: be where the reference says, when it says (autopilot/guidance/trajectory.py).

Phases: `approach` (at cruise speed to a lead-in point `lead_in_m` behind the reference's start point along its
first tangent, unless the boat is already at least half that far behind the start), `run-in` (line of sight onto
the line through the start point along that tangent, at the reference's starting speed for the last lead_in_m,
so the boat arrives moving along the reference: a boat that stops and turns on the spot is pushed off by wind
and current while it turns), then `track`: the reference clock starts when the boat draws level with the start
point, the control-point law gives (u, r) and the velocity controller flies them. When the boat falls behind by
more than max_lag_m the reference clock slows (it follows the path and reports the time lost instead of
chasing). The mode is finished when the reference time reaches the end; the mission's on_complete follows.
Failsafes, the geofence and operator mode changes act as in any AUTO mission.

Figures for reports: `reference_ne` (where the CG should be now, None before tracking), `position_error_m`,
`lag_m` (along the tangent, + behind), `time_behind_s`.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from autopilot.guidance.trajectory import SLOW_REF_MPS, ControlPointTracker, ReferenceClock
from autopilot.modes.base import Mode, ModeOutput
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint, VelocitySetpoint

ARRIVE_M = 1.5               # the start point counts as reached within this distance (or one hull length)
SLOW_WITHIN_M = 8.0


class TrajectoryMode(Mode):
    """`reference`: an autopilot.guidance.trajectory.Reference about `origin_ne` (the mission's first waypoint);
    `tracker`: a ControlPointTracker; `max_lag_m` > 0; `approach_speed_mps`: the way to the start."""

    name = ModeName.AUTO

    def __init__(self, reference, origin_ne, tracker: ControlPointTracker, max_lag_m: float,
                 approach_speed_mps: float, arrive_m: float = ARRIVE_M, lead_in_m: float = 6.0):
        self.reference = reference
        self.origin_ne = origin_ne
        self.tracker = tracker
        self.max_lag_m = max_lag_m
        self.approach_speed_mps = approach_speed_mps
        self.arrive_m = arrive_m
        self.lead_in_m = lead_in_m
        v0 = math.hypot(*reference.state(0.0)[1])
        self.run_in_speed_mps = v0 if v0 > SLOW_REF_MPS else min(0.5, approach_speed_mps)
        self.clock = ReferenceClock(max_lag_m)
        self.phase = "approach"
        self.progress = None
        self.reference_ne: Optional[tuple[float, float]] = None
        self.position_error_m = math.nan
        self.lag_m = math.nan
        self._done = False

    @property
    def time_behind_s(self) -> float:
        return self.clock.time_behind_s

    def _ref(self, tau: float):
        p, v, a = self.reference.state(tau)
        return p + np.asarray(self.origin_ne, dtype=float), v, a

    def enter(self, t_s, nav) -> None:
        if self.phase != "track":
            self.phase = "approach"

    @property
    def finished(self) -> bool:
        return self._done

    def _lead_in(self):
        """The start point, the point lead_in_m behind it along the reference's first tangent, and that tangent."""
        p0, v0, _ = self._ref(0.0)
        speed = math.hypot(v0[0], v0[1])
        t0 = (v0[0] / speed, v0[1] / speed) if speed > SLOW_REF_MPS else (0.0, 0.0)
        d = self.lead_in_m
        return p0, (p0[0] - d * t0[0], p0[1] - d * t0[1]), t0

    def update(self, t_s, nav) -> ModeOutput:
        if self._done:
            return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=nav.heading_rad, speed_mps=0.0))
        if self.phase != "track":
            p0, lead, t0 = self._lead_in()
            dn, de = nav.north_m - p0[0], nav.east_m - p0[1]
            along = dn * t0[0] + de * t0[1]
            if t0 == (0.0, 0.0):                      # a reference that starts at rest: just get there
                dist = math.hypot(dn, de)
                if dist > self.arrive_m:
                    speed = self.approach_speed_mps * min(1.0, max(0.3, dist / SLOW_WITHIN_M))
                    return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=math.atan2(-de, -dn), speed_mps=speed,
                                                                distance_to_waypoint_m=dist))
                along = 0.0
            elif self.phase == "approach" and along <= -0.5 * self.lead_in_m and t0 != (0.0, 0.0):
                self.phase = "run-in"                # far enough behind the start: join the line
            if self.phase == "approach" and along < 0.0:
                ln, le = lead[0] - nav.north_m, lead[1] - nav.east_m
                dist = math.hypot(ln, le)
                if dist > self.arrive_m:
                    speed = self.approach_speed_mps * min(1.0, max(0.3, dist / SLOW_WITHIN_M))
                    return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=math.atan2(le, ln), speed_mps=speed,
                                                                distance_to_waypoint_m=dist))
                self.phase = "run-in"
            if along < 0.0:
                # line-of-sight onto the line through the start point along its tangent (y: + right of it)
                y = -dn * t0[1] + de * t0[0]
                heading = math.atan2(t0[1], t0[0]) - math.atan2(y, self.lead_in_m / 2.0)
                speed = self.approach_speed_mps if along < -self.lead_in_m else self.run_in_speed_mps
                return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=heading, speed_mps=speed, xte_m=y,
                                                            distance_to_waypoint_m=-along))
            self.phase = "track"
            self.progress = f"trajectory {self.reference.name}: at the start point, tracking"
            self.clock = ReferenceClock(self.max_lag_m)
            self.tracker.reset()
        p, v, a = self._ref(self.clock.tau_s)
        speed = math.hypot(v[0], v[1])
        en, ee = p[0] - nav.north_m, p[1] - nav.east_m
        self.lag_m = (en * v[0] + ee * v[1]) / speed if speed > SLOW_REF_MPS else 0.0
        tau = self.clock.advance(t_s, self.lag_m)
        if tau >= self.reference.duration_s:
            self._done = True
            self.progress = (f"trajectory {self.reference.name} complete: {self.clock.time_behind_s:.1f} s behind "
                             f"the reference clock")
            return self.update(t_s, nav)
        p, v, a = self._ref(tau)
        self.reference_ne = (float(p[0]), float(p[1]))
        self.position_error_m = math.hypot(p[0] - nav.north_m, p[1] - nav.east_m)
        u, r = self.tracker.command(nav.north_m, nav.east_m, nav.heading_rad, p, v, a, t_s=t_s,
                                    hold=self.lag_m > self.max_lag_m)
        return ModeOutput(velocity=VelocitySetpoint(u, r, prefilter=False))


class PathFollowMode(Mode):
    """AUTO on a path mission (paper 000 §5.4): the reference is the point of the path nearest the boat, moving
    along it at the path's speed profile; the same control-point law flies it, from wherever the boat starts
    (no lead-in: converging onto the path is the law's job). Finished when the nearest point is within
    `arrive_m` of the path's end. Figures: `cross_track_m` (+ starboard of the path), `reference_ne`,
    `speed_ref_mps`."""

    name = ModeName.AUTO

    def __init__(self, path, tracker: ControlPointTracker, arrive_m: float = ARRIVE_M, law: str = "control_point",
                 lookahead_m: float = 5.0, sigma: float = 0.0):
        if law not in ("control_point", "los", "ilos"):
            raise ValueError(f"path law must be control_point, los or ilos, got {law!r}")
        self.path = path
        self.tracker = tracker
        self.law, self.lookahead_m, self.sigma = law, lookahead_m, sigma if law == "ilos" else 0.0
        self.y_int = 0.0
        self._t_prev: Optional[float] = None
        self.drift_ne = (0.0, 0.0)     # the estimator's drift over ground [m/s] north, east: the los laws' crab
        self.crab_hull_sway = False    # the crab takes the hull's own sway too (guidance.crab_takes_hull_sway)
        self.arrive_m = arrive_m
        self.phase = "track"
        self.progress = None
        self.reference_ne: Optional[tuple[float, float]] = None
        self.cross_track_m = math.nan
        self.speed_ref_mps = math.nan
        self._s: Optional[float] = None
        self._done = False

    def enter(self, t_s, nav) -> None:
        self._s = None                              # project afresh: the boat may be anywhere
        self.tracker.reset()
        self.y_int, self._t_prev = 0.0, None

    @property
    def finished(self) -> bool:
        return self._done

    def update(self, t_s, nav) -> ModeOutput:
        if self._done:
            return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=nav.heading_rad, speed_mps=0.0))
        i = self.path.project(nav.north_m, nav.east_m, self._s)
        self._s = float(self.path.s[i])
        if self._s >= self.path.length_m - self.arrive_m:
            self._done = True
            self.progress = f"path of {self.path.length_m:.0f} m followed to its end"
            return self.update(t_s, nav)
        p, v, a = self.path.state_at(i)
        self.reference_ne = (float(p[0]), float(p[1]))
        self.cross_track_m = self.path.cross_track_m(i, nav.north_m, nav.east_m)
        self.speed_ref_mps = float(self.path.profile_mps[i])
        if self.law != "control_point":
            return ModeOutput(setpoint=self._los(t_s, nav, i))
        u, r = self.tracker.command(nav.north_m, nav.east_m, nav.heading_rad, p, v, a, t_s=t_s, cross_only=True)
        return ModeOutput(velocity=VelocitySetpoint(u, r, prefilter=False))

    def _los(self, t_s, nav, i: int) -> GuidanceSetpoint:
        """(I)LOS on the path's tangent at the boat's projection (autopilot.guidance.path_following's laws, the leg's
        angle
        replaced by the local tangent), with the crab angle taken off and the path's turn rate U kappa fed
        forward."""
        from autopilot.guidance.path_following import crab_angle_rad
        y, delta = self.cross_track_m, self.lookahead_m
        dt = 0.0 if self._t_prev is None else max(0.0, min(t_s - self._t_prev, 0.5))
        self._t_prev = t_s
        if self.sigma > 0.0 and dt > 0.0:
            self.y_int += dt * delta * y / ((y + self.sigma * self.y_int) ** 2 + delta ** 2)
        psi_d = (float(self.path.heading[i]) + math.atan2(-y - self.sigma * self.y_int, delta)
                 - crab_angle_rad(nav, self.drift_ne, self.crab_hull_sway))
        return GuidanceSetpoint(heading_rad=math.remainder(psi_d, 2 * math.pi), speed_mps=self.speed_ref_mps,
                                xte_m=y, distance_to_waypoint_m=self.path.length_m - float(self.path.s[i]),
                                yaw_rate_ff_rps=self.speed_ref_mps * float(self.path.kappa[i]))
