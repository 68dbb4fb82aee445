"""GUIDED: a companion computer or a ground station steers the boat target by target (ArduPilot Rover's GUIDED,
custom mode 15: MAVSDK offboard, MAVROS setpoints, QGC's "Go to location", a ROS goal pose).

Targets (each replaces the one before; the vehicle checks them first: finite, inside the geofence, in range):
- a position [m, local NED frame of the mission]: the boat runs a straight line-of-sight leg from where it is
  when the target arrives to the point at `speed_mps` (the mission's cruise speed unless the target gives one),
  flown as RTL flies its leg (autopilot/modes/rtl.py: LOS, crab compensation, slowing near the end); within
  `arrive_m` of it (or past it along the leg) it keeps station there as LOITER does (autopilot/modes/loiter.py)
  and says so once;
- a velocity, in one of three forms, each a stream that must be renewed: older than `timeout_s` (the VELOCITY
  mode's, failsafe.manual.timeout_s) the thrusters go neutral and the mode says so once:
  * body: surge speed [m/s, + ahead] and yaw rate [rad/s, + to starboard], flown by the velocity controller as
    VELOCITY flies them (ROS cmd_vel, MAVLink body-frame vx + yaw_rate);
  * ground velocity north, east [m/s, NED]: the bow is put along the velocity through the water that needs
    (the wanted ground velocity minus the drift the estimator has learnt, as LOITER steers), the speed is the
    wanted ground velocity along the actual heading;
  * heading [rad, compass: from north, clockwise] and speed [m/s, + ahead, - astern].
With no target yet (or a fresh entry) the boat keeps station where it entered, as LOITER does. A position
target is taken at the next update (the next armed cycle in the mode, on its estimate), so one given just before
the mode is entered or armed in (MAV_CMD_DO_REPOSITION switches to GUIDED and goes there in one command) is
flown; `drop_pending()` forgets it (the vehicle does when the mode is not entered after all). A velocity target
given before an entry is dropped by it, as VELOCITY's.
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.modes.loiter import LoiterMode
from autopilot.modes.operator_command import OperatorCommand
from autopilot.modes.rtl import RtlMode
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint, VelocitySetpoint

BODY, GROUND, HEADING = "body", "ground", "heading"      # the velocity target's forms (module docstring)


class GuidedMode(Mode):
    """See the module docstring. `loiter` keeps station (its radius, speed and drift from the vehicle, as the
    LOITER mode's); `speed_mps`, `lookahead_m`, `arrive_m` and the crab settings are the vehicle's mission
    figures, as RTL's; `max_speed_mps` > 0 and `max_yaw_rate_rps` > 0 clamp the velocity targets."""

    name = ModeName.GUIDED

    def __init__(self, loiter: LoiterMode, speed_mps: float, lookahead_m: float, arrive_m: float,
                 max_speed_mps: float, max_yaw_rate_rps: float, timeout_s: float):
        self.loiter = loiter
        self.leg = RtlMode(self._target_point, speed_mps, lookahead_m, arrive_m)
        self.speed_mps = speed_mps
        self.max_speed_mps = max_speed_mps
        self.max_yaw_rate_rps = max_yaw_rate_rps
        self._cmd = OperatorCommand(timeout_s, "GUIDED velocity")
        self._kind = ""                                   # the stored velocity target's form
        self.target_ned: Optional[tuple[float, float]] = None    # the position target [m N, E], None: none
        self.target_speed_mps: Optional[float] = None            # its own speed, None: the mission's cruise
        self.reached = False
        self._new_target = False                           # the leg starts at the next update, on its estimate
        self._staged: Optional[tuple[tuple[float, float], Optional[float]]] = None

    # -------------------------------------------------------------- figures the vehicle sets
    @property
    def timeout_s(self) -> float:
        return self._cmd.timeout_s

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self._cmd.timeout_s = value

    @property
    def velocity_active(self) -> bool:
        """A velocity target (fresh or timed out) rules, rather than a position or station keeping."""
        return bool(self._kind)

    # -------------------------------------------------------------- targets
    def set_position(self, north_m: float, east_m: float, speed_mps: Optional[float] = None) -> None:
        """Go to this point [m, local NED] at `speed_mps` [m/s] (None: the mission's cruise speed), then keep
        station there (the vehicle has checked it). Taken at the next update, whose estimate starts the leg; it
        then ends any velocity target."""
        self._staged = ((float(north_m), float(east_m)), speed_mps)

    def drop_pending(self) -> None:
        """Forget a position target not taken yet."""
        self._staged = None

    @property
    def pending_ned(self) -> Optional[tuple[float, float]]:
        """The position target given but not yet taken [m N, E], None: none."""
        return None if self._staged is None else self._staged[0]

    @property
    def position_target(self) -> Optional[tuple[tuple[float, float], Optional[float]]]:
        """The position target being flown or about to be, with its speed ((north, east) [m], m/s or None); None
        when a velocity target rules or there is none."""
        if self._staged is not None:
            return self._staged
        if self.target_ned is not None and not self._kind:
            return self.target_ned, self.target_speed_mps
        return None

    def _take_position(self) -> None:
        assert self._staged is not None
        (n, e), speed = self._staged
        self._staged = None
        self.target_ned, self.target_speed_mps = (n, e), speed
        self.reached = False
        self._new_target = True
        self._kind = ""
        self._cmd.clear()

    def set_velocity(self, t_s: float, kind: str, a: float, b: float) -> None:
        """A velocity target at `t_s` [s]: kind BODY (a surge [m/s, + ahead], b yaw rate [rad/s, + starboard]),
        GROUND (a north, b east [m/s]) or HEADING (a heading [rad, compass], b speed [m/s, - astern]). Speeds are
        clamped to `max_speed_mps`, the yaw rate to `max_yaw_rate_rps`. ValueError for a non-finite value or an
        unknown kind. Ends any position target (the station is kept again only when a new one comes)."""
        if not (math.isfinite(t_s) and math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"GUIDED velocity target must be finite numbers, got {a!r}, {b!r}")
        v, r = self.max_speed_mps, self.max_yaw_rate_rps
        if kind == BODY:
            a, b = max(-v, min(v, a)), max(-r, min(r, b))
        elif kind == GROUND:
            speed = math.hypot(a, b)
            if speed > v:
                a, b = a * v / speed, b * v / speed
        elif kind == HEADING:
            a, b = wrap_pi(a), max(-v, min(v, b))
        else:
            raise ValueError(f"unknown GUIDED velocity target kind {kind!r}")
        self._kind = kind
        self._cmd.store(t_s, a, b)
        self.target_ned = None
        self._staged = None
        self._new_target = False

    # -------------------------------------------------------------- the mode
    def _target_point(self) -> Optional[tuple[float, float]]:
        return self.target_ned

    def enter(self, t_s, nav) -> None:
        self._cmd.clear()
        self._kind = ""
        self.target_ned, self.target_speed_mps, self._new_target = None, None, False
        self.reached = False
        self.loiter.enter(t_s, nav)                  # the station where it entered, until a target comes

    def update(self, t_s, nav) -> ModeOutput:
        if self._staged is not None:
            self._take_position()
        if self._kind:
            return self._velocity(t_s, nav)
        if self.target_ned is None:
            return self.loiter.update(t_s, nav)
        if self._new_target:
            self._new_target = False
            self.leg.speed_mps = self.target_speed_mps if self.target_speed_mps is not None else self.speed_mps
            self.leg.enter(t_s, nav)
        if not self.reached:
            self.leg.drift_ne = self.drift_ne
            out = self.leg.update(t_s, nav)
            if not self.leg.finished:
                return out
            self.reached = True
            n, e = self.target_ned
            miss = math.hypot(n - nav.north_m, e - nav.east_m)
            self.progress = (f"GUIDED: target {n:.1f} m N, {e:.1f} m E reached ({miss:.1f} m off); keeping "
                             f"station there")
            self.loiter.set_center(n, e)
            self.loiter.enter(t_s, nav)
        return self.loiter.update(t_s, nav)

    def _velocity(self, t_s, nav) -> ModeOutput:
        cmd = self._cmd.current(t_s)
        if cmd is None:
            self.notice = self._cmd.take_notice() or self.notice
            return NEUTRAL
        a, b = cmd
        if self._kind == BODY:
            return ModeOutput(velocity=VelocitySetpoint(a, b))
        if self._kind == HEADING:
            return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=a, speed_mps=b))
        drift_n, drift_e = self.loiter._drift_ne()         # the drift once the estimator knows it, as LOITER
        wn, we = a - drift_n, b - drift_e
        psi = nav.heading_rad
        heading = math.atan2(we, wn) if math.hypot(wn, we) > 1e-3 else psi
        speed = a * math.cos(psi) + b * math.sin(psi)
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=wrap_pi(heading), speed_mps=speed))

    # -------------------------------------------------------------- the leg's figures (as RTL's)
    @property
    def speed_mps(self) -> float:
        return self._speed_mps

    @speed_mps.setter
    def speed_mps(self, value: float) -> None:
        self._speed_mps = value
        self.leg.speed_mps = value
