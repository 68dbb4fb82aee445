"""LOITER: keep station within a radius of a point.

Outside a quiet zone (`quiet_frac` of the radius) the boat heads for the point at a speed that grows with the
distance; inside it, the boat keeps the heading it arrived with (which, after drifting off and coming back,
points into the drift) and applies just the speed that held it there, so it does not dither at the edge.
"""
from __future__ import annotations

import math

from autopilot.angles import wrap_pi
from autopilot.modes.base import Mode, ModeOutput
from autopilot.types import GuidanceSetpoint


class LoiterMode(Mode):
    name = "LOITER"

    def __init__(self, radius_m: float, max_speed_mps: float, quiet_frac: float = 0.35,
                 gain_per_s: float = 0.25):
        self.radius_m = radius_m
        self.max_speed_mps = max_speed_mps
        self.quiet_m = quiet_frac * radius_m
        self.gain_per_s = gain_per_s
        self.center_ned = None           # (north_m, east_m); set by the vehicle or at entry
        self._heading_hold = 0.0

    def set_center(self, north_m: float, east_m: float) -> None:
        self.center_ned = (north_m, east_m)

    def enter(self, t_s, nav) -> None:
        if self.center_ned is None:
            self.center_ned = (nav.north_m, nav.east_m)
        self._heading_hold = nav.heading_rad

    def update(self, t_s, nav) -> ModeOutput:
        cn, ce = self.center_ned
        dn, de = cn - nav.north_m, ce - nav.east_m
        dist = math.hypot(dn, de)
        if dist > self.quiet_m:
            self._heading_hold = math.atan2(de, dn)
            speed = min(self.max_speed_mps, self.gain_per_s * (dist - self.quiet_m) + 0.1)
            # only push when roughly facing the point, so the boat turns first instead of circling out
            if abs(wrap_pi(self._heading_hold - nav.heading_rad)) > math.radians(60):
                speed = 0.0
        else:
            speed = 0.0
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=wrap_pi(self._heading_hold), speed_mps=speed,
                                                    distance_to_waypoint_m=dist))
