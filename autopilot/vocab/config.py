"""Vessel and mission configuration: schemas, loading and validation.

Units follow the keys: `_m`, `_kg`, `_deg`, `_mps`, `_us`, `_n`, `_v`, `_t` (tesla), `_s`, `_hz`.
Hydrodynamic coefficients use Fossen's sign convention: added mass and damping derivatives are <= 0.
Positions on the vessel are body FRD in metres from the centre of gravity (x forward, y starboard).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from autopilot.vocab.failsafe_config import FailsafeConfig
from autopilot.vocab.schema import ConfigError as ConfigError  # raised by every loader here: part of its contract
from autopilot.vocab.schema import build, param

# The presets (vessels/, missions/, gazebo/): the repository's config/, which autopilot/presets links to, so an
# installed wheel carries them as package data and `vessel: foka` resolves on a Pi as in a checkout.
CONFIG_DIR = (Path(__file__).parents[1] / "presets").resolve()
# A trajectory's reference stays within this distance of the mission's first waypoint (north and east) [m]: the
# mission frame is a flat local one, and a path is sampled every 0.1 m (20 km is 2e5 samples).
MAX_OFFSET_M = 20000.0


# --------------------------------------------------------------------------------------------- vessel
@dataclass(frozen=True, kw_only=True)
class HullConfig:
    length_m: float = param(unit="m", min=0.1, max=50)
    beam_m: float = param(unit="m", min=0.05, max=20)
    mass_kg: float = param(unit="kg", min=0.1, max=1e5)
    iz_kgm2: float = param(unit="kg*m^2", min=1e-3, max=1e7, doc="yaw moment of inertia about the CG")
    x_udot: float = param(unit="kg", max=0.0, doc="surge added mass X_u_dot (<= 0)")
    y_vdot: float = param(unit="kg", max=0.0)
    n_rdot: float = param(unit="kg*m^2", max=0.0)
    x_u: float = param(unit="kg/s", max=0.0, doc="linear surge damping X_u (<= 0)")
    y_v: float = param(unit="kg/s", max=0.0)
    n_r: float = param(unit="kg*m^2/s", max=0.0)
    x_uu: float = param(unit="kg/m", max=0.0, doc="quadratic surge damping X_u|u| (<= 0)")
    y_vv: float = param(unit="kg/m", max=0.0)
    n_rr: float = param(unit="kg*m^2", max=0.0)
    max_speed_mps: float = param(unit="m/s", min=0.05, max=20, doc="fastest speed a mission may ask for")


@dataclass(frozen=True, kw_only=True)
class WindLoadConfig:
    """Relative-wind load model (Fossen): tau = 0.5 rho V_rw^2 [c_x A_F cos, c_y A_L sin, c_n A_L L sin 2g]."""

    area_frontal_m2: float = param(unit="m^2", min=0.0, max=1e3)
    area_lateral_m2: float = param(unit="m^2", min=0.0, max=1e3)
    cx: float = param(0.5, min=0.0, max=3.0)
    cy: float = param(0.7, min=0.0, max=3.0)
    cn: float = param(0.08, min=0.0, max=1.0)
    air_density_kgpm3: float = param(1.225, unit="kg/m^3", min=0.5, max=2.0)


@dataclass(frozen=True, kw_only=True)
class ThrustTableConfig:
    """Bench thrust table at one battery voltage: pulse width -> thrust (negative = reverse)."""

    voltage_v: float = param(unit="V", min=1.0, max=60.0)
    pulse_us: Tuple[float, ...] = param(unit="us", min=500, max=2500)
    thrust_n: Tuple[float, ...] = param(unit="N", min=-5000, max=5000)

    def validate(self) -> None:
        if len(self.pulse_us) != len(self.thrust_n):
            raise ValueError(f"thrust_n: has {len(self.thrust_n)} entries but pulse_us has {len(self.pulse_us)}")
        if len(self.pulse_us) < 3:
            raise ValueError("pulse_us: needs at least 3 points")
        if any(b <= a for a, b in zip(self.pulse_us, self.pulse_us[1:])):
            raise ValueError("pulse_us: must be strictly increasing")
        if any(b < a for a, b in zip(self.thrust_n, self.thrust_n[1:])):
            raise ValueError("thrust_n: must not decrease as the pulse grows")
        if max(self.thrust_n) <= 0.0:
            raise ValueError("thrust_n: no positive thrust anywhere in the table; the thrusters could never push "
                             "the boat ahead")


@dataclass(frozen=True, kw_only=True)
class AzimuthConfig:
    """A thruster that turns about the vertical (a pod): its angle is measured from body +x, positive when the
    thrust vector points to starboard (FRD, clockwise seen from above); 0 = pushing straight ahead.
    The angle reaches the sim and Gazebo backends; a servo output for the boat (GPIO, pulse per degree) is not
    built yet, so the hw backend refuses a vessel with pods."""
    max_deg: float = param(45.0, unit="deg", min=1.0, max=90.0, doc="angle limit either way")
    slew_dps: float = param(60.0, unit="deg/s", min=1.0, max=2000.0, doc="fastest the pod turns")
    time_constant_s: float = param(0.1, unit="s", min=0.0, max=5.0, doc="servo lag behind the commanded angle "
                                                                       "(plant only)")


@dataclass(frozen=True, kw_only=True)
class ThrusterConfig:
    name: str = param(doc="label used in logs and topics")
    type: str = param(choices=("t200", "u5", "ideal"),
                      doc="t200: Blue Robotics tables; u5: vessel's thrust_table; ideal: linear in pulse")
    x_m: float = param(unit="m", min=-50, max=50, doc="position forward of the CG (FRD)")
    y_m: float = param(unit="m", min=-50, max=50, doc="position to starboard of the CG (FRD)")
    gpio: int = param(-1, min=-1, max=53, doc="BCM GPIO number of the ESC signal (-1: not wired)")
    pulse_min_us: int = param(1100, unit="us", min=500, max=2500)
    pulse_neutral_us: int = param(1500, unit="us", min=500, max=2500)
    pulse_max_us: int = param(1900, unit="us", min=500, max=2500)
    reverse: bool = param(False, doc="thruster mounted or wired so a forward pulse pushes backward")
    trim_us: int = param(0, unit="us", min=-100, max=100, doc="added to every pulse after mapping")
    time_constant_s: float = param(0.15, unit="s", min=0.0, max=5.0, doc="first-order lag of thrust")
    max_forward_n: float = param(0.0, unit="N", min=0.0, max=5000, doc="ideal type only: full-forward thrust")
    max_reverse_n: float = param(0.0, unit="N", min=0.0, max=5000, doc="ideal type only: full-reverse thrust")
    arming_time_s: float = param(3.0, unit="s", min=0.0, max=30.0, doc="neutral held before other pulses")
    slew_us_per_s: float = param(2000.0, unit="us/s", min=10.0, max=1e5, doc="pulse slew-rate limit")
    thrust_scale: float = param(1.0, min=0.2, max=5.0, doc="this motor's thrust over its table's (0.9: pushes 10 % "
                                                            "less); `autopilot identify hull` measures it")
    azimuth: Optional[AzimuthConfig] = param(None, doc="present: a pod that turns (angle limit, slew, lag)")

    def validate(self) -> None:
        if not self.pulse_min_us < self.pulse_neutral_us < self.pulse_max_us:
            raise ValueError("pulse_neutral_us: must lie strictly between pulse_min_us and pulse_max_us")
        if self.type == "ideal" and self.max_forward_n <= 0:
            raise ValueError("max_forward_n: must be > 0 for an ideal thruster")


# Loaded-pack voltage per cell below which the low-battery failsafe acts when low_voltage_v is left out.
CELL_CUTOFF_V = {"li-ion": 3.3, "lipo": 3.5, "lifepo4": 2.9, "lead-acid": 1.9}


@dataclass(frozen=True, kw_only=True)
class BatteryConfig:
    voltage_v: float = param(unit="V", min=3.0, max=60.0, doc="nominal pack voltage used by the thrust maps")
    cells: int = param(4, min=1, max=14)
    chemistry: str = param("li-ion", choices=("li-ion", "lipo", "lifepo4", "lead-acid", "other"))
    low_voltage_v: Optional[float] = param(None, unit="V", min=0.0, max=60.0,
                                           doc="failsafe threshold; 0 disables; left out: cells x the "
                                               "chemistry's cut-off per cell (CELL_CUTOFF_V)")
    follow_voltage: bool = param(True, doc="the thrust maps follow the measured pack voltage (low-pass filtered, "
                                           "rebuilt at most 4 times a second); false: built once at voltage_v")
    capacity_ah: Optional[float] = param(None, unit="Ah", min=0.01, max=10000.0,
                                         doc="the simulator drains a pack of this capacity (hil/sim/battery.py); "
                                             "left out: the simulated pack stays at voltage_v")
    internal_resistance_ohm: float = param(0.05, unit="ohm", min=0.0, max=10.0,
                                           doc="the simulated pack's sag per ampere")
    hotel_current_a: float = param(0.5, unit="A", min=0.0, max=100.0,
                                   doc="the simulated electronics' draw besides the thrusters")

    @property
    def low_voltage_threshold_v(self) -> float:
        """The low-battery failsafe's threshold [V]: low_voltage_v, or cells x CELL_CUTOFF_V when left out."""
        if self.low_voltage_v is not None:
            return self.low_voltage_v
        return self.cells * CELL_CUTOFF_V[self.chemistry]

    def validate(self) -> None:
        if self.low_voltage_v is None and self.chemistry not in CELL_CUTOFF_V:
            raise ValueError("low_voltage_v: required for chemistry 'other' (or 0 to disable the low-battery "
                             "failsafe on purpose)")
        if self.low_voltage_threshold_v >= self.voltage_v:
            how = ("" if self.low_voltage_v is not None else
                   f" ({self.cells} cells x {CELL_CUTOFF_V[self.chemistry]:g} V for {self.chemistry}; check cells)")
            raise ValueError(f"low_voltage_v: {self.low_voltage_threshold_v:g} V{how} is not below the pack's "
                             f"nominal {self.voltage_v:g} V: the low-battery failsafe would fire at once")


@dataclass(frozen=True, kw_only=True)
class GnssConfig:
    port: str = param("/dev/serial0")
    baud: int = param(9600, choices=None, min=4800, max=921600)
    rate_hz: float = param(1.0, unit="Hz", min=0.1, max=10.0)
    cep_m: float = param(2.0, unit="m", min=0.01, max=100, doc="receiver's horizontal CEP (50 %)")
    speed_noise_mps: float = param(0.1, unit="m/s", min=0.0, max=10)
    bias_sigma_m: float = param(1.0, unit="m", min=0.0, max=100, doc="Gauss-Markov bias std (realistic noise)")
    bias_tau_s: float = param(60.0, unit="s", min=0.1, max=1e5, doc="Gauss-Markov bias correlation time")
    antenna_x_m: float = param(0.0, unit="m", min=-50, max=50)
    antenna_y_m: float = param(0.0, unit="m", min=-50, max=50)
    stale_timeout_s: float = param(2.5, unit="s", min=0.1, max=60, doc="no fix for this long = no position")


@dataclass(frozen=True, kw_only=True)
class ImuConfig:
    bus: int = param(1, min=0, max=20, doc="I2C bus number (/dev/i2c-N)")
    address_xg: int = param(0x6B, min=0x03, max=0x77)
    address_mag: int = param(0x1E, min=0x03, max=0x77)
    rate_hz: float = param(119.0, unit="Hz", min=10, max=952)
    mount_rpy_deg: Tuple[float, ...] = param((0.0, 0.0, 0.0), unit="deg", min=-180, max=180, length=3,
                                             doc="roll, pitch, yaw of the sensor axes in the body frame")
    gyro_noise_rps: float = param(0.002, unit="rad/s", min=0.0, max=1.0, doc="white noise std per sample")
    gyro_bias_rps: float = param(0.005, unit="rad/s", min=0.0, max=1.0, doc="turn-on bias std")
    accel_noise_mps2: float = param(0.05, unit="m/s^2", min=0.0, max=10.0)
    accel_bias_mps2: float = param(0.05, unit="m/s^2", min=0.0, max=10.0)
    accel_range_g: int = param(4, unit="g", min=2, max=16, doc="accelerometer full scale: 2, 4, 8 or 16")
    gyro_range_dps: int = param(245, unit="deg/s", min=245, max=2000, doc="gyro full scale: 245, 500 or 2000")

    def validate(self) -> None:
        if self.accel_range_g not in (2, 4, 8, 16):
            raise ValueError(f"accel_range_g: must be 2, 4, 8 or 16, got {self.accel_range_g}")
        if self.gyro_range_dps not in (245, 500, 2000):
            raise ValueError(f"gyro_range_dps: must be 245, 500 or 2000, got {self.gyro_range_dps}")


@dataclass(frozen=True, kw_only=True)
class MagOnlineConfig:
    """Continuous calibration while underway (estimation/heading/mag_online.py, autopilot/calibration/mag_watch.py)."""

    enabled: bool = param(True, doc="refit hard/soft iron from turns; apply only what the GNSS course confirms")
    min_arc_deg: float = param(150.0, unit="deg", min=90.0, max=360.0,
                               doc="heading span of turning a hard-iron update needs")
    max_consistency_deg: float = param(4.0, unit="deg", min=0.5, max=45.0,
                                       doc="an update must bring magnetic vs GNSS-course heading within this RMS")
    min_speed_mps: float = param(0.5, unit="m/s", min=0.1, max=20.0,
                                 doc="GNSS course is a heading reference only above this speed")
    warn_consistency_deg: float = param(8.0, unit="deg", min=1.0, max=90.0,
                                        doc="mag_consistency above this: a warning (a new magnetic disturbance)")
    save: bool = param(True, doc="write accepted updates over calibration_file, the old file kept as .prev")
    fallback_speed_mps: float = param(0.0, unit="m/s", min=0.0, max=20.0,
                                      doc="failsafe: above this GNSS speed, while mag_consistency exceeds "
                                          "warn_consistency_deg, the EKF's heading reference is the GNSS course "
                                          "minus crab instead of the magnetometer (0: off)")


@dataclass(frozen=True, kw_only=True)
class MagOnWaterConfig:
    """First-day calibration on the water (mode CALIBRATE_ON_WATER, autopilot/modes/calibrate_on_water.py)."""

    speed_mps: float = param(0.5, unit="m/s", min=0.1, max=5.0,
                             doc="speed through the water the open-loop surge force is sized for (vessel drag model)")
    turn_rate_dps: float = param(12.0, unit="deg/s", min=2.0, max=60.0,
                                 doc="yaw rate of the circles (to starboard), held on the gyro")
    turns: float = param(2.0, min=1.0, max=5.0, doc="full circles to fly, counted on the gyro")
    box_m: float = param(50.0, unit="m", min=5.0, max=1000.0,
                         doc="side of the square around the start the circles must stay in (else HOLD); the "
                             "circles drift with the water: 14-18 m in 0.2 m/s of current at the defaults")
    timeout_s: float = param(240.0, unit="s", min=10.0, max=3600.0,
                             doc="the circles must be done within this time (else HOLD)")


@dataclass(frozen=True, kw_only=True)
class MagConfig:
    rate_hz: float = param(40.0, unit="Hz", min=0.625, max=80)
    noise_t: float = param(0.3e-6, unit="T", min=0.0, max=1e-4)
    hard_iron_t: Tuple[float, ...] = param((0.0, 0.0, 0.0), unit="T", min=-1e-3, max=1e-3, length=3,
                                           doc="simulated hard-iron offset (sim only)")
    soft_iron: Tuple[float, ...] = param((1, 0, 0, 0, 1, 0, 0, 0, 1), min=-5, max=5, length=9,
                                         doc="simulated soft-iron matrix, row-major 3x3 (sim only)")
    declination_deg: float = param(0.0, unit="deg", min=-180, max=180, doc="true = magnetic + declination")
    field_t: float = param(50e-6, unit="T", min=1e-6, max=1e-4, doc="local field strength (e.g. from WMM)")
    inclination_deg: float = param(60.0, unit="deg", min=-90, max=90, doc="local dip angle, down positive")
    calibration_file: Optional[str] = param(None, doc="YAML written by `autopilot calibrate mag`")
    range_gauss: int = param(4, unit="gauss", min=4, max=16, doc="magnetometer full scale: 4, 8, 12 or 16")
    online: MagOnlineConfig = param(default_factory=MagOnlineConfig)
    on_water: MagOnWaterConfig = param(default_factory=MagOnWaterConfig)

    def validate(self) -> None:
        if self.range_gauss not in (4, 8, 12, 16):
            raise ValueError(f"range_gauss: must be 4, 8, 12 or 16, got {self.range_gauss}")


@dataclass(frozen=True, kw_only=True)
class SensorsConfig:
    gnss: GnssConfig = param(default_factory=GnssConfig)
    imu: ImuConfig = param(default_factory=ImuConfig)
    mag: MagConfig = param(default_factory=MagConfig)


@dataclass(frozen=True, kw_only=True)
class HeadingControlConfig:
    """Heading PID by pole placement on the yaw model (Iz - N_rdot) r_dot - N_r r = tau_r."""

    omega_n_rps: float = param(unit="rad/s", min=0.01, max=20, doc="closed-loop natural frequency")
    zeta: float = param(1.0, min=0.1, max=3.0, doc="closed-loop damping ratio")
    integral_time_s: float = param(20.0, unit="s", min=0.0, max=1e4, doc="0 disables the integral")
    integral_limit_frac: float = param(0.3, min=0.0, max=1.0, doc="integral term as fraction of max moment")
    adaptive: bool = param(False, doc="design the gains on the yaw response the boat shows (autopilot/"
                                      "yaw_adaptation.py), not only the vessel file's")
    reference: str = param("none", choices=("none", "third_order"),
                           doc="third_order: the heading setpoint goes through paper 002's third-order reference "
                               "model (reference_omega_rps, zeta 1), whose rate is fed forward; none: as guidance "
                               "gives it")
    reference_omega_rps: float = param(0.6, unit="rad/s", min=0.05, max=10.0)
    structure: str = param("pid", choices=("pid", "cascade"),
                           doc="pid: the heading PID gives the yaw moment; cascade: a heading P loop "
                               "(cascade_gain_per_s) asks the yaw-rate loop of control.velocity for a turn rate, "
                               "and surge speed goes through the velocity controller too")
    cascade_gain_per_s: float = param(0.7, unit="1/s", min=0.05, max=10.0,
                                      doc="turn rate asked per radian of heading error (cascade)")


@dataclass(frozen=True, kw_only=True)
class SpeedControlConfig:
    """Surge PI with model feed-forward; e = u - u_d, tau_u = (m - X_udot)(udot_d - kp e - ki int e) - ..."""

    kp_per_s: float = param(1.0, unit="1/s", min=0.0, max=100)
    ki_per_s2: float = param(0.1, unit="1/s^2", min=0.0, max=100)
    accel_limit_mps2: float = param(0.5, unit="m/s^2", min=0.01, max=20, doc="ramp of the speed setpoint")


@dataclass(frozen=True, kw_only=True)
class VelocityControlConfig:
    """Surge-speed and yaw-rate control through the hull model (autopilot/control/velocity.py), used by the
    VELOCITY mode. Defaults: paper 002's PI with model feed-forward (kp = 2 lambda, ki = lambda^2 with
    lambda_u = 1.4, lambda_r = 3.5) and its reference models (w_u = 1.3, w_r = 3 rad/s, zeta 1)."""

    kp_u_per_s: float = param(2.8, unit="1/s", min=0.0, max=100)
    ki_u_per_s2: float = param(1.96, unit="1/s^2", min=0.0, max=1000)
    kp_r_per_s: float = param(7.0, unit="1/s", min=0.0, max=100)
    ki_r_per_s2: float = param(12.25, unit="1/s^2", min=0.0, max=1000)
    reference_model: bool = param(True, doc="second-order reference models; false: follow the command as given")
    omega_u_rps: float = param(1.3, unit="rad/s", min=0.01, max=20)
    omega_r_rps: float = param(3.0, unit="rad/s", min=0.01, max=20)
    zeta: float = param(1.0, min=0.1, max=3.0)
    max_yaw_rate_dps: float = param(30.0, unit="deg/s", min=1.0, max=360.0,
                                    doc="largest yaw rate a command may ask for (full steering on a gamepad)")


@dataclass(frozen=True, kw_only=True)
class AllocationConfig:
    priority: str = param("yaw", choices=("yaw", "surge"),
                          doc="what keeps its demand when thrust saturates (yaw: as far as a surge between 0 and "
                              "the demand allows, autopilot/control/allocation.py)")
    allow_reverse: bool = param(True, doc="false: thrusters never push backward")


@dataclass(frozen=True, kw_only=True)
class ControlConfig:
    loop_rate_hz: float = param(50.0, unit="Hz", min=5.0, max=200.0)
    heading: HeadingControlConfig = param(default_factory=lambda: HeadingControlConfig(omega_n_rps=0.8))
    speed: SpeedControlConfig = param(default_factory=SpeedControlConfig)
    velocity: VelocityControlConfig = param(default_factory=VelocityControlConfig)
    allocation: AllocationConfig = param(default_factory=AllocationConfig)
    lookahead_hull_lengths: float = param(3.0, min=0.5, max=20, doc="default LOS lookahead")


@dataclass(frozen=True, kw_only=True)
class VesselConfig:
    name: str = param()
    description: str = param("")
    hull: HullConfig = param()
    wind: WindLoadConfig = param()
    thrusters: Tuple[ThrusterConfig, ...] = param()
    u5_table: Optional[ThrustTableConfig] = param(None, doc="ApisQueen U5 bench table (for type u5)")
    battery: BatteryConfig = param()
    sensors: SensorsConfig = param(default_factory=SensorsConfig)
    control: ControlConfig = param(default_factory=ControlConfig)
    failsafe: FailsafeConfig = param(default_factory=FailsafeConfig, doc="see autopilot/vocab/failsafe_config.py")
    validated_against: str = param("", doc="the runs or trials this model was checked against (log directory, "
                                           "date); empty: never validated, and `check` warns")
    source_file: str = param("", doc="set by the loader")

    def validate(self) -> None:
        if len(self.thrusters) not in (2, 4):
            raise ValueError(f"thrusters: must list 2 or 4 thrusters, got {len(self.thrusters)}")
        if any(t.type == "u5" for t in self.thrusters) and self.u5_table is None:
            raise ValueError("u5_table: required when a thruster has type u5")
        names = [t.name for t in self.thrusters]
        if len(set(names)) != len(names):
            raise ValueError("thrusters: names must be unique")
        if max(abs(t.y_m) for t in self.thrusters) < 1e-3:
            raise ValueError("thrusters: differential drive needs thrusters off the centre line (y_m)")
        pods = [t for t in self.thrusters if t.azimuth is not None]
        if pods and len(pods) != len(self.thrusters):
            raise ValueError(f"thrusters: {pods[0].name!r} has azimuth but "
                             f"{next(t.name for t in self.thrusters if t.azimuth is None)!r} has not; the "
                             f"allocator turns all pods together, so give every thruster the same azimuth block")
        if pods and len({(t.azimuth.max_deg, t.azimuth.slew_dps) for t in pods if t.azimuth is not None}) != 1:
            raise ValueError("thrusters: every pod's azimuth max_deg and slew_dps must be equal (the allocator "
                             "turns them together)")
        if pods and max(t.x_m for t in pods) >= 0.0:
            raise ValueError("thrusters: azimuth pods must sit aft of the CG (x_m < 0); the allocator steers "
                             "with stern pods")
        wired: Dict[int, str] = {}
        for t in self.thrusters:
            if t.gpio >= 0 and t.gpio in wired:
                raise ValueError(f"thrusters: {wired[t.gpio]!r} and {t.name!r} are both on gpio {t.gpio}; "
                                 f"each ESC needs its own pin")
            wired.setdefault(t.gpio, t.name)


# --------------------------------------------------------------------------------------------- mission
@dataclass(frozen=True, kw_only=True)
class PointConfig:
    """A point given either as WGS84 (lat_deg, lon_deg) or in the mission's local frame (north_m, east_m)."""

    lat_deg: Optional[float] = param(None, unit="deg", min=-90, max=90)
    lon_deg: Optional[float] = param(None, unit="deg", min=-180, max=180)
    north_m: Optional[float] = param(None, unit="m", min=-1e6, max=1e6)
    east_m: Optional[float] = param(None, unit="m", min=-1e6, max=1e6)
    speed_mps: Optional[float] = param(None, unit="m/s", min=0.0, max=20, doc="speed on the leg to this point")

    def validate(self) -> None:
        geo = self.lat_deg is not None or self.lon_deg is not None
        local = self.north_m is not None or self.east_m is not None
        if geo == local:
            raise ValueError("lat_deg: give either lat_deg/lon_deg or north_m/east_m, not both or neither")
        if geo and (self.lat_deg is None or self.lon_deg is None):
            raise ValueError("lon_deg: lat_deg and lon_deg go together")
        if local and (self.north_m is None or self.east_m is None):
            raise ValueError("east_m: north_m and east_m go together")


@dataclass(frozen=True, kw_only=True)
class AnchorConfig:
    lat_deg: float = param(unit="deg", min=-90, max=90)
    lon_deg: float = param(unit="deg", min=-180, max=180)


@dataclass(frozen=True, kw_only=True)
class StartConfig:
    """Where the simulator launches the boat (and, in the field, the expected launch point)."""

    point: PointConfig = param()
    heading_deg: Optional[float] = param(None, unit="deg", min=-360, max=360,
                                         doc="initial heading; default: toward the first waypoint")


@dataclass(frozen=True, kw_only=True)
class GuidanceConfig:
    law: str = param("ilos", choices=("heading", "los", "ilos", "xtrack_pid"))
    lookahead_m: Optional[float] = param(None, unit="m", min=0.1, max=1000,
                                         doc="LOS lookahead Delta; default: vessel's lookahead_hull_lengths")
    sigma: float = param(0.5, min=0.0, max=10.0, doc="ILOS integral gain (0 = plain LOS)")
    lookahead_min_turn_radii: float = param(1.0, min=0.0, max=10.0,
                                            doc="los/ilos and RTL: the lookahead is at least this many of the "
                                                "boat's turning radii (at the mission's speed on half its yaw "
                                                "moment, autopilot/guidance/turning.py), and at least 4.5 x speed / "
                                                "the heading loop's omega_n; 0 flies lookahead_m as given")
    crab_compensation: bool = param(
        True,
        doc="los/ilos and RTL: steer the course over ground, i.e. the heading "
        "is the LOS course less the crab angle of the estimated drift "
        "(current and wind's push; with the hull's own sway when that is "
        "slow against the heading loop, autopilot/guidance/path_following.py); false "
        "gives the textbook heading-based law",
    )
    wheel_over: bool = param(True, doc="los/ilos/xtrack_pid: begin a turn of 20-135 deg before its waypoint, so "
                                       "that the boat, turning at the rate it measures and drifting with the "
                                       "current it estimates, comes out of the turn on the next leg")
    kp_rad_per_m: float = param(0.05, min=0.0, max=10.0, doc="xtrack_pid: heading correction per metre")
    ki_rad_per_ms: float = param(0.002, min=0.0, max=10.0)
    kd_rad_s_per_m: float = param(0.1, min=0.0, max=100.0)
    max_correction_deg: float = param(60.0, unit="deg", min=1.0, max=90.0,
                                      doc="xtrack_pid: largest heading offset from the path")


@dataclass(frozen=True, kw_only=True)
class ExcitationSegmentConfig:
    """One open-loop segment of an identification mission. Forces are fractions of the allocator's full
    forward surge force (`surge`) and full yaw moment (`yaw`), so one mission suits any boat."""

    type: str = param(choices=("surge_steps", "turns", "sine", "square", "prbs"),
                      doc="surge_steps: surge at each of `levels`, no yaw; turns: surge with +yaw then -yaw "
                          "(Nomoto); sine / square: surge with yaw x sin / sign(sin) of period_s; prbs: surge "
                          "and yaw switching at random every bit_s")
    duration_s: float = param(20.0, unit="s", min=2.0, max=600.0, doc="each step / each turn / the whole segment")
    surge: float = param(0.5, min=0.0, max=1.0)
    yaw: float = param(0.5, min=0.0, max=1.0)
    levels: Tuple[float, ...] = param((0.3, 0.6, 1.0), min=0.0, max=1.0)
    period_s: float = param(10.0, unit="s", min=1.0, max=120.0)
    bit_s: float = param(1.5, unit="s", min=0.2, max=30.0)


DEFAULT_EXCITATION = (ExcitationSegmentConfig(type="surge_steps", duration_s=20.0),
                      ExcitationSegmentConfig(type="turns", duration_s=15.0, surge=0.5, yaw=0.6),
                      ExcitationSegmentConfig(type="sine", duration_s=30.0, surge=0.6, yaw=1.0, period_s=10.0),
                      ExcitationSegmentConfig(type="square", duration_s=30.0, surge=0.6, yaw=1.0, period_s=6.0),
                      ExcitationSegmentConfig(type="prbs", duration_s=60.0, surge=1.0, yaw=1.0, bit_s=1.5))


@dataclass(frozen=True, kw_only=True)
class IdentificationConfig:
    """AUTO flies open-loop excitation around the mission's first waypoint instead of following waypoints."""

    box_m: float = param(60.0, unit="m", min=10.0, max=2000.0,
                         doc="side of the square box, centred on the first waypoint, that the boat stays in; a "
                             "segment reaching its edge is cut short and the boat returns to the centre")
    sets: int = param(2, min=1, max=10, doc="repetitions of the segments (the first fits, the next validate); "
                                            "each draws its own PRBS")
    seed: int = param(1, min=0, max=2**31 - 1, doc="seed of the PRBS draws")
    segments: Tuple[ExcitationSegmentConfig, ...] = param(DEFAULT_EXCITATION)
    settle_s: float = param(5.0, unit="s", min=0.0, max=120.0,
                            doc="heading hold at the centre before each segment, for a steady start")


@dataclass(frozen=True, kw_only=True)
class TrajectoryConfig:
    """AUTO tracks a time-parametrised reference (autopilot/guidance/trajectory.py) instead of following waypoints.

    Positions are metres north (x) and east (y) of the mission's first waypoint, t in seconds from the start of
    tracking (paper 000 Table 6's references: sinusoid x = 10 sin 0.06t, y = 6 sin 0.12t; circle radius 10,
    0.055 rad/s; spiral radius 10 + 0.1t, 0.05 rad/s). The boat first goes to the reference's start point and
    turns along it; the clock starts then."""

    kind: str = param(choices=("sinusoid", "circle", "spiral", "points", "csv", "path"),
                      doc="sinusoid: x = amp_x sin(omega_x t + phase_x), y = amp_y sin(omega_y t + phase_y) "
                          "(a Lissajous figure); circle: radius_m, omega_rps (+ clockwise); spiral: radius "
                          "radius_m + growth_mps t; points: `points` with arrival times; csv: file of t,north,east; "
                          "path: no times, `path_points` followed at speed_mps (paper 000 5.4)")
    duration_s: float = param(240.0, unit="s", min=1.0, max=36000.0, doc="reference time flown")
    amp_x_m: float = param(10.0, unit="m", min=0.0, max=5000.0)
    amp_y_m: float = param(6.0, unit="m", min=0.0, max=5000.0)
    omega_x_rps: float = param(0.06, unit="rad/s", min=0.0, max=10.0)
    omega_y_rps: float = param(0.12, unit="rad/s", min=0.0, max=10.0)
    phase_x_rad: float = param(0.0, unit="rad", min=-10.0, max=10.0)
    phase_y_rad: float = param(0.0, unit="rad", min=-10.0, max=10.0)
    radius_m: float = param(10.0, unit="m", min=0.5, max=5000.0)
    omega_rps: float = param(0.055, unit="rad/s", min=-10.0, max=10.0)
    growth_mps: float = param(0.1, unit="m/s", min=0.0, max=10.0)
    points: Tuple[Tuple[float, ...], ...] = param((), doc="kind points: [t_s, north_m, east_m] rows, t increasing")
    csv_file: str = param("", doc="kind csv: path (relative to the mission file) of rows t_s,north_m,east_m")
    path_points: Tuple[Tuple[float, ...], ...] = param((), doc="kind path: [north_m, east_m] points, a straight "
                                                              "line for two, a spline through three or more")
    speed_mps: float = param(0.7, unit="m/s", min=0.05, max=20.0, doc="kind path: speed along the path")
    path_law: str = param("control_point", choices=("control_point", "los", "ilos"),
                          doc="kind path: the control-point law (paper 000 5.4), or line of sight / integral line "
                              "of sight on the path's local tangent (the mission's guidance.lookahead_m and sigma) "
                              "through the heading and speed loops")
    max_lateral_accel_mps2: float = param(0.3, unit="m/s^2", min=0.01, max=10.0,
                                          doc="kind path: the speed drops before bends to keep U^2 kappa below this")
    control_point_m: float = param(0.0, unit="m", min=0.0, max=100.0,
                                   doc="distance a ahead of the CG of the point that tracks the reference; "
                                       "0: one hull length")
    gain_per_s: float = param(0.6, unit="1/s", min=0.01, max=10.0, doc="position error gain K")
    integral_gain_per_s2: float = param(0.09, unit="1/s^2", min=0.0, max=10.0,
                                        doc="position error integral gain Ki (K^2/4 by default: no overshoot "
                                            "from it); it takes a steady sideways push; 0 disables")
    max_lag_m: float = param(0.0, unit="m", min=0.0, max=1000.0,
                             doc="behind the reference by more than this, its clock slows (the boat cannot keep "
                                 "up: it follows the path instead of chasing); 0: two hull lengths")

    def validate(self) -> None:
        if self.kind == "points":
            if len(self.points) < 2:
                raise ValueError("points: kind points needs at least two [t_s, north_m, east_m] rows")
            for i, row in enumerate(self.points):
                if len(row) != 3:
                    raise ValueError(f"points[{i}]: must be [t_s, north_m, east_m], got {len(row)} numbers")
            if any(b[0] <= a[0] for a, b in zip(self.points, self.points[1:])):
                raise ValueError("points: the times must increase")
        if self.kind == "path":
            if len(self.path_points) < 2 or any(len(r) != 2 for r in self.path_points):
                raise ValueError("path_points: kind path needs at least two [north_m, east_m] points")
        if self.kind == "csv" and not self.csv_file:
            raise ValueError("csv_file: kind csv needs the file of t_s,north_m,east_m rows")
        if "\0" in self.csv_file:
            raise ValueError("csv_file: contains a NUL character; give a file name")
        for key, rows, first in (("points", self.points, 1), ("path_points", self.path_points, 0)):
            for i, row in enumerate(rows):
                if any(abs(x) > MAX_OFFSET_M for x in row[first:first + 2]):
                    raise ValueError(f"{key}[{i}]: more than {MAX_OFFSET_M / 1000:g} km from the first waypoint "
                                     f"north or east")


@dataclass(frozen=True, kw_only=True)
class MissionConfig:
    name: str = param()
    description: str = param("")
    anchor: Optional[AnchorConfig] = param(None, doc="origin of the local frame; default: first waypoint")
    start: Optional[StartConfig] = param(None)
    waypoints: Tuple[PointConfig, ...] = param()
    guidance: GuidanceConfig = param(default_factory=GuidanceConfig)
    cruise_speed_mps: float = param(unit="m/s", min=0.05, max=20)
    acceptance_radius_m: float = param(unit="m", min=0.1, max=500)
    on_complete: str = param("loiter", choices=("loiter", "hold", "rtl"))
    loiter_radius_m: float = param(2.0, unit="m", min=0.5, max=500)
    loiter_astern: bool = param(True, doc="LOITER may hold the stern into the drift rather than turn round "
                                          "(never when the vessel's allocation.allow_reverse is false)")
    geofence: Tuple[PointConfig, ...] = param((), doc="polygon the boat must stay inside (>= 3 points)")
    identification: Optional[IdentificationConfig] = param(None, doc="fly an identification (autopilot "
                                                                     "identify hull) around the first waypoint")
    trajectory: Optional[TrajectoryConfig] = param(None, doc="track a timed reference about the first waypoint")
    source_file: str = param("")

    def validate(self) -> None:
        if len(self.waypoints) < 1:
            raise ValueError("waypoints: needs at least one waypoint")
        if self.anchor is None and any(p.lat_deg is None for p in self.waypoints):
            raise ValueError("anchor: required when waypoints are given in metres (north_m/east_m)")
        if self.geofence and len(self.geofence) < 3:
            raise ValueError("geofence: needs at least 3 points")
        from autopilot.vocab.fence_limits import fence_size_problem
        too_many = fence_size_problem(len(self.geofence))
        if too_many is not None:
            raise ValueError(f"geofence: {too_many}")
        if self.identification is not None and self.trajectory is not None:
            raise ValueError("trajectory: a mission is either an identification or a trajectory, not both")


# --------------------------------------------------------------------------------------------- loading
def read_yaml(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Read a YAML mapping; any failure is a ConfigError naming the file (autopilot.vocab.safe_read: regular files
    only, 1 MiB at most, duplicate keys refused, no content quoted)."""
    from autopilot.vocab.safe_read import load_yaml_text, read_user_text
    path = Path(path)
    data = load_yaml_text(read_user_text(path), path)
    if not isinstance(data, dict):
        raise ConfigError(path, "", "must be a YAML mapping at the top level")
    return data


def resolve_vessel_path(name_or_file: Union[str, "os.PathLike[str]"]) -> Path:
    """A preset name (`foka`) or a path to a vessel YAML; a Path is always a path, whatever its name."""
    if not isinstance(name_or_file, str):
        return Path(name_or_file)
    p = Path(name_or_file)
    if p.suffix in (".yaml", ".yml") or os.sep in name_or_file:
        return p
    return CONFIG_DIR / "vessels" / f"{name_or_file}.yaml"


def vessel_presets() -> Tuple[str, ...]:
    """The preset names `resolve_vessel_path` takes (the vessel files shipped in the presets folder), sorted."""
    return tuple(sorted(p.stem for p in (CONFIG_DIR / "vessels").glob("*.yaml")))


def _recognisably(cls: type, data: Dict[str, Any], path: object, what: str) -> None:
    """Refuse, without naming any of its keys, a mapping that has none of `cls`'s required keys: it is some
    other file (a secrets file, another program's config) and its key names are not ours to echo."""
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if not set(map(str, data)) & set(required):
        raise ConfigError(path, "", f"not a {what} (it has none of the keys {', '.join(required)})")


def load_vessel(name_or_file: Union[str, "os.PathLike[str]"], *, all_errors: bool = False) -> VesselConfig:
    """Read and validate a vessel preset or file; ConfigError on the first mistake, or with `all_errors` on
    every schema mistake at once (schema.ConfigErrors when there are several)."""
    path = resolve_vessel_path(name_or_file)
    data = read_yaml(path)
    _recognisably(VesselConfig, data, path, "vessel file")
    data.pop("source_file", None)
    vessel = build(VesselConfig, data, str(path), all_errors=all_errors)
    return dataclasses.replace(vessel, source_file=str(path))


def load_mission(path: Union[str, "os.PathLike[str]"], *, all_errors: bool = False) -> MissionConfig:
    """Read and validate a mission YAML; ConfigError as load_vessel raises it (a geofence over
    autopilot.safety.geofence.MAX_FENCE_VERTICES first, before the rest is built)."""
    data = read_yaml(path)
    _recognisably(MissionConfig, data, path, "mission file")
    data.pop("source_file", None)
    fence = data.get("geofence")
    if isinstance(fence, list):                  # refused by size before a point of it is built
        from autopilot.vocab.fence_limits import fence_size_problem
        too_many = fence_size_problem(len(fence))
        if too_many is not None:
            raise ConfigError(path, "geofence", too_many)
    mission = build(MissionConfig, data, str(path), all_errors=all_errors)
    return dataclasses.replace(mission, source_file=str(path))



def default_lookahead_m(vessel: VesselConfig, mission: MissionConfig) -> float:
    if mission.guidance.lookahead_m is not None:
        return mission.guidance.lookahead_m
    return vessel.control.lookahead_hull_lengths * vessel.hull.length_m


def mag_is_undistorted(vessel: VesselConfig) -> bool:
    """True when the vessel file's simulated magnetometer has no hard or soft iron (its calibration is the identity)."""
    m = vessel.sensors.mag
    return all(h == 0.0 for h in m.hard_iron_t) and tuple(m.soft_iron) == (1, 0, 0, 0, 1, 0, 0, 0, 1)
