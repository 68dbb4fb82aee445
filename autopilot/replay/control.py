"""Guidance and control re-run on a replayed estimate, open loop (`autopilot log replay --control`).

A replay changes the estimate; this shows what the boat would have asked for with it. At every replayed
estimator step it runs the mission's guidance (autopilot.guidance.path_following.MissionGuidance), the heading PID and
the
speed PI (autopilot.control.heading_speed) on the replayed NavState while the recorded mode is AUTO and the boat armed,
and
its state.csv rows get the recomputed heading and speed setpoints, cross-track error, waypoint index, surge force
and yaw moment. Open loop: the boat's recorded motion is what it is (the recomputed commands never reach it),
so a large change of the commands shows where the new estimate would have steered differently, not where the
boat would have gone. Other modes' rows keep their recorded commands. Waypoint missions only: an
identification or trajectory mission's AUTO is another mode, and its rows are left as recorded.

Guidance starts, as AutoMode does, from the first armed AUTO step with a valid estimate; a mode change away from
AUTO resets the controllers, and coming back continues the mission where it was. As on the boat, guidance plans
its corners on the turn-rate ratio measured in hard turns (autopilot/guidance/turn_rate_watch.py, here fed the recorded
yaw moment: the motion is the recorded one) and on the replayed filter's drift (`step`'s drift_ne).
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.control.allocation import Allocator
from autopilot.control.heading_speed import HeadingController, SpeedController
from autopilot.guidance.path_following import MissionGuidance
from autopilot.guidance.turn_rate_watch import TurnRateWatch
from drivers.thrust_map import make_thrust_map

COLUMNS = ("heading_ref_deg", "speed_ref_mps", "xte_m", "waypoint_index", "surge_force_n", "yaw_moment_nm")


class OpenLoopControl:
    """See the module docstring. `frame`: the run's local frame (the estimator's)."""

    def __init__(self, vessel, mission, frame) -> None:
        self.supported = mission.identification is None and getattr(mission, "trajectory", None) is None
        alloc = Allocator(vessel, [make_thrust_map(t, vessel) for t in vessel.thrusters])
        self.guidance = MissionGuidance(mission, vessel, frame, max_yaw_nm=alloc.max_yaw_nm)
        self.heading = HeadingController(vessel, alloc.max_yaw_nm)
        self.speed = SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n)
        self.mode, self.armed = "", False
        self.values: Optional[dict] = None          # the latest recomputed columns (None outside AUTO)
        self.steps = 0                              # steps recomputed
        self._in_auto = False
        self.turns = TurnRateWatch.for_hull(vessel.hull, alloc.max_yaw_nm)
        self._recorded_yaw_nm: Optional[float] = None

    def observe_row(self, row: dict) -> None:
        """The recorded mode and arming of the run at a logged row (they hold until the next row)."""
        self.mode = str(row.get("mode", self.mode))
        try:
            yaw = float(row.get("yaw_moment_nm"))  # type: ignore[arg-type]  # None raises TypeError, caught below
            self._recorded_yaw_nm = yaw if math.isfinite(yaw) else None
        except (TypeError, ValueError):
            self._recorded_yaw_nm = None
        try:
            self.armed = bool(int(float(row.get("armed", self.armed))))
        except (TypeError, ValueError):
            pass

    def step(self, t_s: float, nav, drift_ne: tuple = (0.0, 0.0)) -> None:
        """One estimator step of the replay: guidance and control on `nav` when the run was flying AUTO.
        `drift_ne`: the replayed filter's drift over ground (its current) [m/s] north, east."""
        if self._recorded_yaw_nm is not None and nav.valid:
            self.turns.update(t_s, nav.yaw_rate_rps, self._recorded_yaw_nm)
        if not (self.supported and self.mode == "AUTO" and self.armed and nav.valid):
            if self._in_auto:
                self.heading.reset()
                self.speed.reset()
            self._in_auto, self.values = False, None
            return
        g = self.guidance
        g.turn_scale, g.drift_ne = self.turns.scale, drift_ne
        if not self._in_auto and g.leg is None:
            g.start(nav.north_m, nav.east_m)
        self._in_auto = True
        sp = g.update(t_s, nav)
        if sp is None:
            self.values = None
            return
        yaw = self.heading.update(t_s, nav.heading_rad, nav.yaw_rate_rps, sp.heading_rad, sp.yaw_rate_ff_rps)
        surge = self.speed.update(t_s, nav.surge_mps, sp.speed_mps)
        self.steps += 1
        self.values = {"heading_ref_deg": math.degrees(sp.heading_rad), "speed_ref_mps": sp.speed_mps,
                       "xte_m": sp.xte_m, "waypoint_index": sp.waypoint_index, "surge_force_n": surge,
                       "yaw_moment_nm": yaw}

    def apply(self, row: dict) -> dict:
        """`row` with the recomputed columns while in AUTO, as recorded otherwise."""
        return dict(row, **self.values) if self.values is not None else row
