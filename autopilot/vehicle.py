"""The vehicle: one `step(t_s, batch)` per control cycle, used by every backend.

sensors -> estimator -> NavState -> mode (guidance) -> controllers -> Wrench -> allocation -> thrust (N)
        -> thrust maps -> pulse widths (us)

The thrusters are driven only while armed and while the active mode has what it needs (a valid estimate for
navigating modes); in every other case the cycle returns zero thrust and neutral pulses.

Commands (any thread that owns the autopilot, between cycles; times on the runner's clock):
  arm(t_s) -> ArmResult            refused, with one reason per failed check, unless the pre-arm checks pass
                                   (autopilot/safety/prearm.py: all of them in a navigating mode, the ESC output in
                                   HOLD/MANUAL); `prearm_failures(t_s)` lists them without arming
  disarm(t_s, reason); load_mission(mission, prepared=None)
  prepare_mission(mission)         the slow part of load_mission (its checks, the fences), from any thread:
                                   reads only the vessel and the frame; load_mission(mission, prepared) then swaps
                                   it in quickly
  set_mode(name, reason)           MANUAL, HOLD, LOITER, AUTO, RTL, VELOCITY, GUIDED, CALIBRATE_ON_WATER; ValueError
                                   when unknown or forbidden by an active failsafe; takes effect on the next cycle; a
                                   navigating mode chosen while armed stays neutral until the navigation checks pass
  operator_command(t_s, throttle, steering)   MANUAL's input in [-1, 1]; also an operator heartbeat
  operator_heartbeat(t_s)          the operator's station is alive (link-loss failsafe)
  guided_position(t_s, n, e, ...)  GUIDED's position target [m, local NED] (autopilot/modes/guided.py); with
                                   stage=True also from another mode, for the next entry into GUIDED
  guided_velocity(t_s, kind, a, b) GUIDED's velocity target (body, ground NED or heading+speed); ValueError when
                                   not in GUIDED, for a non-finite value, or (positions) outside the geofence
  report_overrun(t_s, late_s)      the runner missed a cycle's deadline (overrun failsafe)
  set_actuator(sink)               what `connected` is read from (ESC-disconnect failsafe, pre-arm check)

Events: each mode change (kind "mode", with its reason), each failsafe (kind "failsafe", `failsafe` and `action`).
AUTO ends as the mission's `on_complete` says: loiter at the last waypoint, hold, or rtl (home, then loiter).

Without a magnetometer calibration, arming in a navigating mode is refused except in CALIBRATE_ON_WATER
(autopilot/modes/calibrate_on_water.py, which needs every other navigation check). Its accepted fit is installed
in the sensor path (the estimator takes its heading afresh), written over the calibration file if any (old one
kept, autopilot/calibration/store.py), logged as a "calibration" Event, and AUTO follows; a refused fit, leaving
the box, a time-out or a failsafe: HOLD. The calibrations in use: `self.compass` (autopilot/calibration/compass.py).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Tuple

from autopilot.calibration.compass import CompassCalibration, fit_figures
from autopilot.control.azimuth_allocation import make_allocator
from autopilot.control.heading_speed import HeadingController, SpeedController
from autopilot.control.reference_models import HeadingReference
from autopilot.control.velocity import VelocityController
from autopilot.guidance.path_following import MissionGuidance, mission_frame, point_to_ned
from autopilot.guidance.trajectory import ControlPointTracker, make_path, make_reference
from autopilot.guidance.turn_rate_watch import WARN_SCALE, TurnRateWatch
from autopilot.guidance.turning import guidance_lookahead_m, lookahead_floor_reason, raised_lookahead_m
from autopilot.interfaces import NavigationFilter, ThrusterOutput
from autopilot.modes.auto import AutoMode
from autopilot.modes.base import NEUTRAL, Mode
from autopilot.modes.calibrate_on_water import CalibrateOnWaterMode
from autopilot.modes.guided import GuidedMode
from autopilot.modes.heading_hold import HeadingHoldMode
from autopilot.modes.hold import HoldMode
from autopilot.modes.identification import IdentificationMode
from autopilot.modes.loiter import LoiterMode
from autopilot.modes.manual import ManualMode
from autopilot.modes.rtl import RtlMode
from autopilot.modes.trajectory import PathFollowMode, TrajectoryMode
from autopilot.modes.velocity import VelocityMode
from autopilot.safety.actions import SWITCH_TO, Action
from autopilot.safety.failsafe import FailsafeManager, Trigger
from autopilot.safety.geofence import Geofence, geofence_of
from autopilot.safety.prearm import MAKES_THE_MAG_CALIBRATION, ArmResult, PrearmInputs, navigating, prearm_failures
from autopilot.safety.thruster_health import DEAD, OK, WEAK, ThrusterHealth
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import MissionConfig, VesselConfig
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.modes import ModeName
from autopilot.vocab.schema import ConfigError
from autopilot.vocab.types import (
    GpsFix,
    GuidanceSetpoint,
    ImuSample,
    MagSample,
    NavState,
    PulseCommand,
    SensorBatch,
    ThrustCommand,
    Wrench,
)
from drivers.thrust_map import VoltageFollowingMaps, make_thrust_map
from estimation.navekf.model import IX_E, IX_N

if TYPE_CHECKING:
    from estimation.navekf.health import EstimatorHealth

ZERO_WRENCH = Wrench(0.0, 0.0)
# a pack voltage older than this is dropped (battery unknown): a backend that stopped measuring is not trusted
# with the last value it gave [s]
BATTERY_STALE_S = 5.0
CALIBRATE = ModeName.CALIBRATE_ON_WATER
ESC_TEST_MAX_FRACTION = 0.2     # the bench ESC test's throttle limit, of the pulse range from neutral
ESC_TEST_HOLD_S = 0.5           # a test command runs this long [s] unless renewed (the hold-to-run button)
ESC_TEST_MAX_HOLD_S = 10.0      # the longest a single test command may run [s] (MAV_CMD_DO_MOTOR_TEST's timeout)
# what a failsafe may report while CALIBRATE_ON_WATER flies without stopping it
_LEAVES_THE_MODE_ALONE = frozenset({Action.DISARM, Action.REPORT, Action.RECOVERED, Action.NONE})
GUIDED_MAX_RANGE_M = 20_000.0   # a GUIDED position target further than this from the boat is refused (the flat
#                                 local frame and a mistyped coordinate both end well before)
MODEL_WARN_NIS = 3.0       # GNSS velocity NIS per dof above which the vessel model is reported as mispredicting


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
    applied: Optional[ThrustCommand] = None   # thrust of the pulses sent (thrust map, dead zone, whole us) [N]
    # what the estimator was given this cycle, for the run log's record of its inputs (autopilot log replay):
    estimator_step: int = -1                  # its step count before this one (0: the filter's first step)
    estimator_thrust: Optional[ThrustCommand] = None   # the thrust its model was given [N] (None: unknown)
    mag_consistency_deg: Optional[float] = None   # RMS magnetic minus GNSS-course heading at speed, last minute
    estimator_batch: Optional[SensorBatch] = None  # the batch the estimator got, when it is not the one passed
    #                                               to step() (the continuous mag calibration corrected it)


@dataclass(frozen=True)
class Event:
    time_s: float
    kind: str          # "mode", "arm", "disarm", "mission", "warning", "failsafe", "calibration", "clock"
    message: str
    failsafe: str = ""     # kind "failsafe": what happened (gps-loss, imu-loss, geofence, ...)
    action: str = ""       # kind "failsafe": what the vehicle did (see autopilot/safety/failsafe.py)
    figures: Optional[dict] = None   # kind "calibration" (and its warnings): the before/after figures


@dataclass(frozen=True)
class PreparedMission:
    """Autopilot.prepare_mission's result: `mission`'s check problems (what the pre-arm check shows) and its
    geofences, made against `vessel`."""

    mission: MissionConfig
    vessel: VesselConfig
    problems: Tuple[str, ...]
    fences: Tuple[Geofence, ...]


class Autopilot:
    """Owns the estimator, the modes, the failsafes and the control chain for one vessel and one mission.

    `mag_calibration`: the magnetometer calibration the sensor path applies, when the backend provides it
    (the simulator knows its magnetometer's distortion exactly); None reads the vessel's
    sensors.mag.calibration_file, whose presence the pre-arm checks require.
    `actuator`: an object with a `connected` property (the backend's ESC output), see set_actuator.
    `mag_calibration_path`: where accepted continuous-calibration updates are written
    (autopilot/calibration/mag_watch.py);
    None: the vessel's sensors.mag.calibration_file, if any; False: nowhere (a simulation).
    """

    def __init__(self, vessel: VesselConfig, mission: MissionConfig,
                 estimator: Optional[NavigationFilter] = None, frame: Optional[LocalFrame] = None,
                 battery_v: Optional[float] = None, on_event: Optional[Callable[[Event], None]] = None,
                 mag_calibration=None, actuator=None, mag_calibration_path=None):
        self.vessel = vessel
        fs = vessel.failsafe
        self.frame = frame or mission_frame(mission)
        if estimator is None:
            from estimation.navekf.ekf import EkfTuning, NavigationEKF
            estimator = NavigationEKF(vessel, self.frame,
                                      tuning=EkfTuning(gps_reacquire_s=fs.gnss.glitch_reject_s))
        self.estimator = estimator
        voltage = battery_v if battery_v is not None else vessel.battery.voltage_v
        self.maps = [make_thrust_map(t, vessel, voltage) for t in vessel.thrusters]
        # the maps follow the measured pack (battery.follow_voltage): a drained pack pushes less per microsecond
        self.map_follower = VoltageFollowingMaps(vessel, voltage) if vessel.battery.follow_voltage else None
        self.allocator = make_allocator(vessel, self.maps)
        self.heading_ctl = HeadingController(vessel, self.allocator.max_yaw_nm)
        h = vessel.hull
        self.turn_watch = TurnRateWatch.for_hull(h, self.allocator.max_yaw_nm)
        self.speed_ctl = SpeedController(vessel, self.allocator.max_surge_n, self.allocator.min_surge_n)
        self.velocity_ctl = VelocityController(vessel, self.allocator.max_surge_n, self.allocator.min_surge_n,
                                               self.allocator.max_yaw_nm)
        hc = vessel.control.heading
        self.heading_ref = HeadingReference(hc.reference_omega_rps) if hc.reference == "third_order" else None
        self.neutral_pulses = PulseCommand(tuple(m.neutral_pulse_us for m in self.maps))
        self.zero_thrust = ThrustCommand(tuple(0.0 for _ in self.maps))
        self.events: list[Event] = []
        self._on_event = on_event
        self.armed = False
        self.home_ned: Optional[tuple[float, float]] = None   # RTL's destination (see set_home)
        self.home_locked = False                 # set by an operator (set_home): arming leaves it where it is
        self.nav: Optional[NavState] = None
        self.health: Optional[EstimatorHealth] = None   # the estimator's latest health report (failsafe check rate)
        self.last_fix: Optional[GpsFix] = None
        self._esc_test: Optional[tuple] = None          # (thruster index, pulse [us], until [s]) while disarmed
        self.last_imu: Optional[ImuSample] = None        # the sensor path's latest samples (the web page's
        self.last_mag: Optional[MagSample] = None        # sensor readings; the field calibrated), None until then
        self.battery_v: Optional[float] = None   # the pack [V]; None: unknown (never or no longer measured)
        self.battery_a: Optional[float] = None   # its current [A], positive discharging
        self.battery_mah: Optional[float] = None  # charge drawn since the monitor started [mAh]
        self._battery_t = -math.inf              # when the backend last gave a voltage [s]
        self.actuator = actuator
        self._last_thrust: Optional[ThrustCommand] = None
        self._estimator_steps = 0                # estimator.step calls so far (CycleResult.estimator_step)
        self.last_result: Optional[CycleResult] = None   # the latest cycle's outcome (telemetry reads it)
        self._thrust_delivered = True            # the actuator delivers what is commanded (see _check)
        self._gap_thrust_unknown = False         # a clock jump: nobody knows what the thrusters did across it
        self._pending_mode: Optional[tuple[ModeName, str]] = None
        self.mission_cleared = False          # a ground station cleared the mission: AUTO has nothing to fly
        self._enter_pending = False              # a navigating mode waits for the navigation checks
        self._waiting_reported = ""
        self._after_brake = Action.HOLD
        self._next_check = -math.inf
        self._next_disarmed_health = -math.inf
        self.failsafe = FailsafeManager(fs, low_voltage_v=vessel.battery.low_voltage_threshold_v,
                                        stop_decel_mps2=vessel.control.speed.accel_limit_mps2)
        self.compass = CompassCalibration(vessel, estimator, mag_calibration, mag_calibration_path, self._emit)
        self.thruster_watch: Optional[ThrusterHealth] = None   # per-thruster effectiveness (failsafe rate)
        if fs.thruster.enabled and len(vessel.thrusters) >= 2:
            try:
                self.thruster_watch = ThrusterHealth.for_vessel(
                    vessel, self.allocator.max_yaw_nm, max(m.max_forward_n for m in self.maps))
            except ValueError as e:
                raise ConfigError(vessel.source_file, "failsafe.thruster", str(e)) from None
        self._model_warned = False
        self._drift_seen = 0
        self._turn_warned = False

        self.manual = ManualMode(self.allocator.max_surge_n, self.allocator.min_surge_n, self.allocator.max_yaw_nm,
                                 fs.manual.timeout_s)
        self.velocity = VelocityMode(vessel.hull.max_speed_mps, self.velocity_ctl.max_yaw_rate_rps,
                                     fs.manual.timeout_s)
        # mission-dependent figures (speeds, radii, the guidance) are filled in by load_mission
        self.modes: dict[str, Mode] = {
            ModeName.MANUAL: self.manual,
            ModeName.HOLD: HoldMode(),
            ModeName.LOITER: LoiterMode(mission.loiter_radius_m, 0.5, drift_fn=self._drift_ne,
                                 drift_std_fn=self._drift_std_mps),
            ModeName.AUTO: AutoMode(None),
            ModeName.RTL: RtlMode(self._home, 0.5, 1.0, 1.0),
            ModeName.VELOCITY: self.velocity,
            ModeName.GUIDED: GuidedMode(LoiterMode(mission.loiter_radius_m, 0.5, drift_fn=self._drift_ne,
                                                   drift_std_fn=self._drift_std_mps),
                                        0.5, 1.0, 1.0, vessel.hull.max_speed_mps, self.velocity_ctl.max_yaw_rate_rps,
                                        fs.manual.timeout_s),
            ModeName.HEADING_HOLD: HeadingHoldMode(ModeName.HEADING_HOLD, fs.gnss.slow_speed_mps),
            ModeName.BRAKE: HeadingHoldMode(ModeName.BRAKE, 0.0),
            CALIBRATE: CalibrateOnWaterMode(vessel.sensors.mag.on_water, vessel, self.allocator.max_surge_n,
                                            self.allocator.max_yaw_nm),
        }
        self.mode: Mode = self.modes[ModeName.HOLD]
        self.load_mission(mission)

    @property
    def mag_watch(self):
        """The continuous magnetometer calibration (autopilot/calibration/mag_watch.py); None when it is off."""
        return self.compass.watch

    @property
    def installed_mag_calibration(self):
        """The calibration fitted on the water and applied to the samples before the estimator; None: none."""
        return self.compass.installed

    @property
    def mission_complete(self) -> bool:
        """Every waypoint reached, or on an identification or trajectory mission every segment or the whole
        reference flown."""
        auto = self.modes[ModeName.AUTO]
        return (auto.finished if isinstance(auto, (IdentificationMode, TrajectoryMode, PathFollowMode))
                else self.guidance.complete)

    # ------------------------------------------------------------------ commands
    def prepare_mission(self, mission: MissionConfig) -> "PreparedMission":
        """What load_mission needs of `mission` that takes time: check_mission's problems and the geofences
        (the mission's and the vessel's). Safe from any thread: it reads only the vessel and the local frame
        (fixed at start) and changes nothing; its result is immutable."""
        from autopilot.files.check import check_mission
        vessel = self.vessel
        problems = [str(p) for p in check_mission(mission, vessel)]
        fences = []
        if mission.geofence:
            try:
                fences.append(geofence_of(point_to_ned(p, self.frame) for p in mission.geofence))
            except ValueError:
                pass                        # check_mission reported it
        vessel_fence = vessel.failsafe.geofence.polygon
        if vessel_fence:
            try:
                vf = Geofence(self.frame.to_ned(p.lat_deg, p.lon_deg) for p in vessel_fence)
            except ValueError as e:
                problems.append(f"{vessel.source_file}: failsafe.geofence.polygon: {e}")
            else:
                fences.append(vf)
                for i, p in enumerate(mission.waypoints):
                    wp = point_to_ned(p, self.frame)
                    if not vf.contains(*wp):
                        problems.append(f"{mission.source_file or '<mission>'}: waypoints[{i}]: outside the "
                                        f"vessel's geofence (failsafe.geofence.polygon) by "
                                        f"{-vf.signed_distance_m(*wp):.1f} m")
        return PreparedMission(mission, vessel, tuple(problems), tuple(fences))

    def load_mission(self, mission: MissionConfig, prepared: Optional["PreparedMission"] = None) -> None:
        """Replace the mission; the local frame stays (it was fixed when the autopilot started). `prepared`:
        prepare_mission(mission) done beforehand, off the control thread (used when it is for this mission and
        the vessel it was made with is still the one flown; otherwise the work is done here)."""
        if prepared is None or prepared.mission is not mission or prepared.vessel is not self.vessel:
            prepared = self.prepare_mission(mission)
        self.mission = mission
        self.mission_cleared = False
        self.guidance = MissionGuidance(mission, self.vessel, self.frame, max_yaw_nm=self.allocator.max_yaw_nm)
        cruise = min(mission.cruise_speed_mps, self.vessel.hull.max_speed_mps)
        old_auto = self.modes[ModeName.AUTO]
        auto: Mode
        if mission.identification is not None:
            auto = IdentificationMode(mission.identification, self.guidance.waypoints_ned[0],
                                      self.allocator.max_surge_n, self.allocator.max_yaw_nm, cruise)
        elif mission.trajectory is not None:
            auto = self._trajectory_mode(mission, cruise)
        else:
            auto = old_auto if isinstance(old_auto, AutoMode) else AutoMode(None)
            auto.guidance = self.guidance
        if self.mode is old_auto and auto is not old_auto:
            self.mode = auto                      # a mission replaced while flying AUTO: the new kind takes over
            if self.nav is not None:
                auto.enter(self.nav.time_s, self.nav)
        self.modes[ModeName.AUTO] = auto
        self._mission_figures(mission)
        self.fences = list(prepared.fences)
        self.failsafe.fences = self.fences
        self.config_problems = list(prepared.problems)
        self._emit(self._now(), "mission", f"mission {mission.name!r} loaded ({len(mission.waypoints)} waypoints)")
        raised = raised_lookahead_m(self.vessel, mission, self.allocator.max_yaw_nm)
        if raised:
            why = lookahead_floor_reason(self.vessel, mission, self.allocator.max_yaw_nm)
            self._emit(self._now(), "mission", f"LOS lookahead {raised[0]:.1f} m raised to {raised[1]:.1f} m: "
                                               f"{why} (guidance.lookahead_min_turn_radii: 0 keeps it)")

    def _trajectory_mode(self, mission: MissionConfig, cruise_mps: float):
        """AUTO for a trajectory or path mission; a reference that cannot be made (an unreadable CSV) is a
        ConfigError."""
        tc, length = mission.trajectory, self.vessel.hull.length_m
        assert tc is not None                 # called for a trajectory mission only
        tracker = ControlPointTracker(tc.control_point_m or length, tc.gain_per_s, self.vessel.hull.max_speed_mps,
                                      self.velocity_ctl.max_yaw_rate_rps, ki_per_s2=tc.integral_gain_per_s2)
        try:
            if tc.kind == "path":
                mode = PathFollowMode(make_path(tc, self.guidance.waypoints_ned[0]), tracker,
                                      arrive_m=max(1.5, length), law=tc.path_law,
                                      lookahead_m=self.guidance.lookahead_m,
                                      sigma=mission.guidance.sigma)
                mode.crab_hull_sway = self.guidance.crab_hull_sway
                return mode
            reference = make_reference(tc, mission.source_file)
        except ValueError as e:
            raise ConfigError(mission.source_file or "<mission>", "trajectory", str(e)) from None
        return TrajectoryMode(reference, self.guidance.waypoints_ned[0], tracker, tc.max_lag_m or 2.0 * length,
                              cruise_mps, arrive_m=max(1.5, length), lead_in_m=max(6.0, 5.0 * length))

    def _mission_figures(self, mission: MissionConfig) -> None:
        """The speeds and radii the modes take from the mission (and the vessel)."""
        cruise = min(mission.cruise_speed_mps, self.vessel.hull.max_speed_mps)
        loiter = self.modes[ModeName.LOITER]
        assert isinstance(loiter, LoiterMode)
        loiter.radius_m = mission.loiter_radius_m
        loiter.astern = mission.loiter_astern and self.vessel.control.allocation.allow_reverse
        loiter.max_speed_mps = min(0.5 * cruise, self.vessel.hull.max_speed_mps)
        rtl = self.modes[ModeName.RTL]
        assert isinstance(rtl, RtlMode)
        rtl.speed_mps = cruise
        rtl.lookahead_m = self.guidance.lookahead_m
        rtl.crab_compensation = mission.guidance.crab_compensation
        rtl.crab_hull_sway = self.guidance.crab_hull_sway
        rtl.arrive_m = max(mission.acceptance_radius_m, mission.loiter_radius_m)
        guided = self.modes[ModeName.GUIDED]
        assert isinstance(guided, GuidedMode)
        for attr in ("radius_m", "astern", "max_speed_mps"):
            setattr(guided.loiter, attr, getattr(loiter, attr))
        guided.speed_mps = cruise
        guided.leg.lookahead_m = self.guidance.lookahead_m
        guided.leg.crab_compensation = mission.guidance.crab_compensation
        guided.leg.crab_hull_sway = self.guidance.crab_hull_sway
        guided.leg.arrive_m = mission.acceptance_radius_m
        heading_hold = self.modes[ModeName.HEADING_HOLD]
        assert isinstance(heading_hold, HeadingHoldMode)
        heading_hold.speed_mps = min(self.vessel.failsafe.gnss.slow_speed_mps, cruise)

    def retune(self, vessel: VesselConfig, mission: MissionConfig) -> None:
        """Fly on with new gains, speeds, radii and failsafe thresholds (autopilot/files/tunables.py) without losing
        the mode, the arming, the estimate, the mission's progress or the controllers' integrals. The hull,
        thrusters, sensors and waypoints must be those of the running files: only the tunables differ."""
        self.vessel = self.compass.vessel = vessel
        self.failsafe.cfg = vessel.failsafe
        self.manual.timeout_s = self.velocity.timeout_s = vessel.failsafe.manual.timeout_s
        self._guided.timeout_s = vessel.failsafe.manual.timeout_s
        fresh = HeadingController(vessel, self.allocator.max_yaw_nm)
        for attr in ("integral_limit_nm", "_w", "_z", "_ti"):
            setattr(self.heading_ctl, attr, getattr(fresh, attr))
        self.heading_ctl.redesign()          # the new bandwidth on the yaw model learned so far
        lim = self.heading_ctl.integral_limit_nm
        self.heading_ctl.integral_nm = max(-lim, min(lim, self.heading_ctl.integral_nm))
        sc = vessel.control.speed
        self.speed_ctl.kp, self.speed_ctl.ki, self.speed_ctl.accel_limit_mps2 = \
            sc.kp_per_s, sc.ki_per_s2, sc.accel_limit_mps2
        self.mission = mission
        g = self.guidance
        g.mission = mission
        g.lookahead_m = guidance_lookahead_m(vessel, mission, self.allocator.max_yaw_nm)
        g.sigma = mission.guidance.sigma if g.law == "ilos" else 0.0
        self._mission_figures(mission)

    def set_actuator(self, actuator: ThrusterOutput) -> None:
        """The thruster output (autopilot.interfaces.ThrusterOutput) the pre-arm checks and the failsafes read."""
        self.actuator = actuator
        self._esc_outages_seen = self._esc_outages()

    def _esc_outages(self) -> int:
        """The actuator's outage count (ThrusterOutput.outages), 0 for one that keeps none."""
        return int(getattr(self.actuator, "outages", 0) or 0)

    def set_mag_calibration(self, calibration) -> None:
        """The backend vouches for the magnetometer's calibration (it applies one, or its sensor needs none)."""
        self.compass.backend_vouches(calibration)

    def esc_test(self, t_s: float, index: int, fraction: float, hold_s: float = ESC_TEST_HOLD_S) -> None:
        """The bench ESC test, disarmed only: thruster `index` (vessel order) at `fraction` of its pulse range
        from neutral (+ forward, - astern, |fraction| <= ESC_TEST_MAX_FRACTION) for `hold_s` [s, > 0, at most
        ESC_TEST_MAX_HOLD_S], every other thruster at neutral, then back to neutral; call again to keep it
        running (a hold-to-run button), 0 to stop at once. ValueError (the reason) when armed, for an unknown
        thruster, a value that is not a finite number or is beyond the limit, or when the ESC output cannot
        vouch for its pulses (not connected, still arming)."""
        if not (isinstance(hold_s, (int, float)) and math.isfinite(hold_s) and 0.0 < hold_s <= ESC_TEST_MAX_HOLD_S):
            raise ValueError(f"the test time must be over 0 and at most {ESC_TEST_MAX_HOLD_S:g} s, got {hold_s!r}")
        if self.armed:
            raise ValueError("the ESC test runs only while disarmed")
        if not isinstance(index, int) or not 0 <= index < len(self.maps):
            raise ValueError(f"there is no thruster {index!r} (the vessel has {len(self.maps)})")
        if not math.isfinite(fraction) or abs(fraction) > ESC_TEST_MAX_FRACTION + 1e-9:
            raise ValueError(f"the test throttle must be within +-{ESC_TEST_MAX_FRACTION:.0%} of the range, got "
                             f"{fraction}")
        if self.actuator is not None and not bool(getattr(self.actuator, "connected", True)):
            raise ValueError("the ESC output is not connected")
        if self.actuator is not None and not bool(self.actuator.ready(t_s)):
            raise ValueError("the ESCs are still in their arming sequence (neutral only)")
        m = self.maps[index]
        end = m.pulse_max_us if fraction >= 0 else m.pulse_min_us
        pulse = int(round(m.neutral_pulse_us + abs(fraction) * (end - m.neutral_pulse_us)))
        name = self.vessel.thrusters[index].name
        if fraction == 0.0:
            if self._esc_test is not None:
                self._esc_test = (self._esc_test[0], self._esc_test[1], t_s)    # ends at the next cycle
            return
        if self._esc_test is None or self._esc_test[:2] != (index, pulse):
            self._emit(t_s, "warning", f"ESC test: {name} at {fraction:+.0%} ({pulse} us) while held")
        self._esc_test = (index, pulse, t_s + hold_s)

    def prearm_failures(self, t_s: float, mode: Optional[str] = None) -> list:
        """Why arming in `mode` (default: the current or requested mode) would be refused; empty: it would not."""
        name = mode or (self._pending_mode[0] if self._pending_mode else self.mode.name)
        return prearm_failures(self._prearm_inputs(t_s, navigating(name), mode=name),
                               self.vessel.failsafe)

    def arm(self, t_s: float) -> ArmResult:
        """Arm if the pre-arm checks pass; the result says why not. Arming when armed does nothing."""
        if self.armed:
            return ArmResult(True)
        self._esc_test = None                         # a bench test never carries over into flight
        if self._pending_mode is not None:
            name, reason = self._pending_mode
            self._pending_mode = None
            self._switch(t_s, self.nav, name, reason)
        reasons = self.prearm_failures(t_s)
        if reasons:
            self._emit(t_s, "warning", f"arming refused in {self.mode.name}: " + "; ".join(reasons))
            return ArmResult(False, tuple(reasons))
        self.armed = True
        self.failsafe.reset(t_s)
        self._next_check = -math.inf
        self._esc_outages_seen = self._esc_outages()      # outages before arming are the pre-arm check's
        nav = self.nav
        if nav is not None and nav.valid and not self.home_locked:
            self.home_ned = (nav.north_m, nav.east_m)     # home is where it armed (ArduPilot's rule)
        self._emit(t_s, "arm", f"armed in {self.mode.name}" +
                   (f"; home {self.home_ned[0]:.1f} m N, {self.home_ned[1]:.1f} m E" if self.home_ned else ""))
        if self.mode.name == CALIBRATE and self.compass.problem:
            self._emit(t_s, "warning", f"armed in {CALIBRATE} without a magnetometer calibration "
                                       f"({self.compass.problem}): the circles are flown on the gyro and GNSS, "
                                       f"the heading is not used until the fit is accepted")
        if not self.vessel.validated_against:
            self._emit(t_s, "warning", f"vessel model {self.vessel.name!r} was never validated against data "
                                       f"(validated_against is empty): fly a test run before relying on it")
        if nav is not None:
            self.mode.enter(t_s, nav)
        self._enter_pending = False
        self.heading_ctl.reset()
        self.speed_ctl.reset()
        return ArmResult(True)

    def disarm(self, t_s: float, reason: str) -> None:
        self.armed = False
        self._thrust_delivered = True            # neutral is what a disarmed boat's thrusters deliver
        self._enter_pending = False
        self._emit(t_s, "disarm", f"disarmed: {reason}")

    def set_mode(self, name: str, reason: str) -> None:
        """Ask for a mode; it takes effect at the start of the next cycle (which has a fresh estimate)."""
        name = name.upper()
        mode = self.modes.get(name)
        if mode is None or not mode.name.needs.selectable:
            known = ", ".join(n for n in self.modes
                              if ModeName.parse(n).needs.selectable)
            raise ValueError(f"unknown mode {name!r}; known: {known}")
        name = mode.name
        if self.armed:
            why = self.failsafe.blocked(name)
            if why:
                raise ValueError(f"mode {name} refused: {why}")
        if name == ModeName.RTL and self.home_ned is None:
            raise ValueError("mode RTL refused: no home yet (it is the first good estimate, then the position at "
                             "arming)")
        if name == ModeName.AUTO and self.mission_cleared:
            raise ValueError("mode AUTO refused: no mission (it was cleared); upload one")
        self._pending_mode = (name, reason)

    def clear_mission(self, reason: str) -> None:
        """Nothing to fly until the next load_mission (a ground station's MISSION_CLEAR_ALL): AUTO is refused,
        and a boat in AUTO (or about to be) goes to HOLD at the next cycle. The mission stays loaded underneath
        (its geofence, cruise speed and acceptance radius still apply, as the tunables read them)."""
        self.mission_cleared = True
        pending = self._pending_mode[0] if self._pending_mode else None
        if self.mode.name == ModeName.AUTO or pending == ModeName.AUTO:
            self._pending_mode = (ModeName.HOLD, reason)

    def operator_command(self, t_s: float, throttle: float, steering: float) -> None:
        """Throttle and steering in [-1, 1] (+ forward, + turn to starboard): MANUAL's force and moment, and in
        VELOCITY a speed and a turn rate. Counts as a heartbeat."""
        self.manual.command(t_s, throttle, steering)
        if self.mode is self.velocity:
            self.velocity.sticks(t_s, throttle, steering)
        self.failsafe.operator_heartbeat(t_s)

    def velocity_command(self, t_s: float, surge_mps: float, yaw_rate_rps: float) -> None:
        """VELOCITY's surge speed [m/s] and yaw rate [rad/s, + starboard], clamped to the hull's top speed and
        control.velocity.max_yaw_rate_dps. Counts as a heartbeat. ValueError when not in VELOCITY (a stray
        stream must not wait to drive the boat when someone switches modes) or for a non-finite value."""
        if self.mode is self._guided:
            self.guided_velocity(t_s, "body", surge_mps, yaw_rate_rps)
            return
        if self.mode is not self.velocity:
            raise ValueError(f"velocity command refused: the mode is {self.mode.name}, not VELOCITY or GUIDED")
        self.velocity.command(t_s, surge_mps, yaw_rate_rps)
        self.failsafe.operator_heartbeat(t_s)

    @property
    def _guided(self) -> GuidedMode:
        mode = self.modes[ModeName.GUIDED]
        assert isinstance(mode, GuidedMode)
        return mode

    def _guided_or_pending(self) -> bool:
        pending = self._pending_mode[0] if self._pending_mode else None
        return pending == ModeName.GUIDED or (pending is None and self.mode is self._guided)

    @property
    def guided_target(self) -> Optional[tuple[tuple[float, float], Optional[float]]]:
        """GUIDED's position target being flown or about to be, ((north, east) [m, local NED], speed [m/s] or
        None: cruise); None without one (a velocity target, station keeping where it entered)."""
        return self._guided.position_target

    def guided_target_problem(self, north_m: float, east_m: float) -> Optional[str]:
        """Why a GUIDED position target [m, local NED] would be refused (None: it would be taken): not finite,
        outside a geofence (the mission's or the vessel's), or over GUIDED_MAX_RANGE_M from the boat."""
        if not (math.isfinite(north_m) and math.isfinite(east_m)):
            return f"the target must be finite numbers, got {north_m!r} m N, {east_m!r} m E"
        for fence in self.fences:
            if not fence.contains(north_m, east_m):
                return (f"the target {north_m:.1f} m N, {east_m:.1f} m E is outside the geofence by "
                        f"{-fence.signed_distance_m(north_m, east_m):.1f} m")
        nav = self.nav
        if nav is not None and nav.valid:
            far = math.hypot(north_m - nav.north_m, east_m - nav.east_m)
            if far > GUIDED_MAX_RANGE_M:
                return f"the target is {far / 1000:.1f} km away (at most {GUIDED_MAX_RANGE_M / 1000:g} km)"
        return None

    def guided_position(self, t_s: float, north_m: float, east_m: float, speed_mps: Optional[float] = None,
                        stage: bool = False) -> None:
        """GUIDED's position target [m, local NED frame of the mission] at `speed_mps` [m/s, > 0; None: the
        mission's cruise speed; clamped to the hull's top speed]: a leg from where the boat is, then station
        keeping there. In GUIDED (or with GUIDED requested) it replaces the target; `stage`: from any other mode,
        it is kept for the next entry into GUIDED (the caller asks for the mode). ValueError, with the reason,
        for a target guided_target_problem refuses, a speed that is not a positive number, or outside GUIDED
        without `stage`. Counts as a heartbeat."""
        why = self.guided_target_problem(north_m, east_m)
        if why is None and speed_mps is not None and not (math.isfinite(speed_mps) and speed_mps > 0):
            why = f"the speed must be a positive number of m/s, got {speed_mps!r}"
        if why is None and not stage and not self._guided_or_pending():
            why = f"the mode is {self.mode.name}, not GUIDED"
        if why is not None:
            raise ValueError(f"GUIDED target refused: {why}")
        if speed_mps is not None:
            speed_mps = min(speed_mps, self.vessel.hull.max_speed_mps)
        self._guided.set_position(north_m, east_m, speed_mps)
        self.failsafe.operator_heartbeat(t_s)

    def guided_velocity(self, t_s: float, kind: str, a: float, b: float) -> None:
        """GUIDED's velocity target (autopilot/modes/guided.py, GuidedMode.set_velocity): "body" (surge [m/s],
        yaw rate [rad/s, + starboard]), "ground" (north, east [m/s]) or "heading" (heading [rad, compass], speed
        [m/s]); renewed within failsafe.manual.timeout_s or neutral. ValueError when not in GUIDED (a stream
        must not wait to drive the boat when someone switches modes), for a non-finite value or an unknown
        kind. Counts as a heartbeat."""
        if self.mode is not self._guided:
            raise ValueError(f"GUIDED velocity target refused: the mode is {self.mode.name}, not GUIDED")
        self._guided.set_velocity(t_s, kind, float(a), float(b))
        self.failsafe.operator_heartbeat(t_s)

    def operator_heartbeat(self, t_s: float) -> None:
        self.failsafe.operator_heartbeat(t_s)

    def report_overrun(self, t_s: float, late_s: float) -> None:
        self.failsafe.report_overrun(t_s, late_s)

    # ------------------------------------------------------------------ the runner's clock
    def clock_lost(self, t_s: float, silent_wall_s: float) -> None:
        """The runner's time source stopped at t_s [s] (a simulator's clock silent for silent_wall_s of wall time):
        no cycle can run until it returns. The runner has set the thrusters to neutral; this says so."""
        self._emit(t_s, "clock", f"time source lost: no simulated clock for {silent_wall_s:.2f} s (wall) after "
                                 f"t={t_s:.2f} s; thrusters neutral until it returns")

    def clock_went_back(self, t_from_s: float, t_to_s: float) -> None:
        """The runner's clock went back from t_from_s to t_to_s [s] (a simulator reset: the world, the boat's
        position and time start again). Time cannot run backwards through the estimator and the mission: the
        runner has set the thrusters to neutral and runs no cycle until the clock passes t_from_s again; this
        disarms and says so."""
        was_armed = self.armed
        self._emit(t_from_s, "clock", f"simulated time went back from {t_from_s:.2f} s to {t_to_s:.2f} s (a simulator "
                                      f"reset?): this autopilot cannot follow it; thrusters neutral"
                                      f"{', disarmed' if was_armed else ''}; restart the autopilot to fly in the "
                                      f"reset world")
        if was_armed:
            self.disarm(t_from_s, "simulated time went back")

    def clock_jump(self, t_from_s: float, t_to_s: float, limit_s: float, silent_wall_s: float) -> None:
        """The runner's clock is back and went from t_from_s to t_to_s [s] with no cycle between (silent for
        silent_wall_s of wall time). The next step's estimator prediction across the gap takes the thrust as
        unknown (the simulator applied whatever it held, not what this side last commanded or set on losing the
        clock); while armed, a gap over limit_s [s] takes the IMU-loss action (failsafe.FailsafeManager.clock_jump)
        and the gap is not also reported as lost sensors."""
        gap = t_to_s - t_from_s
        self._gap_thrust_unknown = True
        self._emit(t_to_s, "clock", f"time source back after {silent_wall_s:.2f} s (wall): simulated time advanced "
                                    f"{gap:.2f} s, accepted; the estimate is predicted across it with the thrust "
                                    f"unknown")
        if self.armed:
            self.failsafe.clock_jump(t_from_s, t_to_s, limit_s)
            self._next_check = -math.inf          # act on it in this cycle

    # ------------------------------------------------------------------ the cycle
    def step(self, t_s: float, batch: SensorBatch) -> CycleResult:
        watch = self.mag_watch
        # thrust the ESCs are not delivering (still arming, output lost) must not drive the estimator's model
        thrust_in = self._last_thrust if self._thrust_delivered and not self._gap_thrust_unknown else None
        self._gap_thrust_unknown = False
        est_batch = self.compass.corrected(batch)
        if est_batch.mag:
            self.last_mag = est_batch.mag[-1]          # with the calibration in use applied
        if self.mode.name == CALIBRATE and self.armed and not self._enter_pending:
            assert isinstance(self.mode, CalibrateOnWaterMode)
            self.mode.record(t_s, est_batch.mag)
            watch = None                  # its fits would chase the uncalibrated field the circles are for
        if watch is not None:
            est_batch = watch.before_estimator(est_batch, self.estimator)
        nav = self.estimator.step(t_s, est_batch, thrust_in)
        estimator_step = self._estimator_steps
        self._estimator_steps += 1
        self.nav = nav
        if watch is not None:
            watch.after_estimator(t_s, batch, nav, self.estimator,
                                  converged=not batch.gps or self.estimator.health(t_s).converged)
        if batch.gps:
            self.last_fix = batch.gps[-1]
        if batch.imu:
            self.last_imu = batch.imu[-1]
        if batch.battery_v is not None:
            self.battery_v, self.battery_a, self.battery_mah = batch.battery_v, batch.battery_a, batch.battery_mah
            self._battery_t = t_s
            if self.map_follower is not None and self.map_follower.update(t_s, batch.battery_v):
                self.maps = list(self.map_follower.maps)
        elif self.battery_v is not None and t_s - self._battery_t > BATTERY_STALE_S:
            self.battery_v = self.battery_a = self.battery_mah = None     # unknown, not the last one seen
        if self._pending_mode is not None:
            name, reason = self._pending_mode
            self._pending_mode = None
            self._operator_switch(t_s, nav, name, reason)
        if self.home_ned is None and nav.valid and self.armed:
            self.home_ned = (nav.north_m, nav.east_m)
        if self.armed and t_s >= self._next_check:
            self._next_check = t_s + self.vessel.failsafe.check_period_s
            self._check(t_s, nav)
        elif not self.armed and t_s >= self._next_disarmed_health:
            self._next_disarmed_health = t_s + self.vessel.failsafe.check_period_s
            self._disarmed_health(t_s, nav)

        out = NEUTRAL
        mode = self.mode
        if self.armed and not self._enter_pending and (nav.valid or not mode.name.needs.estimate):
            self._share_drift()
            out = mode.step(t_s, nav)
            if out.install_fit:
                self.compass.install_on_water_fit(t_s, mode, self.last_fix)
            if out.notice:
                self._emit(t_s, "warning", f"{mode.name}: {out.notice}")
            if out.progress:
                self._emit(t_s, "mission", out.progress)
            if mode.finished:
                self._mode_finished(t_s, nav)
                out = self.mode.update(t_s, nav) if self.armed and not self._enter_pending else NEUTRAL

        if out.velocity is None and not (out.setpoint is not None and
                                         self.vessel.control.heading.structure == "cascade"):
            self.velocity_ctl.reset()
        if not self.armed or out.neutral or out.setpoint is None:
            if self.heading_ref is not None:
                self.heading_ref.reset()
        if not self.armed or out.neutral:
            self.heading_ctl.reset()
            self.speed_ctl.reset()
            wrench, thrust, pulses = ZERO_WRENCH, self.zero_thrust, self.neutral_pulses
            test = self._esc_test
            if test is not None and not self.armed and t_s < test[2]:
                one = list(self.neutral_pulses.pulse_us)
                one[test[0]] = test[1]
                pulses = PulseCommand(tuple(one))
            elif test is not None:
                self._esc_test = None
                self._emit(t_s, "warning", f"ESC test: {self.vessel.thrusters[test[0]].name} back at neutral")
        else:
            if out.wrench is not None:
                wrench = out.wrench
            elif out.velocity is not None:
                v = out.velocity
                wrench = self.velocity_ctl.update(t_s, nav.surge_mps, nav.sway_mps, nav.yaw_rate_rps,
                                                  v.surge_mps, v.yaw_rate_rps, v.prefilter)
            else:
                assert out.setpoint is not None   # not neutral, and neither a wrench nor a velocity
                wrench = self._control(t_s, nav, out.setpoint)
            thrust = self.allocator.allocate(wrench, t_s)
            if out.wrench is None and out.velocity is None:
                yaw_nm = self.allocator.wrench_of(thrust.thrust_n).yaw_nm
                self.heading_ctl.delivered(yaw_nm)
                self._watch_turns(t_s, nav.yaw_rate_rps, yaw_nm)
            pulses = PulseCommand(tuple(m.thrust_to_pulse(f) for m, f in zip(self.maps, thrust.thrust_n)))
        # the estimator's model gets the thrust the pulses really produce (dead zone, whole microseconds)
        self._last_thrust = thrust if pulses is self.neutral_pulses else ThrustCommand(
            tuple(m.pulse_to_thrust(p) for m, p in zip(self.maps, pulses.pulse_us)), thrust.angle_rad)
        self.last_result = CycleResult(t_s, nav, out.setpoint, wrench, thrust, pulses, self.mode.name, self.armed,
                                       self._last_thrust, estimator_step, thrust_in,
                                       None if watch is None else watch.consistency_deg,
                                       None if est_batch is batch else est_batch)
        return self.last_result

    def _control(self, t_s: float, nav: NavState, sp: GuidanceSetpoint) -> Wrench:
        """Guidance's heading and speed -> wrench: the heading PID and the speed PI, or with
        control.heading.structure cascade a heading P loop around the velocity controller's yaw-rate loop; the
        heading first through the third-order reference model when control.heading.reference asks for it."""
        cfg = self.vessel.control.heading
        psi_ref, r_ff = sp.heading_rad, sp.yaw_rate_ff_rps
        if self.heading_ref is not None:
            psi_ref, r_d = self.heading_ref.update(t_s, sp.heading_rad, nav.heading_rad)
            r_ff += r_d
        if cfg.structure == "cascade":
            r_cmd = r_ff + cfg.cascade_gain_per_s * wrap_pi(psi_ref - nav.heading_rad)
            return self.velocity_ctl.update(t_s, nav.surge_mps, nav.sway_mps, nav.yaw_rate_rps, sp.speed_mps, r_cmd)
        yaw = self.heading_ctl.update(t_s, nav.heading_rad, nav.yaw_rate_rps, psi_ref, r_ff)
        surge = self.speed_ctl.update(t_s, nav.surge_mps, sp.speed_mps)
        return Wrench(surge, yaw)

    def _check(self, t_s: float, nav: NavState) -> None:
        """The failsafe-rate work: health, the navigation gate of a newly chosen mode, the monitors."""
        self.health = self._read_health(t_s)
        if self._enter_pending:
            reasons = prearm_failures(self._prearm_inputs(t_s, True, health=self.health, mode=self.mode.name),
                                      self.vessel.failsafe)
            if not reasons:
                self._enter_pending = False
                self._waiting_reported = ""
                self.mode.enter(t_s, nav)
                self._emit(t_s, "mode", f"{self.mode.name}: navigation checks passed, starting")
            else:
                text = "; ".join(reasons)
                if text.split(":")[0] != self._waiting_reported.split(":")[0]:
                    self._emit(t_s, "warning", f"{self.mode.name} waiting for navigation: {text}")
                self._waiting_reported = text
        connected = None if self.actuator is None else bool(self.actuator.connected)
        outages = self._esc_outages()
        if outages != self._esc_outages_seen:      # an outage since the last look, however short: not vouched for
            self._esc_outages_seen = outages
            connected = False
        self._thrust_delivered = connected is not False and (self.actuator is None or bool(self.actuator.ready(t_s)))
        self._watch_thrusters(t_s, nav)
        triggers = self.failsafe.update(t_s, nav, self.mode.name, health_fn=self._cached_health,
                                        raw_offset_fn=self._raw_offset_m, battery_v=self.battery_v,
                                        actuator_connected=connected, home_known=self.home_ned is not None)
        for trig in triggers:
            self._apply_failsafe(t_s, nav, trig)

    def _watch_thrusters(self, t_s: float, nav: NavState) -> None:
        """Feed the thruster-health detector the thrust driven since the last check and act on its verdicts:
        weak: a warning; dead: leave it out and RTL at failsafe.thruster.rtl_speed_fraction of cruise when the
        others can still steer, else the thruster-dead failsafe's HOLD (autopilot/safety/failsafe.py)."""
        w = self.thruster_watch
        if w is None:
            return
        last = self._last_thrust
        if (last is None or not self._thrust_delivered or not nav.valid or not self.mode.name.needs.drives
                or not any(last.thrust_n)):
            w.pause()
            return
        for v in w.update(t_s, nav.yaw_rate_rps, nav.surge_mps, nav.sway_mps, last.thrust_n, last.angle_rad):
            group = w.group_of(v.index)
            alike = "" if len(group) == 1 else (
                f" (it pushes like {', '.join(w.names[i] for i in group if i != v.index)}: the figure is theirs "
                f"together)")
            figure = f"delivers {v.relative:.2f} of its commanded thrust relative to the best thruster{alike}"
            if v.state == WEAK:
                self._emit(t_s, "warning", f"thruster {v.name} weak: {figure} over the last {v.held_s:.0f} s of "
                                           f"straight running; weed on the propeller? the mission goes on")
            elif v.state == OK:
                self._emit(t_s, "warning", f"thruster {v.name} delivers its thrust again ({v.relative:.2f})")
            elif v.state == DEAD:
                self._thruster_dead(t_s, v.index, figure)

    def _thruster_dead(self, t_s: float, index: int, figure: str) -> None:
        name = self.vessel.thrusters[index].name
        w = self.thruster_watch
        try:
            self.allocator.set_out(self.allocator.out | {index})
        except (ValueError, AttributeError):
            self.failsafe.thruster_dead(f"thruster {name} dead: cannot steer ({figure}); thrusters neutral",
                                        can_steer=False)
            return
        if w is not None:
            w.leave_out(index)
        fraction = self.vessel.failsafe.thruster.rtl_speed_fraction
        rtl = self.modes[ModeName.RTL]
        assert isinstance(rtl, RtlMode)
        rtl.speed_mps = fraction * min(self.mission.cruise_speed_mps, self.vessel.hull.max_speed_mps)
        left = ", ".join(t.name for i, t in enumerate(self.vessel.thrusters) if i not in self.allocator.out)
        self.failsafe.thruster_dead(f"thruster {name} dead ({figure}): left out, steering on {left}; home at "
                                    f"{rtl.speed_mps:.2f} m/s", can_steer=True)

    def _disarmed_health(self, t_s: float, nav: NavState) -> None:
        """Disarmed, at the failsafe rate: the estimator's health for the ground station (SYS_STATUS,
        EKF_STATUS_REPORT) and home at the first good estimate, as ArduPilot reports them from power-on. Nothing
        that flies reads them before arming: arming runs _check at once, which reads the health afresh, and sets
        home where it armed. No failsafe monitor runs and no model warning is raised here (those are _check's)."""
        h = self.health = self._read_health(t_s, watch_model=False)
        if self.home_ned is None and nav.valid and h.converged:
            self.home_ned = (nav.north_m, nav.east_m)

    def set_home(self, north_m: float, east_m: float) -> None:
        """An operator's home [m, local NED frame] (MAV_CMD_DO_SET_HOME): RTL goes there, and arming no longer
        moves it (ArduPilot locks a home set by the ground station)."""
        self.home_ned = (float(north_m), float(east_m))
        self.home_locked = True

    def _apply_failsafe(self, t_s: float, nav: NavState, trig: Trigger) -> None:
        action, reason = trig.action, f"{trig.kind} failsafe"
        if self.mode.name == CALIBRATE and action not in _LEAVES_THE_MODE_ALONE:
            # the circles are flown on the gyro and GNSS alone: whatever fails, stop them (neutral); except an
            # uncalibrated heading the filter does not accept (mag-loss), which is what the mode is there to fix
            # (it watches the samples themselves arriving)
            action = Action.REPORT if trig.kind == "mag-loss" else Action.HOLD
        self._emit(t_s, "failsafe", trig.message, failsafe=trig.kind, action=action)
        if action is Action.DISARM:
            self.disarm(t_s, reason)
        elif action in SWITCH_TO:
            self._switch(t_s, nav, SWITCH_TO[action], reason)
        elif action.after_brake is not None:
            self._after_brake = action.after_brake
            self._switch(t_s, nav, ModeName.BRAKE, reason)

    def _mode_finished(self, t_s: float, nav: NavState) -> None:
        name = self.mode.name
        if name == CALIBRATE:
            self._calibration_done(t_s, nav)
        elif name == ModeName.AUTO:
            action = self.mission.on_complete
            self._emit(t_s, "mission", f"mission complete; on_complete={action}")
            if action == "hold":
                self._switch(t_s, nav, ModeName.HOLD, "mission complete")
            elif action == "rtl" and self.home_ned is not None:
                self._switch(t_s, nav, ModeName.RTL, "mission complete")
            else:
                loiter = self.modes[ModeName.LOITER]
                assert isinstance(loiter, LoiterMode)
                loiter.set_center(*self.guidance.waypoints_ned[-1])
                self._switch(t_s, nav, ModeName.LOITER, "mission complete")
        elif name == ModeName.RTL:
            if self.home_ned is not None:
                loiter = self.modes[ModeName.LOITER]
                assert isinstance(loiter, LoiterMode)
                loiter.set_center(*self.home_ned)
            self._switch(t_s, nav, ModeName.LOITER, "home reached")
        elif name == ModeName.BRAKE:
            action = self.failsafe.resolve(self._after_brake, self.home_ned is not None)
            target = SWITCH_TO[action] if action in (Action.RTL, Action.LOITER) else ModeName.HOLD
            self._switch(t_s, nav, target, f"stopped; {self._after_brake} after braking")

    def _calibration_done(self, t_s: float, nav: NavState) -> None:
        """CALIBRATE_ON_WATER has flown its circles (or given up): install and go on to AUTO, or HOLD."""
        mode = self.modes[CALIBRATE]
        assert isinstance(mode, CalibrateOnWaterMode) and mode.outcome is not None   # it has finished
        kind, value = mode.outcome
        spent = {"time_s": round(mode.elapsed_s, 1), "turned_deg": round(math.degrees(abs(mode.turned_rad)), 1)}
        if kind == "abort":
            after = ("the fitted calibration stays installed" if mode.fit is not None else
                     "no navigation without a magnetometer calibration")
            self._emit(t_s, "warning", f"{CALIBRATE} aborted: {value}; HOLD ({after})", figures=spent)
            self._switch(t_s, nav, ModeName.HOLD, f"{CALIBRATE} aborted")
            return
        fit = value
        if not fit.accepted:
            figures = dict(spent, **fit_figures(fit))
            self._emit(t_s, "warning", f"{CALIBRATE}: magnetometer fit refused: {fit.reason}; HOLD (no navigation "
                                       f"without a magnetometer calibration)", figures=figures)
            self._switch(t_s, nav, ModeName.HOLD, "magnetometer fit refused")
            return
        self._switch(t_s, nav, ModeName.AUTO, "magnetometer calibrated on the water")
        self._enter_pending = True            # AUTO starts once the navigation checks pass with the new heading
        self._waiting_reported = ""
        self._next_check = t_s

    def _operator_switch(self, t_s: float, nav: NavState, name: ModeName, reason: str) -> None:
        why = self.failsafe.blocked(name) if self.armed else None
        if why:
            self._emit(t_s, "warning", f"mode {name} refused: {why}")
            if name == ModeName.GUIDED and self.mode is not self._guided:
                self._guided.drop_pending()      # a target for a GUIDED that never came
            return
        before = self.mode
        self._switch(t_s, nav, name, reason)
        if self.armed and self.mode.name.needs.estimate and self.mode is not before:
            self._enter_pending = True            # enter() once the navigation checks pass (see _check)
            self._waiting_reported = ""
            self._next_check = t_s

    def _switch(self, t_s: float, nav: Optional[NavState], name: ModeName, reason: str) -> None:
        if name == ModeName.AUTO and self.mission_cleared:
            name, reason = ModeName.HOLD, f"{reason}; no mission to fly (it was cleared)"
        if name == self.mode.name:
            return
        old = self.mode.name
        self.mode = self.modes[name]
        if name != ModeName.GUIDED:
            self._guided.drop_pending()          # a failsafe or an operator took the boat elsewhere first
        self._enter_pending = False
        if nav is not None:
            self.mode.enter(t_s, nav)
        self.heading_ctl.reset()
        self.speed_ctl.reset()
        self._emit(t_s, "mode", f"{old} -> {name}: {reason}")

    # ------------------------------------------------------------------ helpers
    def _prearm_inputs(self, t_s: float, navigating: bool, health=None, mode: str = "") -> PrearmInputs:
        if navigating and health is None:
            health = self._read_health(t_s)
        connected = None if self.actuator is None else bool(self.actuator.connected)
        return PrearmInputs(t_s=t_s, navigating=navigating, nav=self.nav, health=health, last_fix=self.last_fix,
                            # the one navigating mode that does without: it is what makes the calibration
                            mag_calibration_problem=None if mode == MAKES_THE_MAG_CALIBRATION else self.compass.problem,
                            actuator_connected=connected,
                            actuator_ready=True if self.actuator is None else bool(self.actuator.ready(t_s)),
                            config_problems=self.config_problems, fences=self.fences,
                            last_heartbeat_s=self.failsafe.last_heartbeat_s,
                            skip_gnss=self.armed and self.failsafe.gnss_active,
                            battery_v=self.battery_v, low_voltage_v=self.failsafe.low_voltage_v)

    def _read_health(self, t_s: float, watch_model: bool = True) -> EstimatorHealth:
        """The estimator's health with the magnetometer's consistency; `watch_model`: warn of model errors too."""
        h = self.estimator.health(t_s)
        if watch_model:
            self._watch_model(t_s, h)
        if self.mag_watch is not None:
            h = dataclasses.replace(h, mag_consistency_deg=self.mag_watch.consistency_deg)
        return h

    def _watch_model(self, t_s: float, h: EstimatorHealth) -> None:
        """Warn (events, not failsafes) when the estimator finds the vessel model wrong: once per episode of
        inconsistent GNSS velocity innovations, naming the worst-predicted axis, and for every fix taken as
        model drift rather than a GNSS glitch."""
        c = h.model_consistency
        if not self._model_warned and c > MODEL_WARN_NIS:
            self._model_warned = True
            self._emit(t_s, "warning", f"the vessel model mispredicts the {h.model_worst_axis} (GNSS velocity NIS "
                                       f"{c:.1f} per degree of freedom, 1 is consistent); the estimator widened "
                                       f"its process noise x{h.process_noise_scale:.0f}; surge drag learned as "
                                       f"{1.0 + h.surge_drag_error:.2f} x the file's")
        elif self._model_warned and c < 0.5 * MODEL_WARN_NIS:
            self._model_warned = False
        drift = h.model_drift_accepts
        if drift > self._drift_seen:
            self._drift_seen = drift
            self._emit(t_s, "warning", f"a GNSS fix outside the gate was taken as model drift, not a glitch "
                                       f"({drift} so far): the vessel model predicts the {h.model_worst_axis} "
                                       f"poorly; surge drag learned as {1.0 + h.surge_drag_error:.2f} x the file's")

    def _watch_turns(self, t_s: float, yaw_rate_rps: float, yaw_nm: float) -> None:
        """Measure the boat's turning against its file's (autopilot/guidance/turn_rate_watch.py); guidance slows its
        corners by the ratio and, with the drift the estimator has learnt, plans where to begin them. Warn once
        when the boat turns markedly slower than filed."""
        w = self.turn_watch
        w.update(t_s, yaw_rate_rps, yaw_nm)
        self.guidance.turn_scale = w.scale
        if w.scale < WARN_SCALE and not self._turn_warned:
            self._turn_warned = True
            self._emit(t_s, "warning", f"the boat turns at {w.scale:.2f} x its vessel file's yaw rate in hard turns "
                                       f"(more yaw damping or less thrust than filed): corners are flown that much "
                                       f"slower and begun earlier; 'autopilot identify' fits the hull from an "
                                       f"identification run")

    def _cached_health(self, t_s: float) -> Optional[EstimatorHealth]:
        return self.health

    def _share_drift(self) -> None:
        """Give the estimator's drift to what steers by it: mission guidance (wheel-over point, crab angle), RTL
        and a path's LOS laws (crab angle)."""
        drift = self._drift_ne()
        self.guidance.drift_ne = drift
        for mode in (self.modes[ModeName.RTL], self.modes[ModeName.AUTO], self.modes[ModeName.GUIDED]):
            mode.drift_ne = drift

    def _drift_ne(self) -> tuple[float, float]:
        """Drift over ground the estimator has learnt (its water current, which takes up the wind's push)."""
        h = self.health
        if h is None:
            return 0.0, 0.0
        return h.current_north_mps, h.current_east_mps

    def _drift_std_mps(self) -> float:
        """How well the estimator knows that drift: its current's standard deviation [m/s] (inf before any)."""
        h = self.health
        return math.inf if h is None else h.current_std_mps

    def _raw_offset_m(self) -> float:
        """How far the published estimate lies from the filter's own state (large right after a re-acquisition)."""
        state = self.estimator.state
        nav = self.nav
        if nav is None:
            return 0.0
        return math.hypot(nav.north_m - float(state[IX_N]), nav.east_m - float(state[IX_E]))

    def _home(self) -> Optional[tuple[float, float]]:
        return self.home_ned

    def _now(self) -> float:
        return self.events[-1].time_s if self.events else 0.0

    def _emit(self, t_s: float, kind: str, message: str, **fields) -> None:
        ev = Event(t_s, kind, message, **fields)
        self.events.append(ev)
        if self._on_event is not None:
            self._on_event(ev)

    def start_point_ned(self) -> Optional[tuple[float, float]]:
        """Where the mission says the boat is launched, in the local frame (None when not given)."""
        if self.mission.start is None:
            return None
        return point_to_ned(self.mission.start.point, self.frame)

