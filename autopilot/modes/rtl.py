"""RTL: return to the launch point along a straight line-of-sight leg, then hand over to LOITER there.

The leg runs from where the boat is on entry to `home` (the position at arming); the desired heading is
psi_d = chi + atan(-y / lookahead) with y the cross-track error (guidance's LOS law), the speed the mission's
cruise speed, slowing linearly within two lookaheads of home to a third of it. With `crab_compensation` the LOS
angle is the desired course over ground and the crab angle (autopilot.guidance.path_following.crab_angle_rad:
the estimator's drift `drift_ne`, set by the vehicle each cycle, and with `crab_hull_sway` the hull's own sway)
is taken off it, at the speed the boat has been running at since RTL began
(autopilot.guidance.path_following.RunningSurge), not on the dip the turn toward home makes.
`finished` once the boat is within `arrive_m` of home or has passed it along the leg.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from autopilot.guidance.path_following import Leg, RunningSurge, crab_angle_rad
from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint


class RtlMode(Mode):
    name = ModeName.RTL

    def __init__(self, home_fn: Callable[[], Optional[tuple]], speed_mps: float, lookahead_m: float,
                 arrive_m: float, crab_compensation: bool = True):
        self.home_fn = home_fn
        self.crab_compensation = crab_compensation
        self.speed_mps = speed_mps
        self.lookahead_m = lookahead_m
        self.arrive_m = arrive_m
        self.drift_ne = (0.0, 0.0)     # the estimator's drift over ground (its current) [m/s] north, east
        self.crab_hull_sway = False    # the crab takes the hull's own sway too (guidance.crab_takes_hull_sway)
        self.leg: Optional[Leg] = None
        self._arrived = False
        self._running = RunningSurge()

    def enter(self, t_s, nav) -> None:
        home = self.home_fn()
        self._arrived = False
        self._running.reset()
        self.leg = None if home is None else Leg(nav.north_m, nav.east_m, home[0], home[1])

    def update(self, t_s, nav) -> ModeOutput:
        leg = self.leg
        if leg is None:
            self._arrived = True
            return NEUTRAL
        dist = math.hypot(leg.n1 - nav.north_m, leg.e1 - nav.east_m)
        along, y = leg.along_cross_m(nav.north_m, nav.east_m)
        if dist <= self.arrive_m or along >= leg.length_m:
            self._arrived = True
        self._running.update(t_s, nav.surge_mps)
        if leg.length_m > 1e-3:
            psi = leg.path_angle_rad + math.atan2(-y, self.lookahead_m)
            if self.crab_compensation:
                psi -= crab_angle_rad(nav, self.drift_ne, self.crab_hull_sway, self._running.value_mps)
        else:
            psi = math.atan2(leg.e1 - nav.east_m, leg.n1 - nav.north_m)
        zone = 2.0 * self.lookahead_m
        speed = self.speed_mps if dist >= zone else self.speed_mps * (1.0 + 2.0 * dist / zone) / 3.0
        self._running.asked_mps = speed
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=wrap_pi(psi), speed_mps=speed, xte_m=y,
                                                    distance_to_waypoint_m=dist))

    @property
    def finished(self) -> bool:
        return self._arrived
