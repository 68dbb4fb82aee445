"""Mission guidance: waypoint sequencing and the path-following laws.

Laws (chosen by the mission's `guidance.law`):
- `heading`: point-to-point; desired heading is the great-circle azimuth to the active waypoint.
- `los`: line of sight to a point `lookahead_m` ahead on the leg: psi_d = chi_p + atan(-y / Delta).
- `ilos`: integral LOS: psi_d = chi_p + atan((-y - sigma*y_int) / Delta),
          y_int_dot = Delta*y / ((y + sigma*y_int)^2 + Delta^2).
- `xtrack_pid`: psi_d = chi_p - clamp(kp*y + ki*int(y) + kd*y_dot, +-max_correction).
chi_p is the leg's path angle [rad, clockwise from north] and y the cross-track error [m], positive when the
boat is to starboard of the leg. The ILOS integral is reset at each waypoint switch and held while the boat
closes on the line by itself (ilos_integral_held: more than ILOS_HOLD_MIN_XTE_M off it and due to reach it within
ILOS_HOLD_LOOKAHEAD_TIMES lookahead transits Delta / u); a steady offset and the last metre are integrated.

Crab-angle compensation (`guidance.crab_compensation`, on by default): the LOS and ILOS angles are the desired
course over ground; the heading asked for is psi_d = chi_d - beta (Fossen, Handbook of Marine Craft
Hydrodynamics and Motion Control, 2nd ed., sec. 12.4), beta = atan2(s, u) with u the estimated surge over ground
and s the sideways velocity over ground: the estimator's drift to starboard of the heading, plus the hull's own
estimated sway when its sway is slow against the heading loop (crab_takes_hull_sway). beta fades in between
CRAB_MIN_SPEED_MPS and CRAB_FULL_SPEED_MPS of speed over ground, is clamped to +-CRAB_MAX_RAD, and is taken at the
speed the boat has been running at (RunningSurge over CRAB_SPEED_TAU_S) unless guidance itself asked for less.

Speed [m/s]: the leg's (the waypoint's, else the mission's cruise), slowed within two lookaheads of a sharp turn
and while the boat points away from the desired heading (heading_speed_factor). The lookahead is at least the
boat's turning radius on the allocator's largest yaw moment (autopilot/guidance/turning.py); both slowdowns
deepen by `turn_scale`, the boat's measured turn rate over its file's (autopilot/guidance/turn_rate_watch.py).

Waypoint switching: the active waypoint is reached inside its acceptance circle or on passing the line through
it perpendicular to the leg. With `guidance.wheel_over` (on by default; LOS, ILOS and cross-track PID) a turn of
20-135 deg begins at the wheel-over point: where the distance to the next leg's line equals what the boat covers
toward it while it turns (corner speed, the file's turn rate times `turn_scale`) plus the estimated drift over
that time, never before half the leg. The first leg runs from where the boat was when the mission started;
zero-length legs are skipped; a waypoint inside the acceptance circle at the start is reached at once.

Why each of these rules is there, with the runs that showed it: docs/design-notes/guidance.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from autopilot.guidance.turning import (
    guidance_lookahead_m,
    steady_yaw_rate_rps,
    sway_time_constant_s,
    yaw_time_constant_s,
)
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import MissionConfig, PointConfig, VesselConfig
from autopilot.vocab.geodesy import LocalFrame, azimuth_rad, haversine_m
from autopilot.vocab.types import GuidanceSetpoint, NavState

MIN_LEG_M = 1e-3
TURN_SLOWDOWN_LOOKAHEADS = 2.0   # start slowing this many lookahead distances before a sharp turn
TURN_SLOWDOWN_MAX = 0.5          # a turn of 90 deg or more halves the speed at the waypoint
HEADING_SLOWDOWN_START_RAD = math.radians(10.0)   # full speed while the bow is within this of the desired heading
HEADING_SLOWDOWN_FLOOR = 0.3    # ... and never below this share of the leg's speed (from 73 deg off)
TURN_SCALE_FULL_RAD = math.radians(45.0)   # a slow turner's further slowdown is full from here
CRAB_MIN_SPEED_MPS = 0.2         # forward speed over ground below which the crab angle is not used
CRAB_FULL_SPEED_MPS = 0.4        # ... and above which it is used in full (linear in between)
CRAB_MAX_RAD = math.radians(45.0)
CRAB_SPEED_TAU_S = 10.0          # the speed the boat has been making: its surge averaged over this [s]
CRAB_SWAY_LOOP_RATIO = 2.0       # hull sway time constant x heading omega_n from which the crab takes the sway
ILOS_HOLD_MIN_XTE_M = 1.0        # ILOS integrates within this of the line whatever the boat does (the estimate's
                                 # own error is about 0.5 m RMS with a 2 m CEP receiver)
ILOS_HOLD_LOOKAHEAD_TIMES = 4.0  # ... and beyond it, holds while the boat would reach the line within this many
                                 # lookahead transits (Delta / u) at its present rate
ILOS_HOLD_MIN_SPEED_MPS = 0.3    # the surge a lookahead transit is timed at, at least
WHEEL_OVER_MIN_TURN_RAD = math.radians(20.0)    # turns this sharp or sharper start before their waypoint ...
WHEEL_OVER_MAX_TURN_RAD = math.radians(135.0)   # ... up to this sharp (a U-turn has no line to aim the arc at)
WHEEL_OVER_MIN_LEG_SHARE = 0.5   # never leave a leg before half of it is flown
YAW_LAG_MIN_S, YAW_LAG_MAX_S = 0.5, 6.0     # a turn's spin-up [s]: the file's yaw time constant, within these


def heading_speed_factor(heading_error_rad: float, turn_scale: float = 1.0) -> float:
    """Share of the leg's speed [k HEADING_SLOWDOWN_FLOOR, 1] to ask for while pointing `heading_error_rad` off
    the desired heading: 1 within HEADING_SLOWDOWN_START_RAD, then cos(error) / cos(start), never below the
    floor: a boat still turning onto a new leg turns on a tighter circle, and small corrections on a leg
    (within the dead band) cost no speed.

    A boat that turns slower than its file (`turn_scale` k < 1, autopilot/guidance/turn_rate_watch.py) is slowed further
    by 1 - (1 - k) w, w rising from 0 at HEADING_SLOWDOWN_START_RAD to 1 at TURN_SCALE_FULL_RAD: on a leg it
    keeps its speed, from 45 deg off it turns on the file's circle.
    Why: docs/design-notes/core.md, "Guidance"."""
    err = min(abs(heading_error_rad), math.pi / 2)
    c = math.cos(err) / math.cos(HEADING_SLOWDOWN_START_RAD)
    w = (err - HEADING_SLOWDOWN_START_RAD) / (TURN_SCALE_FULL_RAD - HEADING_SLOWDOWN_START_RAD)
    slower = 1.0 - (1.0 - min(1.0, turn_scale)) * min(1.0, max(0.0, w))
    return max(HEADING_SLOWDOWN_FLOOR, min(1.0, c)) * slower


def _turn_rad(leg: "Leg", nxt: "Leg") -> float:
    """Course change [rad, 0..pi] from `leg` onto `nxt`."""
    return abs(wrap_pi(nxt.path_angle_rad - leg.path_angle_rad))


def crab_takes_hull_sway(vessel: VesselConfig) -> bool:
    """Whether the crab angle takes the hull's own estimated sway besides the drift: when the sway's time
    constant (m - Y_vdot) / -Y_v [s] is at least CRAB_SWAY_LOOP_RATIO times the heading loop's 1/omega_n [s]
    (see the module's docstring). A file without linear sway damping slides slowly: True."""
    return sway_time_constant_s(vessel.hull) * vessel.control.heading.omega_n_rps >= CRAB_SWAY_LOOP_RATIO


def crab_angle_rad(nav: NavState, drift_ne: tuple[float, float], hull_sway: bool = False,
                   running_surge_mps: float = 0.0) -> float:
    """Crab angle [rad] of a boat making the estimated surge over ground ahead and carried sideways by the drift
    over ground `drift_ne` (north, east [m/s]), and with `hull_sway` by its own estimated sway as well (then the
    sideways speed is the estimate's sway over ground): beta = atan2(sideways, surge), + to starboard of where
    it points (course = heading + beta). The surge is taken as at least `running_surge_mps` [m/s] (the speed
    the boat is running at when a hard turn has briefly stalled it; MissionGuidance). 0 below
    CRAB_MIN_SPEED_MPS forward speed over ground, faded in linearly up to CRAB_FULL_SPEED_MPS, clamped to
    +-CRAB_MAX_RAD."""
    u = max(nav.surge_mps, running_surge_mps)
    if not nav.valid or u <= CRAB_MIN_SPEED_MPS:
        return 0.0
    if hull_sway:
        sideways = nav.sway_mps
    else:
        psi = nav.heading_rad
        sideways = -drift_ne[0] * math.sin(psi) + drift_ne[1] * math.cos(psi)
    beta = max(-CRAB_MAX_RAD, min(CRAB_MAX_RAD, math.atan2(sideways, u)))
    weight = min(1.0, (u - CRAB_MIN_SPEED_MPS) / (CRAB_FULL_SPEED_MPS - CRAB_MIN_SPEED_MPS))
    return weight * beta


class RunningSurge:
    """The speed the boat has been running at, for the crab angle (module docstring): its estimated surge
    averaged over CRAB_SPEED_TAU_S [m/s], and never more than the speed guidance last asked for (`asked_mps`,
    set by the caller each cycle). `value_mps` is 0 until the first update."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.mean_mps = 0.0           # estimated surge averaged over CRAB_SPEED_TAU_S [m/s]
        self.asked_mps = 0.0          # the speed guidance asked for on its last cycle [m/s]
        self._t_prev: Optional[float] = None

    def update(self, t_s: float, surge_mps: float) -> None:
        dt = 0.0 if self._t_prev is None else max(0.0, t_s - self._t_prev)
        self._t_prev = t_s
        if math.isfinite(surge_mps):
            self.mean_mps += min(1.0, dt / CRAB_SPEED_TAU_S) * (surge_mps - self.mean_mps)

    @property
    def value_mps(self) -> float:
        return min(self.mean_mps, self.asked_mps)


def ilos_integral_held(xte_m: float, nav: NavState, path_angle_rad: float, lookahead_m: float) -> bool:
    """True while the ILOS integral should not move: the boat is more than ILOS_HOLD_MIN_XTE_M from the leg's
    line (xte_m, + to starboard of the leg) and its estimated velocity over ground brings it to the line within
    ILOS_HOLD_LOOKAHEAD_TIMES * lookahead_m / surge seconds. False for an invalid estimate."""
    if not nav.valid or abs(xte_m) <= ILOS_HOLD_MIN_XTE_M:
        return False
    a = nav.heading_rad - path_angle_rad
    xte_rate_mps = nav.surge_mps * math.sin(a) + nav.sway_mps * math.cos(a)
    if xte_m * xte_rate_mps >= 0.0:
        return False
    transit_s = lookahead_m / max(ILOS_HOLD_MIN_SPEED_MPS, abs(nav.surge_mps))
    return abs(xte_m) < abs(xte_rate_mps) * ILOS_HOLD_LOOKAHEAD_TIMES * transit_s


def mission_frame(mission: MissionConfig) -> LocalFrame:
    """The local NED frame of a mission: its anchor, else its first waypoint."""
    if mission.anchor is not None:
        return LocalFrame(mission.anchor.lat_deg, mission.anchor.lon_deg)
    wp = mission.waypoints[0]
    assert wp.lat_deg is not None and wp.lon_deg is not None   # MissionConfig.validate: no anchor, no metres
    return LocalFrame(wp.lat_deg, wp.lon_deg)


def point_to_ned(point: PointConfig, frame: LocalFrame) -> tuple[float, float]:
    if point.lat_deg is not None:
        assert point.lon_deg is not None                          # PointConfig.validate: they go together
        return frame.to_ned(point.lat_deg, point.lon_deg)
    assert point.north_m is not None and point.east_m is not None  # PointConfig.validate: lat/lon or north/east
    return point.north_m, point.east_m


@dataclass(frozen=True)
class Leg:
    """A straight leg in the local frame from (n0, e0) to (n1, e1)."""

    n0: float
    e0: float
    n1: float
    e1: float

    @property
    def length_m(self) -> float:
        return math.hypot(self.n1 - self.n0, self.e1 - self.e0)

    @property
    def path_angle_rad(self) -> float:
        return math.atan2(self.e1 - self.e0, self.n1 - self.n0)

    def along_cross_m(self, north_m: float, east_m: float) -> tuple[float, float]:
        """(along-track distance from the start, cross-track error + right of the leg) [m]."""
        chi = self.path_angle_rad
        dn, de = north_m - self.n0, east_m - self.e0
        c, s = math.cos(chi), math.sin(chi)
        return dn * c + de * s, -dn * s + de * c


class MissionGuidance:
    """Follows a mission's waypoints; `update()` once per control cycle with the current estimate."""

    def __init__(self, mission: MissionConfig, vessel: VesselConfig, frame: Optional[LocalFrame] = None,
                 max_yaw_nm: Optional[float] = None):
        """`max_yaw_nm`: the allocator's largest yaw moment [N*m]; given, the lookahead is kept at least the
        boat's turning radius (autopilot/guidance/turning.py), else it is the mission's as filed."""
        self.mission = mission
        self.frame = frame or mission_frame(mission)
        g = mission.guidance
        self.law = g.law
        self.lookahead_m = guidance_lookahead_m(vessel, mission, max_yaw_nm)
        self.sigma = g.sigma if g.law == "ilos" else 0.0
        self.crab_compensation = g.crab_compensation
        self.crab_hull_sway = crab_takes_hull_sway(vessel)
        self.waypoints_ned = [point_to_ned(p, self.frame) for p in mission.waypoints]
        self.waypoints_geo = [self.frame.to_wgs84(n, e) if p.lat_deg is None or p.lon_deg is None  # both or none
                              else (p.lat_deg, p.lon_deg) for p, (n, e) in zip(mission.waypoints, self.waypoints_ned)]
        self.max_speed_mps = vessel.hull.max_speed_mps
        self._running = RunningSurge()  # the speed the crab angle is taken at
        self.turn_scale = 1.0          # measured / file yaw rate in hard turns, (0, 1] (TurnRateWatch.scale)
        self.drift_ne = (0.0, 0.0)     # the estimator's drift over ground (its current) [m/s] north, east
        h = vessel.hull
        self.wheel_over = g.wheel_over and g.law in ("los", "ilos", "xtrack_pid") and max_yaw_nm is not None
        self.full_yaw_rate_rps = (steady_yaw_rate_rps(-h.n_r, -h.n_rr, max_yaw_nm) if max_yaw_nm else math.inf)
        self.yaw_lag_s = min(YAW_LAG_MAX_S, max(YAW_LAG_MIN_S, yaw_time_constant_s(h)))
        self._legs_after = [self._leg_after(i) for i in range(len(self.waypoints_ned))]
        self.index = 0                 # active waypoint
        self.leg: Optional[Leg] = None
        self.complete = False
        self.reached_log: list[int] = []   # index of each waypoint reached, in order (MISSION_ITEM_REACHED)
        self.y_int = 0.0
        self._xte_prev: Optional[float] = None
        self._xte_int = 0.0
        self._t_prev: Optional[float] = None

    @property
    def waypoints_total(self) -> int:
        return len(self.waypoints_ned)

    @property
    def waypoints_reached(self) -> int:
        return self.waypoints_total if self.complete else self.index

    def start(self, north_m: float, east_m: float) -> None:
        """Begin (or restart) the mission from the boat's current position."""
        self.index = 0
        self.complete = False
        self._begin_leg(north_m, east_m)

    def jump_to(self, index: int, from_ne: Optional[tuple[float, float]] = None) -> None:
        """Head for waypoint `index` (0-based) next, as a ground station's "set current waypoint" asks. The leg
        starts at `from_ne` (the boat's position [m]), else at the waypoint before it (else where the boat is
        on the next update)."""
        if not 0 <= index < self.waypoints_total:
            raise IndexError(f"waypoint {index} of {self.waypoints_total}")
        self.index = index
        self.complete = False
        if from_ne is None and index > 0:
            from_ne = self.waypoints_ned[index - 1]
        if from_ne is None:
            self.leg = None
            return
        self._begin_leg(*from_ne)

    def _begin_leg(self, n0: float, e0: float) -> None:
        n1, e1 = self.waypoints_ned[self.index]
        self.leg = Leg(n0, e0, n1, e1)
        self.y_int = 0.0
        self._xte_prev = None
        self._xte_int = 0.0

    def _advance(self, north_m: float, east_m: float, heading_rad: float) -> None:
        """Step past reached waypoints (and zero-length legs) until one lies ahead."""
        while not self.complete:
            leg = self.leg
            assert leg is not None        # update() starts a leg before it advances
            dist = math.hypot(leg.n1 - north_m, leg.e1 - east_m)
            along, _ = leg.along_cross_m(north_m, east_m)
            passed = leg.length_m > MIN_LEG_M and along >= leg.length_m
            reached = dist <= self.mission.acceptance_radius_m or passed
            if not reached and not self._wheel_over(north_m, east_m, heading_rad):
                return
            prev = self.waypoints_ned[self.index]
            self.reached_log.append(self.index)
            self.index += 1
            if self.index >= self.waypoints_total:
                self.complete = True
                return
            self._begin_leg(*prev)

    def _leg_after(self, index: int) -> Optional[Leg]:
        """The leg from waypoint `index` to the next one (skipping zero-length legs); None after the last."""
        n1, e1 = self.waypoints_ned[index]
        for n2, e2 in self.waypoints_ned[index + 1:]:
            if math.hypot(n2 - n1, e2 - e1) > MIN_LEG_M:
                return Leg(n1, e1, n2, e2)
        return None

    def _next_leg(self) -> Optional[Leg]:
        """The leg after the active waypoint; None at the last waypoint."""
        return self._legs_after[self.index]

    def _corner_speed_mps(self, index: int, turn_rad: float, turn_scale: float) -> float:
        """The speed [m/s] asked for at waypoint `index` with a course change of turn_rad onto the next leg:
        cruise * (1 - a + a (1 - TURN_SLOWDOWN_MAX) k), a = min(1, turn / 90 deg), k = turn_scale."""
        wp = self.mission.waypoints[index]
        cruise = wp.speed_mps if wp.speed_mps is not None else self.mission.cruise_speed_mps
        cruise = min(cruise, self.max_speed_mps)
        a = min(1.0, turn_rad / (math.pi / 2))
        return cruise * (1.0 - a + a * (1.0 - TURN_SLOWDOWN_MAX) * turn_scale)

    def _wheel_over_across_m(self, index: int, leg: Leg, nxt: Optional[Leg], heading_rad: float,
                             turn_scale: float, drift_toward_mps: float) -> float:
        """Distance [m, >= 0] from `nxt`'s line at which a boat on `leg` into waypoint `index`, heading
        `heading_rad`, begins its turn (see wheel_over_m); 0 when the wheel-over point does not apply."""
        if nxt is None or leg.length_m <= MIN_LEG_M:
            return 0.0
        planned = _turn_rad(leg, nxt)
        rate = turn_scale * self.full_yaw_rate_rps
        if not WHEEL_OVER_MIN_TURN_RAD <= planned <= WHEEL_OVER_MAX_TURN_RAD or not 0.0 < rate < math.inf:
            return 0.0
        turn = abs(wrap_pi(nxt.path_angle_rad - heading_rad))
        speed = self._corner_speed_mps(index, planned, turn_scale)
        time_s = self.yaw_lag_s + turn / rate
        own_m = speed * (self.yaw_lag_s * math.sin(turn) + (1.0 - math.cos(turn)) / rate)
        return own_m + max(0.0, drift_toward_mps) * time_s

    def wheel_over_m(self, y_next_m: float, heading_rad: float) -> float:
        """How far [m, >= 0] from the next leg's line the turn onto it begins, for a boat `y_next_m` off that line
        (+ to the right of it) heading `heading_rad`: what the boat covers toward the line while it turns from
        that heading onto the line, at the corner speed on the full yaw moment (the file's steady rate times
        turn_scale, after one yaw time constant of spin-up), plus what the estimated drift carries it toward the
        line in that time. 0 at the last waypoint and where the legs meet at less than WHEEL_OVER_MIN_TURN_RAD
        or more than WHEEL_OVER_MAX_TURN_RAD."""
        nxt = self._next_leg()
        if nxt is None or self.leg is None:
            return 0.0
        chi = nxt.path_angle_rad
        drift_right = -self.drift_ne[0] * math.sin(chi) + self.drift_ne[1] * math.cos(chi)
        toward = -drift_right if y_next_m > 0.0 else drift_right
        return self._wheel_over_across_m(self.index, self.leg, nxt, heading_rad, self.turn_scale, toward)

    def _wheel_over(self, north_m: float, east_m: float, heading_rad: float) -> bool:
        """True when the boat, past half the active leg, is within wheel_over_m of the next leg's line."""
        if not self.wheel_over:
            return False
        assert self.leg is not None       # called by _advance, on the active leg
        along, _ = self.leg.along_cross_m(north_m, east_m)
        nxt = self._next_leg()
        if nxt is None or along < WHEEL_OVER_MIN_LEG_SHARE * self.leg.length_m:
            return False
        _, y_next = nxt.along_cross_m(north_m, east_m)
        return abs(y_next) <= self.wheel_over_m(y_next, heading_rad)

    def planned_wheel_over_m(self) -> list:
        """[(waypoint index, metres before it)] for each waypoint after the first whose turn begins before it:
        where a boat on the leg into it, pointing along the leg with no drift, turning at the file's rate
        (turn_scale 1), leaves the leg (within the leg's second half). A boat that turns slower, or drifts toward
        the next line, begins further out. What `autopilot check` tells a user."""
        if not self.wheel_over:
            return []
        out = []
        for i in range(1, self.waypoints_total):
            leg, nxt = Leg(*self.waypoints_ned[i - 1], *self.waypoints_ned[i]), self._legs_after[i]
            across_m = self._wheel_over_across_m(i, leg, nxt, leg.path_angle_rad, 1.0, 0.0)
            sin_turn = math.sin(_turn_rad(leg, nxt)) if nxt is not None else 0.0
            if across_m > 0.0 and sin_turn > 1e-6:
                before_m = min(across_m / sin_turn, (1.0 - WHEEL_OVER_MIN_LEG_SHARE) * leg.length_m)
                if before_m > self.mission.acceptance_radius_m:
                    out.append((i, before_m))
        return out

    def _turn_angle_rad(self) -> float:
        """Course change at the active waypoint onto the next non-degenerate leg (0 at the last waypoint)."""
        nxt = self._next_leg()
        if nxt is None:
            return 0.0
        assert self.leg is not None       # called by _speed_ref, on the active leg
        return _turn_rad(self.leg, nxt)

    def _speed_ref(self, dist_to_wp_m: float) -> float:
        """Cruise speed, slowed before sharp turns.

        The final waypoint is approached at cruise speed: slowing down on a leg in a cross current only
        raises the crab angle the boat needs, and what follows the mission (LOITER, HOLD) takes over at once.

        Within `TURN_SLOWDOWN_LOOKAHEADS` lookaheads of a waypoint whose turn is sharp, the speed falls linearly
        toward the corner speed (_corner_speed_mps): a small hull then turns inside its lookahead instead of
        overshooting onto the next leg. The speed ramps back up on the new leg.
        """
        cruise = self._corner_speed_mps(self.index, 0.0, self.turn_scale)
        zone = TURN_SLOWDOWN_LOOKAHEADS * self.lookahead_m
        if dist_to_wp_m >= zone or self.leg is None or self.leg.length_m <= MIN_LEG_M:
            return cruise
        slow = self._corner_speed_mps(self.index, self._turn_angle_rad(), self.turn_scale)
        return slow + (cruise - slow) * dist_to_wp_m / zone

    def update(self, t_s: float, nav: NavState) -> Optional[GuidanceSetpoint]:
        """Desired heading and speed for this cycle; None once the mission is complete."""
        if self.leg is None:
            self.start(nav.north_m, nav.east_m)
        self._advance(nav.north_m, nav.east_m, nav.heading_rad)
        if self.complete:
            return None
        dt = 0.0 if self._t_prev is None else max(0.0, t_s - self._t_prev)
        self._t_prev = t_s
        self._running.update(t_s, nav.surge_mps)
        leg = self.leg
        assert leg is not None            # started above (a complete mission has returned)
        along, y = leg.along_cross_m(nav.north_m, nav.east_m)
        dist = math.hypot(leg.n1 - nav.north_m, leg.e1 - nav.east_m)

        if self.law == "heading" or leg.length_m <= MIN_LEG_M:
            lat, lon = self.frame.to_wgs84(nav.north_m, nav.east_m)
            wlat, wlon = self.waypoints_geo[self.index]
            psi_d = azimuth_rad(lat, lon, wlat, wlon)
            dist = haversine_m(lat, lon, wlat, wlon)
        elif self.law in ("los", "ilos"):
            delta = self.lookahead_m
            if self.sigma > 0.0 and dt > 0.0 and not ilos_integral_held(y, nav, leg.path_angle_rad, delta):
                self.y_int += dt * delta * y / ((y + self.sigma * self.y_int) ** 2 + delta ** 2)
            psi_d = leg.path_angle_rad + math.atan2(-y - self.sigma * self.y_int, delta)
            if self.crab_compensation:
                psi_d -= crab_angle_rad(nav, self.drift_ne, self.crab_hull_sway, self._running.value_mps)
        else:  # xtrack_pid
            g = self.mission.guidance
            y_dot = 0.0 if (self._xte_prev is None or dt <= 0.0) else (y - self._xte_prev) / dt
            self._xte_prev = y
            limit = math.radians(g.max_correction_deg)
            unsat = g.kp_rad_per_m * y + g.ki_rad_per_ms * self._xte_int + g.kd_rad_s_per_m * y_dot
            if abs(unsat) < limit:      # conditional integration: no windup while saturated
                self._xte_int += y * dt
            correction = max(-limit, min(limit, unsat))
            psi_d = leg.path_angle_rad - correction

        speed = self._speed_ref(dist) * heading_speed_factor(wrap_pi(psi_d - nav.heading_rad), self.turn_scale)
        self._running.asked_mps = speed
        return GuidanceSetpoint(heading_rad=wrap_pi(psi_d), speed_mps=speed, xte_m=y,
                                waypoint_index=self.index, distance_to_waypoint_m=dist)
