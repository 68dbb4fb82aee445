"""The in-process simulation: plant + emulated sensors + the real autopilot, one clock.

The runner owns simulated time. Each control cycle it advances the plant to t, collects what the sensors
produced, runs `Autopilot.step(t, batch)`, and turns the pulse widths the autopilot wrote back into thrust
demand through the same thrust maps (as an ESC and thruster would). Ground truth goes only to the metrics.

Like an operator on the bank, the runner asks for the initial mode (AUTO) at the start and arms as soon as the
pre-arm checks pass (checked every ARM_RETRY_S); a run that cannot arm within `arm_timeout_s` fails with
SimArmingError listing the refusals. With `auto_arm` off, arming is left to a ground station (`autopilot sim
--mavlink`). It also plays the operator's station: a heartbeat every
HEARTBEAT_PERIOD_S unless `operator_link` is off or a link-loss fault cuts it, and the pack voltage on every
batch. Faults (hil/sim/faults.py) are switched in the byte-level devices; the report lists
`failsafe_events` and, per fault, the largest distance of the true position from the planned path.

The boat being flown is not the autopilot's vessel file unless nothing else is said: `SimOptions.plant_spec`
(hil.sim.plant_spec.PlantSpec: another vessel file, mismatch factors, the extras a diagonal model leaves out)
describes the true hull, `SimOptions.plant_model` names a boat of another structure (hil.sim.plant_models),
and `run_sim(..., plant=...)` takes any hil.sim.plant.PlantModel (or a factory
`plant(north_m, east_m, heading_rad)` that places one at the launch point). The sensors keep the autopilot's
vessel file (its GNSS, IMU and magnetometer); the report's `plant` says which boat flew.
With `SimOptions.model_following` (hil.sim.model_following.FollowingSetup) the built-in plant is made to follow
the autopilot's own vessel model (paper 001) and the report gains `model_following`: RMSE, MAE and R^2 of the
plant against that model.

The simulated magnetometer is calibrated exactly unless `mag_calibration` is "none": then the driver delivers
the distorted field as it is (the vessel file's hard and soft iron, or, when it has none, those of `autopilot
calibrate mag --sim`: 30 uT, 10 %), the autopilot is given no calibration (the vessel's calibration_file, if
any, decides), and a run that starts in CALIBRATE_ON_WATER reports `calibrate_on_water`: the fit's figures,
the time and angle the circles took, and the heading error of the estimate in AUTO after it.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Union, cast

import numpy as np

from autopilot.guidance.path_following import mission_frame, point_to_ned
from autopilot.vehicle import Autopilot
from autopilot.vocab.config import MissionConfig, VesselConfig
from autopilot.vocab.types import ThrustCommand
from drivers.thrust_map import make_thrust_maps
from hil.sim.battery import BatteryPack, PackSpec
from hil.sim.environment import EnvironmentConfig
from hil.sim.metrics import SimMetrics, distance_to_path_m
from hil.sim.plant import Plant, PlantModel
from hil.sim.plant_spec import PlantSpec
from hil.sim.thruster_usage import thruster_usage

PLANT_MAP_STEP_V = 0.02          # the simulated thrusters' maps follow the pack in steps of this [V]

if TYPE_CHECKING:
    import threading

    from autopilot.modes.identification import IdentificationMode
    from autopilot.modes.loiter import LoiterMode
    from autopilot.modes.trajectory import PathFollowMode, TrajectoryMode
    from hil.devices.sim_devices import ByteLevelSensors
    from hil.sim.model_following import FollowingSetup
    from hil.sim.sensor_models import TypedSensorSuite

ARM_RETRY_S = 0.2            # how often an unarmed run retries the pre-arm checks
HEARTBEAT_PERIOD_S = 1.0     # the simulated operator station's heartbeat

TRACE_FIELDS = ("t", "truth_n", "truth_e", "truth_psi", "truth_u", "est_n", "est_e", "est_psi", "est_u",
                "est_valid", "ref_psi", "ref_u", "xte_est", "wp_index", "surge_n", "yaw_nm",
                "truth_v", "truth_r", "est_v", "est_r")


@dataclass
class SimOptions:
    seed: int = 1
    env: EnvironmentConfig = field(default_factory=EnvironmentConfig)
    gps_noise: str = "realistic"          # "white" | "realistic"
    gps_rate_hz: Optional[float] = None   # None: the vessel's configured rate
    duration_s: Optional[float] = None    # None: until the mission is complete (with a generous cap)
    linger_s: float = 5.0                 # keep simulating this long after the mission completes
    realtime: bool = False
    devices: str = "bytes"                # "bytes": emulated devices + real drivers; "typed": sensor models only
    esc_backend: str = "pigpio"           # bytes only: the ESC output stage (pigpio | kernel_pwm | pca9685)
    faults: tuple = ()                    # hil.sim.faults.Fault, injected into the byte-level devices
    initial_mode: str = "AUTO"            # asked for at the start; the run arms when its pre-arm checks pass
    arm_timeout_s: float = 60.0           # give up (SimArmingError) if not armed by then
    operator_link: bool = True            # send operator heartbeats (link-loss faults cut them)
    on_cycle: Optional[Callable] = None   # on_cycle(t_s, autopilot, truth) before each step: a scripted operator
    on_result: Optional[Callable] = None  # on_result(t_s, autopilot, batch, result, truth) after each step: a log
    plant_spec: Optional[PlantSpec] = None  # the true boat (None: the autopilot's own vessel file, as it is)
    plant_model: Optional[str] = None     # a named boat of another structure (hil.sim.plant_models); not with
    #                                       plant_spec or model_following
    auto_arm: bool = True                 # arm as soon as the pre-arm checks pass (False: a ground station arms)
    stop: Optional[threading.Event] = None  # a threading.Event: the run ends at the next cycle once it is set
    model_following: Optional[FollowingSetup] = None  # the plant follows `vessel` (hil.sim.model_following)
    mag_calibration: str = "exact"        # "exact": the sim's magnetometer comes calibrated; "none": raw, distorted
    battery: Optional[PackSpec] = None    # the simulated pack (hil/sim/battery.py); None: the vessel's (battery.
    #                                       capacity_ah), else none and the pack stays at battery.voltage_v
    mag_calibration_path: Optional[str] = None  # where accepted continuous magnetometer calibrations are
    #                                       written, old file kept (None: nowhere; a simulation never
    #                                       rewrites the vessel's calibration_file)


class SimArmingError(RuntimeError):
    """The run could not arm: the message lists the pre-arm checks that kept failing."""


@dataclass
class SimResult:
    report: dict
    trace: dict                       # TRACE_FIELDS -> numpy arrays, one entry per control cycle
    thrust_n: np.ndarray              # cycles x thrusters
    pulses_us: np.ndarray
    gps_ne: np.ndarray                # raw fixes in the local frame (n, e)
    waypoints_ned: list
    start_ned: tuple
    events: list
    frame: object
    rows: list = field(default_factory=list)
    thruster_names: tuple = ()        # the vessel file's, in the order of thrust_n's columns


def identification_time_s(mission: MissionConfig) -> float:
    """A generous bound on an identification mission's time: every segment, and before each a way back across
    the box at the mission's cruise speed (three times over) and the settling time."""
    from autopilot.modes.identification import plan
    cfg = mission.identification
    assert cfg is not None                  # an identification mission
    segments = plan(cfg)
    back_s = 3.0 * cfg.box_m / mission.cruise_speed_mps + cfg.settle_s + 10.0
    return sum(s.duration_s + back_s for s in segments)


def trajectory_figures(err_ne: np.ndarray, mode) -> dict:
    """Tracking figures of a trajectory mission from (north, east) errors of the true CG to the reference:
    RMSE and MAE of the distance and per axis, the reference time flown and how far its clock fell behind."""
    if len(err_ne) == 0:
        return {"kind": mode.reference.name, "tracked_s": 0.0, "complete": mode.finished}
    d = np.hypot(err_ne[:, 0], err_ne[:, 1])
    return {"kind": mode.reference.name, "complete": mode.finished,
            "reference_time_s": round(mode.clock.tau_s, 2), "time_behind_s": round(mode.time_behind_s, 2),
            "pos_rmse_m": round(float(np.sqrt(np.mean(d * d))), 4), "pos_mae_m": round(float(np.mean(d)), 4),
            "pos_max_m": round(float(np.max(d)), 4),
            "north_rmse_m": round(float(np.sqrt(np.mean(err_ne[:, 0] ** 2))), 4),
            "east_rmse_m": round(float(np.sqrt(np.mean(err_ne[:, 1] ** 2))), 4)}


def path_figures(err: np.ndarray, mode) -> dict:
    """Path-following figures from (cross-track of the true CG to the path [m], speed over ground minus the
    path's speed profile [m/s]) while following."""
    out = {"length_m": round(mode.path.length_m, 2), "complete": mode.finished}
    if len(err):
        def rms(a):
            return round(float(np.sqrt(np.mean(a * a))), 4)
        last = err[-max(1, len(err) // 4):]
        out.update(path_err_rms_m=rms(err[:, 0]), path_err_max_m=round(float(np.max(np.abs(err[:, 0]))), 4),
                   path_err_last_quarter_rms_m=rms(last[:, 0]), speed_err_rms_mps=rms(err[:, 1]),
                   speed_err_last_quarter_rms_mps=rms(last[:, 1]))
    return out


def mission_length_m(waypoints_ned, start_ne) -> float:
    pts = [start_ne] + list(waypoints_ned)
    return sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(pts, pts[1:]))


def initial_pose(mission: MissionConfig, frame, waypoints_ned) -> tuple[float, float, float]:
    """Launch point and heading: the mission's `start`, else the first waypoint facing the second."""
    if mission.start is not None:
        n, e = point_to_ned(mission.start.point, frame)
    else:
        n, e = waypoints_ned[0]
    if mission.start is not None and mission.start.heading_deg is not None:
        psi = math.radians(mission.start.heading_deg)
    else:
        target = next(((wn, we) for wn, we in waypoints_ned if math.hypot(wn - n, we - e) > 1e-3), None)
        psi = 0.0 if target is None else math.atan2(target[1] - e, target[0] - n)
    return n, e, psi


def _truth_at(t_s: float, k: int, trace: np.ndarray, truth_ne: tuple, dt: float) -> tuple:
    """True (north, east) at time t_s, interpolated in the trace of cycles 0..k-1 (cycle i is at (i+1) dt) and
    the current cycle k, whose truth is `truth_ne`."""
    x = t_s / dt - 1.0
    if x >= k or k == 0:
        return truth_ne
    i = max(0, int(math.floor(x)))
    f = min(1.0, max(0.0, x - i))
    a = trace[i, 1:3]
    b = trace[i + 1, 1:3] if i + 1 < k else truth_ne
    return a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1])


def build_plant(vessel: VesselConfig, opts: SimOptions, north_m: float, east_m: float,
                heading_rad: float) -> Plant:
    """The built-in plant for a run: opts.plant_spec's hull (default: `vessel` itself) at the launch pose."""
    spec = opts.plant_spec
    if spec is None:
        return Plant(vessel, opts.env, opts.seed, north_m, east_m, heading_rad)
    return Plant(spec.vessel, opts.env, opts.seed, north_m, east_m, heading_rad, extras=spec.extras,
                 thrust_scale=spec.thrust_scale())


def run_sim(vessel: VesselConfig, mission: MissionConfig, opts: SimOptions,
            plant: Union[PlantModel, Callable[[float, float, float], PlantModel], None] = None) -> SimResult:
    """Fly `mission` with the autopilot configured by `vessel` and return the report and the trace.

    The boat is `plant` (a PlantModel, or a factory called with the launch point and heading), else the
    built-in plant described by opts.plant_spec (default: `vessel` itself)."""
    from autopilot.vocab.config import mag_is_undistorted
    from hil.devices.sim_devices import simulated_mag_calibration

    frame = mission_frame(mission)
    if opts.mag_calibration not in ("exact", "none"):
        raise ValueError(f"mag_calibration {opts.mag_calibration!r}: use 'exact' or 'none'")
    uncalibrated = opts.mag_calibration == "none"
    if uncalibrated:
        vessel = distorted_mag(vessel)
    if opts.devices not in ("bytes", "typed"):
        raise ValueError(f"devices {opts.devices!r}: use 'bytes' or 'typed'")
    from hil.sim.faults import check_thrusters, thrust_factors
    if any(f.thruster is None for f in opts.faults) and opts.devices != "bytes":
        raise ValueError("faults are injected into the emulated devices: use devices='bytes' (--devices bytes)")
    check_thrusters(opts.faults, vessel)
    thruster_faults = tuple(f for f in opts.faults if f.thruster is not None)
    extras = opts.plant_spec.extras if opts.plant_spec is not None else None
    trim = (math.radians(extras.trim_roll_deg), math.radians(extras.trim_pitch_deg)) if extras else (0.0, 0.0)
    mag_cal = None if uncalibrated else simulated_mag_calibration(vessel, *trim)
    # applied where the boat applies it (the driver); skipped when it is the identity, to keep the fast path
    driver_cal = None if uncalibrated or (mag_is_undistorted(vessel) and trim == (0.0, 0.0)) else mag_cal
    estimator = None
    if driver_cal is not None and opts.devices == "typed":
        from estimation.navekf.ekf import EkfTuning, NavigationEKF
        estimator = NavigationEKF(vessel, frame, mag_calibration=driver_cal,
                                  tuning=EkfTuning(gps_reacquire_s=vessel.failsafe.gnss.glitch_reject_s))
    autopilot = Autopilot(vessel, mission, frame=frame, estimator=estimator, mag_calibration=mag_cal,
                          mag_calibration_path=opts.mag_calibration_path or False)
    waypoints_ned = autopilot.guidance.waypoints_ned
    n0, e0, psi0 = initial_pose(mission, frame, waypoints_ned)
    following = None
    if plant is None and opts.plant_model is not None:
        from hil.sim.plant_models import build_plant_model, describe_plant_model
        if opts.plant_spec is not None or opts.model_following is not None:
            raise ValueError(f"plant model {opts.plant_model}: is a boat of its own; it takes no plant vessel, "
                             "mismatch, plant extras or model following")
        plant = build_plant_model(opts.plant_model, vessel, opts.env, opts.seed, n0, e0, psi0)
        plant_report = describe_plant_model(opts.plant_model)
    elif plant is None:
        plant = build_plant(vessel, opts, n0, e0, psi0)
        plant_report = (opts.plant_spec or PlantSpec.resolve(vessel, opts.seed)).describe()
        if opts.model_following is not None:
            from hil.sim.model_following import FollowerGains, ModelFollowingPlant
            setup = opts.model_following
            plant = following = ModelFollowingPlant(plant, vessel, setup.follower_vessel, setup.follow,
                                                    setup.gains or FollowerGains(), setup.thrust_limit_scale,
                                                    setup.sway_force)
    elif opts.model_following is not None:
        raise ValueError("model following wraps the built-in plant: give opts.plant_spec, not a plant")
    else:
        if not isinstance(plant, PlantModel):
            plant = plant(n0, e0, psi0)
        if not isinstance(plant, PlantModel):
            raise TypeError(f"plant: {type(plant).__name__} lacks PlantModel's truth and step_to")
        plant_report = {"custom": type(plant).__name__}
    clock = [0.0]
    escs = None
    injector = None
    byte_sensors: Optional[ByteLevelSensors] = None      # the emulated devices (devices "bytes")
    sensors: Union[ByteLevelSensors, TypedSensorSuite]
    if opts.devices == "bytes":
        from hil.devices.sim_devices import ByteLevelSensors, SimEscs
        sensors = byte_sensors = ByteLevelSensors(vessel, frame, opts.seed, gps_noise=opts.gps_noise,
                                   gps_rate_hz=opts.gps_rate_hz, truth0=plant.truth, mag_calibration=driver_cal)
        escs = SimEscs(vessel, autopilot.maps, clock=lambda: clock[0], backend=opts.esc_backend)
        autopilot.set_actuator(escs)
        if opts.faults:
            from hil.sim.faults import FaultInjector
            injector = FaultInjector(opts.faults, sensors, escs, vessel, seed=opts.seed)
    else:
        from hil.sim.sensor_models import TypedSensorSuite
        sensors = TypedSensorSuite(vessel, frame, opts.seed, gps_noise=opts.gps_noise,
                                   gps_rate_hz=opts.gps_rate_hz)
        autopilot.set_actuator(_ThrustMapOutput())
    path_ne = [(n0, e0)] + list(waypoints_ned)
    fault_max = [0.0] * len(opts.faults)
    metrics = SimMetrics(lookahead_m=autopilot.guidance.lookahead_m)

    dt = 1.0 / vessel.control.loop_rate_hz
    if opts.duration_s is not None:
        t_end = opts.duration_s
    elif mission.identification is not None:
        t_end = 120.0 + identification_time_s(mission)
    elif mission.trajectory is not None and mission.trajectory.kind == "path":
        t_end = (120.0 + 3.0 * cast("PathFollowMode", autopilot.modes["AUTO"]).path.length_m
                 / mission.trajectory.speed_mps)
    elif mission.trajectory is not None:          # the reference's time, twice (its clock slows if the boat lags)
        t_end = 120.0 + 2.0 * mission.trajectory.duration_s
    else:
        t_end = 120.0 + 3.0 * mission_length_m(waypoints_ned, (n0, e0)) / mission.cruise_speed_mps
    if opts.duration_s is None and opts.initial_mode.upper() == "CALIBRATE_ON_WATER":
        t_end += vessel.sensors.mag.on_water.timeout_s
    n_cycles = int(round(t_end / dt))
    maps = autopilot.maps

    trace = np.full((n_cycles, len(TRACE_FIELDS)), np.nan)
    track_err: list = []             # (north, east) of truth minus the trajectory reference, while tracking
    thrust_log = np.zeros((n_cycles, len(maps)))
    pulse_log = np.zeros((n_cycles, len(maps)))
    gps_ne = []
    thrust_demand = [0.0] * len(maps)
    angle_demand = None              # pods' commanded angles [rad] (azimuth thrusters), None: hold / fixed
    if escs is not None:
        escs.arm(0.0)
    autopilot.set_mode(opts.initial_mode, "simulation start")
    next_arm, next_heartbeat, armed_at = 0.0, 0.0, None
    battery_v = vessel.battery.voltage_v
    pack_spec = opts.battery if opts.battery is not None else PackSpec.from_vessel(vessel)
    pack = BatteryPack(pack_spec) if pack_spec is not None else None
    plant_maps, plant_maps_v = maps, vessel.battery.voltage_v    # the thrusters' truth: at the pack's voltage
    pack_start_v = None if pack is None else pack.voltage_v
    completed_at = None
    loiter_track = []                    # (north, east) from the LOITER centre [m], heading error [rad]
    heading_err_after_cal = []           # estimate - truth in AUTO once a calibration was fitted on the water [rad]
    wall0 = time.perf_counter()
    k = 0
    for k in range(n_cycles):
        t = (k + 1) * dt
        clock[0] = t
        # a weak or dead thruster (hil/sim/faults.py) pushes less than its ESC is driven to: the truth only
        factors = thrust_factors(thruster_faults, vessel, t) if thruster_faults else None
        pushed = thrust_demand if factors is None else [f * x for f, x in zip(factors, thrust_demand)]
        truth = (plant.step_to(t, pushed) if angle_demand is None
                 else plant.step_to(t, pushed, angle_rad=angle_demand))
        if injector is not None:
            injector.apply(t)
            if pack is None:
                battery_v = injector.battery_v()
        if pack is not None:
            battery_v = pack.step(dt, thrust_demand)
            if abs(battery_v - plant_maps_v) >= PLANT_MAP_STEP_V:
                plant_maps_v = battery_v
                plant_maps = list(make_thrust_maps(vessel, max(battery_v, 0.1)))
                if escs is not None:
                    escs.maps = list(plant_maps)
        batch = sensors.sample(truth)
        batch.battery_v = battery_v
        if pack is not None:
            batch.battery_a, batch.battery_mah = pack.current_a, pack.consumed_mah
        if opts.operator_link and t >= next_heartbeat and (injector is None or injector.link_up):
            autopilot.operator_heartbeat(t)
            next_heartbeat = t + HEARTBEAT_PERIOD_S
        if opts.on_cycle is not None:
            opts.on_cycle(t, autopilot, truth)
        truth_ne = (truth.north_m, truth.east_m)
        for fix in batch.gps:
            if fix.valid:
                fne = frame.to_ned(fix.lat_deg, fix.lon_deg)
                gps_ne.append(fne)
                # against the truth at the fix's own time stamp: a fix read at 9600 baud reaches the loop
                # most of a second after its epoch, and the boat has moved on since
                metrics.add_gps(fne, _truth_at(fix.time_s, k, trace, truth_ne, dt))
        res = autopilot.step(t, batch)
        if armed_at is None:
            if res.armed:
                armed_at = t
            elif opts.auto_arm and t >= next_arm:
                next_arm = t + ARM_RETRY_S
                failures = autopilot.prearm_failures(t)
                if not failures:
                    if autopilot.arm(t):
                        armed_at = t
                elif t >= opts.arm_timeout_s:
                    if escs is not None and byte_sensors is not None:
                        escs.close()
                        byte_sensors.close()
                    raise SimArmingError(
                        f"{vessel.name} / {mission.name}: not armed within "
                        f"{opts.arm_timeout_s:g} s of simulation; pre-arm checks failing: " + "; ".join(failures)
                    )
        if escs is not None:
            escs.write(t, res.pulses)
            thrust_demand = escs.thrust_n()
            pulse_log[k] = escs.pulses_us
            if opts.on_result is not None:       # a log: the thrust the ESCs output, as the boat logs it
                res = dataclasses.replace(res, applied=ThrustCommand(tuple(thrust_demand)))
        else:
            thrust_demand = [m.pulse_to_thrust(p) for m, p in zip(plant_maps, res.pulses.pulse_us)]
            pulse_log[k] = res.pulses.pulse_us
        if res.thrust.angle_rad is not None:
            # the pod angle goes to the plant as commanded at both device levels (no servo-pulse emulation)
            angle_demand = res.thrust.angle_rad
        if opts.on_result is not None:
            opts.on_result(t, autopilot, batch, res, truth)
        if res.mode == "LOITER":
            loiter = cast("LoiterMode", autopilot.modes["LOITER"])
            centre = loiter.center_ned
            if centre is not None:
                loiter_track.append((truth.north_m - centre[0], truth.east_m - centre[1],
                                     math.remainder(truth.heading_rad - loiter.heading_ref_rad, 2.0 * math.pi)))
        in_auto = res.mode == "AUTO"
        traj = (cast("Union[TrajectoryMode, PathFollowMode]", autopilot.modes["AUTO"]) if mission.trajectory is not None
                else None)
        if in_auto and traj is not None and traj.phase == "track" and traj.reference_ne is not None:
            assert mission.trajectory is not None   # traj is set
            if mission.trajectory.kind == "path":
                path_mode = cast("PathFollowMode", traj)
                i = path_mode.path.project(truth.north_m, truth.east_m)
                track_err.append((path_mode.path.cross_track_m(i, truth.north_m, truth.east_m),
                                  math.hypot(truth.surge_mps, truth.sway_mps) - path_mode.speed_ref_mps))
            else:
                track_err.append((truth.north_m - traj.reference_ne[0], truth.east_m - traj.reference_ne[1]))
        if in_auto and autopilot.installed_mag_calibration is not None and res.nav.valid:
            heading_err_after_cal.append(math.remainder(res.nav.heading_rad - truth.heading_rad, 2.0 * math.pi))
        metrics.add_cycle(t, truth_ne, truth.heading_rad, res.nav, autopilot.guidance.leg if in_auto else None,
                          autopilot.guidance.index, in_auto)
        if in_auto and autopilot.guidance.index > 0:
            metrics.path_dist.append(distance_to_path_m(path_ne, truth.north_m, truth.east_m))
        nav, sp = res.nav, res.setpoint
        trace[k] = (t, truth.north_m, truth.east_m, truth.heading_rad, truth.surge_mps,
                    nav.north_m, nav.east_m, nav.heading_rad, nav.surge_mps, float(nav.valid),
                    sp.heading_rad if sp else np.nan, sp.speed_mps if sp else np.nan,
                    sp.xte_m if (sp and in_auto) else np.nan, autopilot.guidance.index,
                    res.wrench.surge_n, res.wrench.yaw_nm,
                    truth.sway_mps, truth.yaw_rate_rps, nav.sway_mps, nav.yaw_rate_rps)
        thrust_log[k] = res.thrust.thrust_n
        if injector is not None:
            d = None
            for i, f in enumerate(opts.faults):
                if f.start_s <= t < f.end_s:
                    if d is None:
                        d = distance_to_path_m(path_ne, truth.north_m, truth.east_m)
                    if d > fault_max[i]:
                        fault_max[i] = d
        if completed_at is None and autopilot.mission_complete:
            completed_at = t
        if opts.realtime:
            lag = t - (time.perf_counter() - wall0)
            if lag > 0:
                time.sleep(lag)
            elif -lag > dt:
                autopilot.report_overrun(t, -lag)
        if opts.duration_s is None and completed_at is not None and t >= completed_at + opts.linger_s:
            break
        if opts.stop is not None and opts.stop.is_set():
            break
    wall = time.perf_counter() - wall0
    if escs is not None and byte_sensors is not None:
        escs.close()
        byte_sensors.close()
    n_done = k + 1
    sim_time = n_done * dt
    report = {
        "vessel": vessel.name,
        "mission": mission.name,
        "seed": opts.seed,
        "mission_complete": bool(autopilot.mission_complete),
        "mission_complete_time_s": completed_at,
        "battery": None if pack is None else {"start_v": pack_start_v, "end_v": pack.voltage_v,
                                              "consumed_mah": pack.consumed_mah, "soc_end": pack.soc},
        "waypoints_reached": autopilot.guidance.waypoints_reached,
        "waypoints_total": autopilot.guidance.waypoints_total,
        "sim_time_s": round(sim_time, 3),
        "wall_time_s": round(wall, 3),
        "realtime_factor": round(sim_time / wall, 1) if wall > 0 else float("inf"),
        "control_rate_hz": vessel.control.loop_rate_hz,
        "gps_noise": opts.gps_noise,
        "gps_rate_hz": opts.gps_rate_hz or vessel.sensors.gnss.rate_hz,
        "devices": opts.devices,
        "plant": plant_report,
        "armed_at_s": armed_at,
        "never_armed_because": autopilot.prearm_failures(sim_time) if armed_at is None else [],
        "final_mode": autopilot.mode.name,
        "armed_at_end": bool(autopilot.armed),
        "failsafe_events": [{"time_s": round(ev.time_s, 3), "kind": ev.failsafe, "action": ev.action}
                            for ev in autopilot.events if ev.kind == "failsafe"],
        "faults": [{"fault": f.label, "kind": f.kind, "start_s": f.start_s,
                    "end_s": None if math.isinf(f.end_s) else f.end_s,
                    "max_distance_from_path_m": round(fault_max[i], 2) if f.start_s < sim_time else None}
                   for i, f in enumerate(opts.faults)],
    }
    if byte_sensors is not None:
        report["gnss_driver"] = {k: v for k, v in byte_sensors.gnss.driver.stats().items()
                                 if isinstance(v, int) and not isinstance(v, bool) and k != "baud"}
        report["gnss_forged_epochs"] = byte_sensors.gnss.emitter.forged_epochs
    report.update(metrics.summary())
    report["thruster_usage"] = thruster_usage(thrust_log[:n_done], dt, [m.max_forward_n for m in maps],
                                              [m.max_reverse_n for m in maps])
    if loiter_track:
        from hil.sim.station_keeping import station_keeping
        lt = np.array(loiter_track)
        report["station_keeping"] = dict(station_keeping(lt[:, 0], lt[:, 1], mission.loiter_radius_m, lt[:, 2]),
                                         time_s=round(len(lt) * dt, 2), radius_m=mission.loiter_radius_m)
    if opts.initial_mode.upper() == "CALIBRATE_ON_WATER":
        report["calibrate_on_water"] = calibration_report(autopilot.events, heading_err_after_cal)
    auto = autopilot.modes["AUTO"]
    if mission.identification is not None:
        ident = cast("IdentificationMode", auto)
        report["identification"] = {"segments_flown": ident.index, "segments_total": len(ident.segments),
                                    "cut_short": ident.cut_short}
    if following is not None:
        report["model_following"] = following.figures()
    if mission.trajectory is not None and mission.trajectory.kind == "path":
        report["path"] = path_figures(np.array(track_err).reshape(-1, 2), auto)
    elif mission.trajectory is not None:
        report["trajectory"] = trajectory_figures(np.array(track_err).reshape(-1, 2), auto)
    trace_d = {name: trace[:n_done, i] for i, name in enumerate(TRACE_FIELDS)}
    return SimResult(report=report, trace=trace_d, thrust_n=thrust_log[:n_done], pulses_us=pulse_log[:n_done],
                     gps_ne=np.array(gps_ne).reshape(-1, 2), waypoints_ned=list(waypoints_ned),
                     start_ned=(n0, e0), events=list(autopilot.events), frame=frame,
                     thruster_names=tuple(t.name for t in vessel.thrusters))


def distorted_mag(vessel: VesselConfig) -> VesselConfig:
    """The vessel with a distorted simulated magnetometer: its own hard/soft iron, or where it has none those of
    `autopilot calibrate mag --sim` (30 uT hard iron, 10 % soft iron, oblique)."""
    from autopilot.vocab.config import mag_is_undistorted
    from hil.sim.mag_distortion import sim_distortion
    if not mag_is_undistorted(vessel):
        return vessel
    h, S = sim_distortion(vessel, 30.0, 10.0)
    mag = dataclasses.replace(vessel.sensors.mag, hard_iron_t=tuple(float(x) for x in h),
                              soft_iron=tuple(float(x) for x in S.ravel()))
    return dataclasses.replace(vessel, sensors=dataclasses.replace(vessel.sensors, mag=mag))


def calibration_report(events, heading_err_rad) -> dict:
    """What CALIBRATE_ON_WATER did: outcome ("accepted", "refused", "aborted" or "not finished"), its message,
    the fit's figures and time spent (from its event), and the RMS heading error in AUTO after it [deg]."""
    out: dict = {"outcome": "not finished", "message": "", "figures": None}
    for ev in events:
        if ev.kind == "calibration" and ev.message.startswith("CALIBRATE_ON_WATER"):
            out.update(outcome="accepted", message=ev.message, figures=ev.figures, time_s=round(ev.time_s, 2))
        elif ev.kind == "warning" and ev.message.startswith("CALIBRATE_ON_WATER"):
            out.update(outcome="aborted" if " aborted: " in ev.message else "refused", message=ev.message,
                       figures=ev.figures, time_s=round(ev.time_s, 2))
    err = np.asarray(heading_err_rad, dtype=float)
    out["heading_err_rms_deg_after"] = float(np.degrees(np.sqrt(np.mean(err ** 2)))) if len(err) else None
    out["heading_err_samples_after"] = int(len(err))
    return out


class _ThrustMapOutput:
    """The typed-level stand-in for the ESC output: pulses go straight through the thrust maps; always there."""

    connected = True

    def ready(self, t_s: float) -> bool:
        return True
