"""The narrow types that flow through one control cycle.

Frames: local NED (north, east, down) in metres about a fixed origin, body FRD (forward, right, down).
Heading is the compass heading in radians, clockwise from true north, wrapped to [-pi, pi).
Times are seconds on the runner's clock (simulated, wall or /clock), never read inside the core.

sensors (GpsFix, ImuSample, MagSample) -> estimator -> NavState
NavState + mission + mode -> guidance -> GuidanceSetpoint
  -> control -> Wrench -> allocation -> ThrustCommand -> thrust map -> PulseCommand -> actuator backend
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class GpsFix:
    """One merged GNSS epoch (GGA + RMC).

    `valid` is False when the receiver reports no position (RMC status V or GGA quality 0); such a fix
    carries time and counters but its position must not be used.
    """

    time_s: float                 # runner clock at reception [s]
    lat_deg: float                # WGS84 latitude, north positive [deg]
    lon_deg: float                # WGS84 longitude, east positive [deg]
    alt_m: float = 0.0            # altitude above mean sea level [m]
    fix_quality: int = 1          # GGA quality: 0 none, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float, 6 DR
    sats: int = 0                 # satellites used
    hdop: float = 1.0             # horizontal dilution of precision [-]
    sog_mps: Optional[float] = None   # speed over ground [m/s] (NMEA gives knots; converted)
    cog_rad: Optional[float] = None   # course over ground, clockwise from true north [rad]
    pos_std_m: float = 1.7        # 1-sigma horizontal position error per axis [m]
    utc: Optional[str] = None     # ISO 8601 UTC time of the epoch, when the receiver gave one
    valid: bool = True
    refused: str = ""             # why the driver marked a receiver's position invalid as implausible ("jump",
                                  # "backward", "frozen", "calendar"); "" when valid or the receiver had none


@dataclass(frozen=True)
class ImuSample:
    """Accelerometer and gyro in the vessel body frame FRD."""

    time_s: float
    accel_mps2: Tuple[float, float, float]   # specific force, FRD [m/s^2]; level and still reads (0, 0, -9.81)
    gyro_rps: Tuple[float, float, float]     # angular rate about FRD axes [rad/s]; +z = turning to starboard
    stale: bool = False                      # True when the driver repeated the last good sample after a fault


@dataclass(frozen=True)
class MagSample:
    """Magnetometer in the vessel body frame FRD, calibration already applied by the driver if configured."""

    time_s: float
    field_t: Tuple[float, float, float]      # magnetic flux density, FRD [T]
    stale: bool = False


@dataclass(frozen=True)
class NavState:
    """The estimator's belief about the vessel."""

    time_s: float
    north_m: float
    east_m: float
    heading_rad: float            # compass heading, clockwise from true north, wrapped to [-pi, pi)
    surge_mps: float              # body-forward speed through the ground [m/s]
    sway_mps: float               # body-starboard speed [m/s]
    yaw_rate_rps: float           # heading rate, positive turning to starboard [rad/s]
    pos_std_m: float = 0.0        # sqrt of the larger eigenvalue of the position covariance [m]
    heading_std_rad: float = 0.0
    valid: bool = True            # False until the estimator has a position and a heading

    @property
    def speed_mps(self) -> float:
        return float(np.hypot(self.surge_mps, self.sway_mps))


@dataclass(frozen=True)
class GuidanceSetpoint:
    """What guidance asks of the controllers."""

    heading_rad: float            # desired heading [rad]
    speed_mps: float              # desired surge speed [m/s]; 0 means stop
    xte_m: float = 0.0            # signed cross-track error of the active leg, + = right of the path [m]
    waypoint_index: int = 0       # index of the waypoint being approached
    distance_to_waypoint_m: float = 0.0
    yaw_rate_ff_rps: float = 0.0  # feed-forward yaw rate (guidance-derived), 0 if unused


@dataclass(frozen=True)
class VelocitySetpoint:
    """What the VELOCITY mode asks of the velocity controller (autopilot/control/velocity.py)."""

    surge_mps: float              # commanded surge speed through the ground, + forward [m/s]
    yaw_rate_rps: float           # commanded yaw rate, + turning to starboard [rad/s]
    prefilter: bool = True        # through the reference models; False for a command that is already smooth
                                  # and fed back (trajectory tracking: their lag would sit inside its loop)


@dataclass(frozen=True)
class Wrench:
    """Generalised force asked of the thrusters, body frame FRD."""

    surge_n: float                # force along +x forward [N]
    yaw_nm: float                 # moment about +z down [N*m]; positive turns to starboard


@dataclass(frozen=True)
class ThrustCommand:
    """Thrust per thruster in the vessel config's order [N]; positive pushes along the thruster's direction.

    `angle_rad` is set for azimuth pods only: each pod's direction from body +x [rad], positive when the thrust
    vector points to starboard (FRD). None: fixed thrusters pushing along +x (or pods holding their angle).
    """

    thrust_n: Tuple[float, ...]
    angle_rad: Optional[Tuple[float, ...]] = None


@dataclass(frozen=True)
class PulseCommand:
    """ESC pulse width per thruster in the vessel config's order [us]."""

    pulse_us: Tuple[int, ...]


@dataclass
class SensorBatch:
    """Everything a backend delivered since the previous cycle, each sample with its own time stamp."""

    gps: List[GpsFix] = field(default_factory=list)
    imu: List[ImuSample] = field(default_factory=list)
    mag: List[MagSample] = field(default_factory=list)
    battery_v: Optional[float] = None     # pack voltage [V]; None: not measured this cycle (or no longer)
    battery_a: Optional[float] = None     # pack current [A], positive discharging; None: not measured
    battery_mah: Optional[float] = None   # charge drawn since the monitor started [mAh]; None: not measured
