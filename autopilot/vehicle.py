"""The vehicle: one `step(t_s, batch)` per control cycle, used by every backend.

sensors -> estimator -> NavState -> mode (guidance) -> controllers -> Wrench -> allocation -> thrust (N)
        -> thrust maps -> pulse widths (us)

The thrusters are driven only while armed and while the active mode has what it needs (a valid estimate for
navigating modes); in every other case the cycle returns zero thrust and neutral pulses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from autopilot.allocation import Allocator
from autopilot.config import MissionConfig, VesselConfig
from autopilot.control import HeadingController, SpeedController
from autopilot.guidance import MissionGuidance, mission_frame, point_to_ned
from autopilot.interfaces import NavigationFilter
from autopilot.modes.auto import AutoMode
from autopilot.modes.base import Mode, ModeOutput
from autopilot.modes.hold import HoldMode
from autopilot.modes.loiter import LoiterMode
from autopilot.types import (GuidanceSetpoint, NavState, PulseCommand, SensorBatch, ThrustCommand,
                             Wrench)
from drivers.thrust_map import make_thrust_map
from estimation.geodesy import LocalFrame

ZERO_WRENCH = Wrench(0.0, 0.0)


@dataclass(frozen=True)
class CycleResult:
    time_s: float
    nav: NavState
    setpoint: Optional[GuidanceSetpoint]
    wrench: Wrench
    thrust: ThrustCommand
    pulses: PulseCommand
    mode: str
    armed: bool


@dataclass(frozen=True)
class Event:
    time_s: float
    kind: str          # "mode", "arm", "disarm", "mission", "warning"
    message: str


class Autopilot:
    """Owns the estimator, the modes and the control chain for one vessel and one mission."""

    def __init__(self, vessel: VesselConfig, mission: MissionConfig,
                 estimator: Optional[NavigationFilter] = None, frame: Optional[LocalFrame] = None,
                 battery_v: Optional[float] = None, on_event: Optional[Callable[[Event], None]] = None):
        self.vessel = vessel
        self.frame = frame or mission_frame(mission)
        if estimator is None:
            from estimation.ekf import NavigationEKF
            estimator = NavigationEKF(vessel, self.frame)
        self.estimator = estimator
        voltage = battery_v if battery_v is not None else vessel.battery.voltage_v
        self.maps = [make_thrust_map(t, vessel, voltage) for t in vessel.thrusters]
        self.allocator = Allocator(vessel, self.maps)
        self.heading_ctl = HeadingController(vessel, self.allocator.max_yaw_nm)
        self.speed_ctl = SpeedController(vessel, self.allocator.max_surge_n, self.allocator.min_surge_n)
        self.neutral_pulses = PulseCommand(tuple(m.neutral_pulse_us for m in self.maps))
        self.zero_thrust = ThrustCommand(tuple(0.0 for _ in self.maps))
        self.events: list[Event] = []
        self._on_event = on_event
        self.armed = False
        self.home_ned: Optional[tuple[float, float]] = None
        self._last_thrust: Optional[ThrustCommand] = None
        self.load_mission(mission)
        self.mode: Mode = self.modes["HOLD"]
        self._pending_mode: Optional[tuple[str, str]] = None

    # ------------------------------------------------------------------ commands
    def load_mission(self, mission: MissionConfig) -> None:
        """Replace the mission; the local frame stays (it was fixed when the autopilot started)."""
        self.mission = mission
        self.guidance = MissionGuidance(mission, self.vessel, self.frame)
        loiter_speed = min(0.5 * mission.cruise_speed_mps, self.vessel.hull.max_speed_mps)
        self.modes: dict[str, Mode] = {
            "HOLD": HoldMode(),
            "AUTO": AutoMode(self.guidance),
            "LOITER": LoiterMode(mission.loiter_radius_m, loiter_speed),
        }
        self._emit(0.0 if not self.events else self.events[-1].time_s, "mission",
                   f"mission {mission.name!r} loaded ({len(mission.waypoints)} waypoints)")

    def arm(self, t_s: float) -> None:
        self.armed = True
        self._emit(t_s, "arm", "armed")

    def disarm(self, t_s: float, reason: str) -> None:
        self.armed = False
        self._emit(t_s, "disarm", f"disarmed: {reason}")

    def set_mode(self, name: str, reason: str) -> None:
        """Ask for a mode; it takes effect at the start of the next cycle (which has a fresh estimate)."""
        if name not in self.modes:
            raise ValueError(f"unknown mode {name!r}; known: {', '.join(self.modes)}")
        self._pending_mode = (name, reason)

    # ------------------------------------------------------------------ the cycle
    def step(self, t_s: float, batch: SensorBatch) -> CycleResult:
        nav = self.estimator.step(t_s, batch, self._last_thrust)
        if self._pending_mode is not None:
            name, reason = self._pending_mode
            self._pending_mode = None
            self._switch(t_s, nav, name, reason)
        if self.home_ned is None and nav.valid:
            self.home_ned = (nav.north_m, nav.east_m)

        out = ModeOutput()
        if self.armed and (nav.valid or not self.mode.navigating):
            out = self.mode.update(t_s, nav)
            if self.mode.finished:
                self._mission_finished(t_s, nav)
                out = self.mode.update(t_s, nav)

        if not self.armed or (out.setpoint is None and out.wrench is None):
            self.heading_ctl.reset()
            self.speed_ctl.reset()
            wrench, thrust, pulses = ZERO_WRENCH, self.zero_thrust, self.neutral_pulses
        else:
            wrench = out.wrench if out.wrench is not None else self._control(t_s, nav, out.setpoint)
            thrust = self.allocator.allocate(wrench)
            pulses = PulseCommand(tuple(m.thrust_to_pulse(f) for m, f in zip(self.maps, thrust.thrust_n)))
        self._last_thrust = thrust
        return CycleResult(t_s, nav, out.setpoint, wrench, thrust, pulses, self.mode.name, self.armed)

    def _control(self, t_s: float, nav: NavState, sp: GuidanceSetpoint) -> Wrench:
        yaw = self.heading_ctl.update(t_s, nav.heading_rad, nav.yaw_rate_rps, sp.heading_rad,
                                      sp.yaw_rate_ff_rps)
        surge = self.speed_ctl.update(t_s, nav.surge_mps, sp.speed_mps)
        return Wrench(surge, yaw)

    def _mission_finished(self, t_s: float, nav: NavState) -> None:
        action = self.mission.on_complete
        self._emit(t_s, "mission", f"mission complete; on_complete={action}")
        if action == "hold":
            self._switch(t_s, nav, "HOLD", "mission complete")
        else:
            loiter = self.modes["LOITER"]
            last = self.guidance.waypoints_ned[-1]
            if action == "rtl" and self.home_ned is not None:
                last = self.home_ned
            loiter.set_center(*last)
            self._switch(t_s, nav, "LOITER", "mission complete")

    def _switch(self, t_s: float, nav: NavState, name: str, reason: str) -> None:
        if name == self.mode.name:
            return
        old = self.mode.name
        self.mode = self.modes[name]
        self.mode.enter(t_s, nav)
        self.heading_ctl.reset()
        self.speed_ctl.reset()
        self._emit(t_s, "mode", f"{old} -> {name}: {reason}")

    def _emit(self, t_s: float, kind: str, message: str) -> None:
        ev = Event(t_s, kind, message)
        self.events.append(ev)
        if self._on_event is not None:
            self._on_event(ev)

    def start_point_ned(self) -> Optional[tuple[float, float]]:
        """Where the mission says the boat is launched, in the local frame (None when not given)."""
        if self.mission.start is None:
            return None
        return point_to_ned(self.mission.start.point, self.frame)
