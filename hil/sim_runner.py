"""The in-process simulation: plant + emulated sensors + the real autopilot, one clock.

The runner owns simulated time. Each control cycle it advances the plant to t, collects what the sensors
produced, runs `Autopilot.step(t, batch)`, and turns the pulse widths the autopilot wrote back into thrust
demand through the same thrust maps (as an ESC and thruster would). Ground truth goes only to the metrics.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from autopilot.config import MissionConfig, VesselConfig
from autopilot.guidance import mission_frame, point_to_ned
from autopilot.vehicle import Autopilot
from hil.environment import EnvironmentConfig
from hil.plant import Plant
from hil.sim_metrics import SimMetrics

TRACE_FIELDS = ("t", "truth_n", "truth_e", "truth_psi", "truth_u", "est_n", "est_e", "est_psi", "est_u",
                "est_valid", "ref_psi", "ref_u", "xte_est", "wp_index", "surge_n", "yaw_nm")


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


def run_sim(vessel: VesselConfig, mission: MissionConfig, opts: SimOptions) -> SimResult:
    """Fly `mission` with `vessel` in the simulator and return the report and the trace."""
    frame = mission_frame(mission)
    autopilot = Autopilot(vessel, mission, frame=frame)
    waypoints_ned = autopilot.guidance.waypoints_ned
    n0, e0, psi0 = initial_pose(mission, frame, waypoints_ned)
    plant = Plant(vessel, opts.env, opts.seed, n0, e0, psi0)
    clock = [0.0]
    escs = None
    if opts.devices == "bytes":
        from hil.sim_devices import ByteLevelSensors, SimEscs
        sensors = ByteLevelSensors(vessel, frame, opts.seed, gps_noise=opts.gps_noise,
                                   gps_rate_hz=opts.gps_rate_hz, truth0=plant.truth)
        escs = SimEscs(vessel, autopilot.maps, clock=lambda: clock[0])
    elif opts.devices == "typed":
        from hil.sensor_models import TypedSensorSuite
        sensors = TypedSensorSuite(vessel, frame, opts.seed, gps_noise=opts.gps_noise,
                                   gps_rate_hz=opts.gps_rate_hz)
    else:
        raise ValueError(f"devices {opts.devices!r}: use 'bytes' or 'typed'")
    metrics = SimMetrics(lookahead_m=autopilot.guidance.lookahead_m)

    dt = 1.0 / vessel.control.loop_rate_hz
    if opts.duration_s is not None:
        t_end = opts.duration_s
    else:
        t_end = 120.0 + 3.0 * mission_length_m(waypoints_ned, (n0, e0)) / mission.cruise_speed_mps
    n_cycles = int(round(t_end / dt))
    maps = autopilot.maps

    trace = np.full((n_cycles, len(TRACE_FIELDS)), np.nan)
    thrust_log = np.zeros((n_cycles, len(maps)))
    pulse_log = np.zeros((n_cycles, len(maps)))
    gps_ne = []
    thrust_demand = [0.0] * len(maps)
    autopilot.arm(0.0)
    if escs is not None:
        escs.arm(0.0)
    autopilot.set_mode("AUTO", "simulation start")
    completed_at = None
    wall0 = time.perf_counter()
    k = 0
    for k in range(n_cycles):
        t = (k + 1) * dt
        clock[0] = t
        truth = plant.step_to(t, thrust_demand)
        batch = sensors.sample(truth)
        truth_ne = (truth.north_m, truth.east_m)
        for fix in batch.gps:
            if fix.valid:
                fne = frame.to_ned(fix.lat_deg, fix.lon_deg)
                gps_ne.append(fne)
                metrics.add_gps(fne, truth_ne)
        res = autopilot.step(t, batch)
        if escs is not None:
            escs.write(t, res.pulses)
            thrust_demand = escs.thrust_n()
            pulse_log[k] = escs.pulses_us
        else:
            thrust_demand = [m.pulse_to_thrust(p) for m, p in zip(maps, res.pulses.pulse_us)]
            pulse_log[k] = res.pulses.pulse_us
        in_auto = res.mode == "AUTO"
        metrics.add_cycle(t, truth_ne, truth.heading_rad, res.nav, autopilot.guidance.leg if in_auto else None,
                          autopilot.guidance.index, in_auto)
        nav, sp = res.nav, res.setpoint
        trace[k] = (t, truth.north_m, truth.east_m, truth.heading_rad, truth.surge_mps,
                    nav.north_m, nav.east_m, nav.heading_rad, nav.surge_mps, float(nav.valid),
                    sp.heading_rad if sp else np.nan, sp.speed_mps if sp else np.nan,
                    sp.xte_m if (sp and in_auto) else np.nan, autopilot.guidance.index,
                    res.wrench.surge_n, res.wrench.yaw_nm)
        thrust_log[k] = res.thrust.thrust_n
        if completed_at is None and autopilot.guidance.complete:
            completed_at = t
        if opts.realtime:
            lag = t - (time.perf_counter() - wall0)
            if lag > 0:
                time.sleep(lag)
        if opts.duration_s is None and completed_at is not None and t >= completed_at + opts.linger_s:
            break
    wall = time.perf_counter() - wall0
    if escs is not None:
        escs.close()
        sensors.close()
    n_done = k + 1
    sim_time = n_done * dt
    report = {
        "vessel": vessel.name,
        "mission": mission.name,
        "seed": opts.seed,
        "mission_complete": bool(autopilot.guidance.complete),
        "mission_complete_time_s": completed_at,
        "waypoints_reached": autopilot.guidance.waypoints_reached,
        "waypoints_total": autopilot.guidance.waypoints_total,
        "sim_time_s": round(sim_time, 3),
        "wall_time_s": round(wall, 3),
        "realtime_factor": round(sim_time / wall, 1) if wall > 0 else float("inf"),
        "control_rate_hz": vessel.control.loop_rate_hz,
        "gps_noise": opts.gps_noise,
        "gps_rate_hz": opts.gps_rate_hz or vessel.sensors.gnss.rate_hz,
        "devices": opts.devices,
    }
    report.update(metrics.summary())
    trace_d = {name: trace[:n_done, i] for i, name in enumerate(TRACE_FIELDS)}
    return SimResult(report=report, trace=trace_d, thrust_n=thrust_log[:n_done], pulses_us=pulse_log[:n_done],
                     gps_ne=np.array(gps_ne).reshape(-1, 2), waypoints_ned=list(waypoints_ned),
                     start_ned=(n0, e0), events=list(autopilot.events), frame=frame)
