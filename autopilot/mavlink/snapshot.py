"""What the MAVLink telemetry needs, copied from the autopilot between cycles, so the server's thread never
reads the autopilot while a cycle runs. No pymavlink here.

Units are SI as in autopilot/vocab/types.py: metres, m/s, radians (compass heading, clockwise from north), seconds on
the runner's core clock; latitudes and longitudes in degrees.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Tuple

if TYPE_CHECKING:
    from autopilot.vocab.types import GpsFix, GuidanceSetpoint
    from estimation.navekf.health import EstimatorHealth


@dataclass(frozen=True)
class VehicleSnapshot:
    time_s: float
    mode: str
    armed: bool
    nav_valid: bool
    lat_deg: float
    lon_deg: float
    heading_rad: float
    yaw_rate_rps: float
    surge_mps: float
    sway_mps: float
    pos_std_m: float
    fix: Optional[GpsFix]                      # the latest autopilot.vocab.types.GpsFix, or None
    setpoint: Optional[GuidanceSetpoint]       # the latest GuidanceSetpoint, or None
    waypoint_index: int
    waypoints_total: int
    mission_complete: bool
    mission_name: str
    pulses_us: Tuple[int, ...]
    thrust_n: Tuple[float, ...]
    max_thrust_n: float                        # for VFR_HUD's throttle percentage
    battery_v: Optional[float]
    low_voltage_v: float
    home: Optional[Tuple[float, float]]        # lat, lon [deg]
    health: Optional[EstimatorHealth]          # estimation.navekf.health.EstimatorHealth, or None
    actuator_connected: Optional[bool]
    prearm_failures: Optional[Tuple[str, ...]]  # None when not evaluated in this snapshot
    fence_present: bool = False                # a geofence is in force (the mission's or the vessel's)
    fence_breached: bool = False               # the geofence failsafe is active
    new_events: Tuple[object, ...] = field(default=())   # autopilot.vehicle.Event since the previous snapshot
    mag_warn_deg: float = 8.0                  # sensors.mag.online.warn_consistency_deg (health's mag_consistency)
    reached: Tuple[int, ...] = ()              # waypoint indices reached since the previous snapshot, in order
    battery_a: Optional[float] = None          # pack current [A], positive discharging; None: not measured
    battery_mah: Optional[float] = None        # charge drawn since start [mAh]; None: not measured
    mission_cleared: bool = False              # a ground station cleared the mission: nothing to fly
    home_ned: Optional[Tuple[float, float]] = None   # home in the local frame, north and east [m]
    origin: Optional[Tuple[float, float]] = None     # the local frame's origin, lat, lon [deg], once an estimate is
    #                                                  valid (ArduPilot's EKF origin, set at its first position)

    @property
    def ground_velocity_ne(self) -> Tuple[float, float]:
        """Velocity over ground, north and east [m/s]."""
        c, s = math.cos(self.heading_rad), math.sin(self.heading_rad)
        return self.surge_mps * c - self.sway_mps * s, self.surge_mps * s + self.sway_mps * c


class SnapshotTaker:
    """Takes snapshots of one autopilot; remembers which events it has handed out already."""

    def __init__(self, autopilot):
        self.autopilot = autopilot
        self._events_seen = len(autopilot.events)
        self._reached_seen = (autopilot.guidance, len(getattr(autopilot.guidance, "reached_log", ())))

    def take(self, t_s: float, with_prearm: bool = False) -> VehicleSnapshot:
        ap = self.autopilot
        nav = ap.nav
        lat = lon = math.nan
        if nav is not None and nav.valid:
            lat, lon = ap.frame.to_wgs84(nav.north_m, nav.east_m)
        home = None
        if ap.home_ned is not None:
            home = ap.frame.to_wgs84(*ap.home_ned)
        res = ap.last_result
        g = ap.guidance
        events = ap.events
        new = tuple(events[self._events_seen:]) if len(events) > self._events_seen else ()
        self._events_seen = len(events)
        maps = ap.maps
        log = getattr(g, "reached_log", ())
        seen = self._reached_seen[1] if self._reached_seen[0] is g else 0     # a new mission: its own log
        reached = tuple(log[seen:])
        self._reached_seen = (g, len(log))
        return VehicleSnapshot(
            time_s=t_s, mode=ap.mode.name, armed=bool(ap.armed),
            nav_valid=bool(nav is not None and nav.valid), lat_deg=lat, lon_deg=lon,
            heading_rad=nav.heading_rad if nav is not None else 0.0,
            yaw_rate_rps=nav.yaw_rate_rps if nav is not None else 0.0,
            surge_mps=nav.surge_mps if nav is not None else 0.0,
            sway_mps=nav.sway_mps if nav is not None else 0.0,
            pos_std_m=nav.pos_std_m if nav is not None else math.inf,
            fix=ap.last_fix, setpoint=res.setpoint if res is not None else None,
            waypoint_index=int(g.index), waypoints_total=int(g.waypoints_total),
            mission_complete=bool(ap.mission_complete), mission_name=ap.mission.name,
            pulses_us=tuple(res.pulses.pulse_us) if res is not None else tuple(ap.neutral_pulses.pulse_us),
            thrust_n=tuple(res.thrust.thrust_n) if res is not None else tuple(0.0 for _ in maps),
            max_thrust_n=max((m.max_forward_n for m in maps), default=1.0),
            battery_v=ap.battery_v, low_voltage_v=ap.vessel.battery.low_voltage_threshold_v,
            battery_a=getattr(ap, "battery_a", None), battery_mah=getattr(ap, "battery_mah", None),
            home=home, health=ap.health,
            actuator_connected=None if ap.actuator is None else bool(getattr(ap.actuator, "connected", True)),
            prearm_failures=tuple(ap.prearm_failures(t_s)) if with_prearm else None,
            fence_present=bool(getattr(ap, "fences", ())),
            fence_breached="geofence" in getattr(ap.failsafe, "active", {}),
            new_events=new, mag_warn_deg=float(ap.vessel.sensors.mag.online.warn_consistency_deg),
            reached=reached, mission_cleared=bool(getattr(ap, "mission_cleared", False)),
            home_ned=None if ap.home_ned is None else (float(ap.home_ned[0]), float(ap.home_ned[1])),
            origin=(ap.frame.origin_lat_deg, ap.frame.origin_lon_deg)
            if (nav is not None and nav.valid) or ap.home_ned is not None else None)
