"""The flights of the gain check (autopilot/identification/gain_check.py) on a vessel's own simulated plant: a
heading step and a two-leg mission at cruise, controllers on the true state with a little noise, in the
check's weather. Pure simulation, deterministic for a seed, no I/O but a temporary mission file."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

STEP_DEG = 20.0                   # the heading step
STEP_AT_S, STEP_END_S = 5.0, 40.0
SETTLE_BAND_DEG = 1.0             # settled: within this of the new heading from then on
CRUISE_FRACTION = 0.4             # of hull.max_speed_mps
LEG_HULL_LENGTHS = 12.0           # each leg of the mission
WIND_MPS, GUST_MPS = 2.0, 0.3     # from the beam (90 deg) of the first leg
HEADING_NOISE_DEG, YAW_RATE_NOISE_DPS = 0.3, 0.1


def _controllers(vessel):
    from autopilot.control.azimuth_allocation import make_allocator
    from autopilot.control.heading_speed import HeadingController, SpeedController
    from drivers.thrust_map import make_thrust_maps
    alloc = make_allocator(vessel, list(make_thrust_maps(vessel)))
    return (alloc, HeadingController(vessel, alloc.max_yaw_nm),
            SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n))


def _env():
    from hil.sim.environment import EnvironmentConfig
    return EnvironmentConfig(wind_speed_mps=WIND_MPS, wind_from_deg=90.0, gust_std_mps=GUST_MPS)


def _cruise_mps(vessel) -> float:
    return CRUISE_FRACTION * vessel.hull.max_speed_mps


def heading_step(vessel, seed: int = 1) -> dict:
    """A STEP_DEG heading step at cruise on `vessel`'s own plant: overshoot [deg], settling time [s]."""
    from autopilot.control.azimuth_allocation import angles_or_zero
    from autopilot.vocab.angles import wrap_pi
    from autopilot.vocab.types import Wrench
    from hil.sim.plant import Plant
    alloc, hc, sc = _controllers(vessel)
    cruise = _cruise_mps(vessel)
    plant = Plant(vessel, _env(), seed, 0.0, 0.0, 0.0, surge_mps=cruise)
    rng = np.random.default_rng([seed, 0x6A])
    dt = 1.0 / vessel.control.loop_rate_hz
    n = len(vessel.thrusters)
    pods = any(t.azimuth is not None for t in vessel.thrusters)
    thrust, angle = [0.0] * n, ([0.0] * n if pods else None)
    step = math.radians(STEP_DEG)
    peak, last_out = -math.inf, STEP_AT_S
    for k in range(1, int(STEP_END_S / dt) + 1):
        t = k * dt
        tr = plant.step_to(t, thrust, angle)
        ref = step if t >= STEP_AT_S else 0.0
        psi = tr.heading_rad + math.radians(HEADING_NOISE_DEG) * rng.standard_normal()
        r = tr.yaw_rate_rps + math.radians(YAW_RATE_NOISE_DPS) * rng.standard_normal()
        cmd = alloc.allocate(Wrench(sc.update(t, tr.surge_mps, cruise), hc.update(t, psi, r, ref)))
        thrust, angle = list(cmd.thrust_n), (list(angles_or_zero(cmd)) if pods else None)
        if t >= STEP_AT_S:
            err = math.degrees(wrap_pi(tr.heading_rad - step))
            peak = max(peak, err)
            if abs(err) > SETTLE_BAND_DEG:
                last_out = t
    return {"overshoot_deg": max(0.0, peak), "settle_s": last_out - STEP_AT_S}


def _mission(vessel):
    from autopilot.vocab.config import load_mission
    leg = LEG_HULL_LENGTHS * vessel.hull.length_m
    text = (f"name: gain-check\nanchor: {{lat_deg: 51.11, lon_deg: 17.06}}\n"
            f"start: {{point: {{north_m: 0.0, east_m: 0.0}}, heading_deg: 0}}\n"
            f"waypoints: [{{north_m: {leg:.3f}, east_m: 0.0}}, {{north_m: {leg:.3f}, east_m: {leg:.3f}}}]\n"
            f"guidance: {{law: ilos, sigma: 0.3}}\n"
            f"cruise_speed_mps: {_cruise_mps(vessel):.3f}\nacceptance_radius_m: {max(1.0, vessel.hull.length_m):.2f}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gain_check.yaml"
        path.write_text(text)
        return load_mission(path)


def leg_and_turn(vessel, seed: int = 1) -> dict:
    """The two-leg mission at cruise, guidance and controllers on the (noisy) true state of `vessel`'s own
    plant: cross-track RMS [m], speed error RMS [m/s], completed."""
    from autopilot.control.azimuth_allocation import angles_or_zero
    from autopilot.guidance.path_following import MissionGuidance
    from autopilot.vocab.types import NavState, Wrench
    from hil.sim.plant import Plant
    alloc, hc, sc = _controllers(vessel)
    mission = _mission(vessel)
    guidance = MissionGuidance(mission, vessel, max_yaw_nm=alloc.max_yaw_nm)
    cruise = _cruise_mps(vessel)
    plant = Plant(vessel, _env(), seed, 0.0, 0.5 * vessel.hull.length_m, 0.0, surge_mps=cruise)
    rng = np.random.default_rng([seed, 0x1E])
    dt = 1.0 / vessel.control.loop_rate_hz
    n = len(vessel.thrusters)
    pods = any(t.azimuth is not None for t in vessel.thrusters)
    thrust, angle = [0.0] * n, ([0.0] * n if pods else None)
    cap_s = 3.0 * 2.0 * LEG_HULL_LENGTHS * vessel.hull.length_m / cruise + 30.0
    xte, speed_err, done = [], [], False
    for k in range(1, int(cap_s / dt) + 1):
        t = k * dt
        tr = plant.step_to(t, thrust, angle)
        nav = NavState(t, tr.north_m, tr.east_m,
                       tr.heading_rad + math.radians(HEADING_NOISE_DEG) * rng.standard_normal(),
                       tr.surge_mps, tr.sway_mps,
                       tr.yaw_rate_rps + math.radians(YAW_RATE_NOISE_DPS) * rng.standard_normal())
        sp = guidance.update(t, nav)
        if sp is None:
            done = True
            break
        xte.append(sp.xte_m)
        speed_err.append(sp.speed_mps - tr.surge_mps)
        cmd = alloc.allocate(Wrench(sc.update(t, nav.surge_mps, sp.speed_mps),
                                    hc.update(t, nav.heading_rad, nav.yaw_rate_rps, sp.heading_rad,
                                              sp.yaw_rate_ff_rps)))
        thrust, angle = list(cmd.thrust_n), (list(angles_or_zero(cmd)) if pods else None)
    return {"xte_rms_m": float(np.sqrt(np.mean(np.square(xte)))),
            "speed_err_rms_mps": float(np.sqrt(np.mean(np.square(speed_err)))), "complete": done}
