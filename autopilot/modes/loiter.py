"""LOITER: keep station within `radius_m` of a point.

The law asks for a velocity over ground toward the centre, proportional to the distance beyond a quiet zone
(`quiet_frac` of the radius, where estimate noise is not chased; gain_per_s, at most max_speed_mps), and
steers the bow along the velocity through the WATER that needs: that velocity minus the drift the estimator
has learnt (its water-current estimate, which also takes up the steady push of the wind).
At the centre the boat points into the drift and pushes just hard enough to stand still over ground. The
speed setpoint is the wanted ground velocity along the boat's actual heading (a boat facing the wrong way backs
or waits). Nothing switches at the edge of the circle.

Forward or astern (`astern`, the mission's `loiter_astern`, as ArduPilot Rover's loiter backs toward a point
behind it): within ASTERN_WITHIN_RADII loiter radii of the centre, a bow more than ASTERN_ENTER_RAD off that
heading points the stern along it instead and the boat backs, until the bow comes within ASTERN_LEAVE_RAD of it
again; from further away it turns round and drives.

The drift is used once the estimator knows it: its standard deviation (`drift_std_fn`) at most
DRIFT_KNOWN_STD_REL of its size, or DRIFT_KNOWN_STD_MPS for a weak one (and forgotten again only past twice
that). Until then the law flies as in calm water.

Without drift (calm water) and near the centre, the velocity through the water becomes too small to define a
heading: the heading is then held (with hysteresis between `hold_below_mps` and twice that) and only the
along-heading error is corrected, ahead or astern. In calm water a correction inside the circle that lies
behind the boat is made astern rather than by turning round.
Why: docs/design-notes/core.md, "Modes".
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from autopilot.modes.base import Mode, ModeOutput
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint

ASTERN_ENTER_RAD = math.radians(110.0)     # with `astern`, hold stern-first once the bow is this far off
ASTERN_LEAVE_RAD = math.radians(70.0)      # ... and turn bow-first again once it is within this
ASTERN_WITHIN_RADII = 3.0                  # ... starting only this many loiter radii from the centre
DRIFT_KNOWN_STD_REL = 0.5     # the drift estimate is used once its std is within this share of its size ...
DRIFT_KNOWN_STD_MPS = 0.05    # ... or within this [m/s]


def _no_drift() -> tuple[float, float]:
    return 0.0, 0.0


def _drift_known_exactly() -> float:
    return 0.0


class LoiterMode(Mode):
    name = ModeName.LOITER

    def __init__(self, radius_m: float, max_speed_mps: float,
                 drift_fn: Optional[Callable[[], tuple[float, float]]] = None, gain_per_s: float = 0.3,
                 hold_below_mps: float = 0.1, quiet_frac: float = 0.25, astern: bool = False,
                 drift_std_fn: Optional[Callable[[], float]] = None):
        self.radius_m = radius_m
        self.quiet_frac = quiet_frac
        self.max_speed_mps = max_speed_mps
        self.drift_fn = drift_fn or _no_drift       # () -> (north, east) drift over ground [m/s]
        self.drift_std_fn = drift_std_fn or _drift_known_exactly   # () -> the drift's standard deviation [m/s]
        self.drift_known = False                    # the drift estimate is good enough to steer by
        self.gain_per_s = gain_per_s
        self.hold_below_mps = hold_below_mps
        self.center_ned: Optional[tuple[float, float]] = None
        self._staged: Optional[tuple[float, float]] = None
        self.heading_ref_rad = 0.0
        self._holding = True
        self.astern = astern                        # may hold the stern into the drift instead of turning round
        self._astern_now = False

    @property
    def quiet_m(self) -> float:
        """Within this distance of the centre no velocity is asked for (estimate noise is not chased)."""
        return self.quiet_frac * self.radius_m

    def set_center(self, north_m: float, east_m: float) -> None:
        """Loiter around this point from the next entry on (otherwise: where the boat is on entry)."""
        self._staged = (north_m, east_m)

    def enter(self, t_s, nav) -> None:
        if self._staged is not None:
            self.center_ned, self._staged = self._staged, None
        else:
            self.center_ned = (nav.north_m, nav.east_m)
        self.heading_ref_rad = nav.heading_rad
        self._holding = True
        self._astern_now = False

    def _drift_ne(self) -> tuple[float, float]:
        """The drift to steer by [m/s, NED]: the estimator's once it is known (module docstring), else none."""
        drift_n, drift_e = self.drift_fn()
        limit = max(DRIFT_KNOWN_STD_MPS, DRIFT_KNOWN_STD_REL * math.hypot(drift_n, drift_e))
        std = self.drift_std_fn()
        if std <= limit:
            self.drift_known = True
        elif not std <= 2.0 * limit:
            self.drift_known = False
        return (drift_n, drift_e) if self.drift_known else (0.0, 0.0)

    def update(self, t_s, nav) -> ModeOutput:
        assert self.center_ned is not None          # set by enter()
        cn, ce = self.center_ned
        dn, de = cn - nav.north_m, ce - nav.east_m
        dist = math.hypot(dn, de)
        if dist > self.quiet_m:
            v = min(self.max_speed_mps, self.gain_per_s * (dist - self.quiet_m)) / dist
            vgn, vge = v * dn, v * de
        else:
            vgn = vge = 0.0
        drift_n, drift_e = self._drift_ne()
        wn, we = vgn - drift_n, vge - drift_e
        w = math.hypot(wn, we)
        psi = nav.heading_rad
        if w > (self.hold_below_mps if not self._holding else 2.0 * self.hold_below_mps):
            self._holding = False
            ref = math.atan2(we, wn)
            if self.astern:
                off = abs(wrap_pi(ref - psi))
                near = dist <= ASTERN_WITHIN_RADII * self.radius_m
                if (near and off > ASTERN_ENTER_RAD) or (self._astern_now and off > ASTERN_LEAVE_RAD):
                    self._astern_now = True
                    ref += math.pi      # the stern into the water velocity wanted: back, do not turn round
                else:
                    self._astern_now = False
            if not self._astern_now and dist < self.radius_m and \
                    math.hypot(drift_n, drift_e) < self.hold_below_mps and abs(wrap_pi(ref - psi)) > 0.5 * math.pi:
                ref += math.pi          # no drift to face and a small correction behind: back up, do not turn
            self.heading_ref_rad = ref
        else:
            self._holding = True
        speed = vgn * math.cos(psi) + vge * math.sin(psi)
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=wrap_pi(self.heading_ref_rad), speed_mps=speed,
                                                    distance_to_waypoint_m=dist))
