"""Failsafe figures from `autopilot sim` runs with injected faults, and LOITER station keeping.

    python benchmarks/bench_failsafes.py [--seed 1] [--mismatch KEY=FACTOR,...]

Fault runs: foka on the demo survey, current 0.2 m/s toward 90 deg, wind 3 m/s from 45 deg, white GNSS noise
(the conditions of tests/safety/test_faults.py). Printed per fault: the failsafe events (time, kind, action), the mode
at the end, and the largest distance of the true position from the planned path while the fault lasted (the
report's `faults[].max_distance_from_path_m`).
LOITER: ten minutes on a point in 0.3 m/s current and 5 m/s wind, white GNSS noise, true position: the share of
the time inside the 2 m loiter radius, the 95th percentile and the largest distance.
`--mismatch` flies every run on a plant scaled away from the vessel file (hil.sim.plant_spec), to show genuine
faults are still caught when the model is wrong. Nothing here is asserted; the figures are for the issue notes.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.faults import parse_fault
from hil.sim.plant_spec import PlantSpec, parse_mismatch
from hil.sim.runner import SimOptions, run_sim

MISMATCH: dict = {}


def _plant(seed: int):
    """The plant for every run: the vessel file scaled by --mismatch (None: the file itself)."""
    return PlantSpec.resolve(load_vessel("foka"), seed, mismatch=MISMATCH) if MISMATCH else None

FAULT_ENV = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=90, wind_speed_mps=3.0, wind_from_deg=45)
FAULTS = (
    "gps-loss@60:60",
    "gps-glitch@60:10",
    "gps-glitch@60:10=20",
    "imu-loss@60:20",
    "mag-loss@60:20",
    "link-loss@60",
    "esc-disconnect@60",
    "low-battery@60",
)
STATION = """name: station
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start: {point: {north_m: 0.0, east_m: 0.0}, heading_deg: 0}
waypoints: [{north_m: 0.0, east_m: 0.0}]
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
on_complete: loiter
loiter_radius_m: 2.0
"""


def fault_rows(seed: int) -> None:
    vessel, mission = load_vessel("foka"), load_mission(CONFIG_DIR / "missions/demo.yaml")
    print("fault runs: foka, demo survey, current 0.2 m/s toward 90, wind 3 m/s from 45, white GNSS")
    for spec in FAULTS:
        r = run_sim(vessel, mission, SimOptions(seed=seed, env=FAULT_ENV, gps_noise="white", duration_s=200.0,
                                                plant_spec=_plant(seed),
                                                faults=(parse_fault(spec),))).report
        events = ", ".join(f"{e['time_s']:.1f} s {e['kind']} -> {e['action']}" for e in r["failsafe_events"])
        worst = r["faults"][0]["max_distance_from_path_m"]
        print(f"  {spec:18s} max from path {worst:5.2f} m, final mode {r['final_mode']:7s} "
              f"armed {str(r['armed_at_end']):5s} | {events}")


FENCED = """name: fenced-pond
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start: {point: {north_m: 0.0, east_m: 0.0}, heading_deg: 0}
waypoints: [{north_m: 10.0, east_m: 0.0}]
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
geofence: [{north_m: -20.0, east_m: -30.0}, {north_m: 40.0, east_m: -30.0}, {north_m: 40.0, east_m: 30.0},
           {north_m: -20.0, east_m: 30.0}]
"""


def geofence_row(seed: int) -> None:
    """MANUAL at half throttle due north toward a fence 40 m away: where the boat stops and what it does."""
    from autopilot.guidance.path_following import mission_frame, point_to_ned
    from autopilot.safety.geofence import Geofence
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fenced.yaml"
        path.write_text(FENCED)
        mission = load_mission(path)
        res = run_sim(load_vessel("foka"), mission, SimOptions(
            seed=seed, gps_noise="white", duration_s=150.0, initial_mode="MANUAL", plant_spec=_plant(seed),
            on_cycle=lambda t, ap, truth: ap.operator_command(t, 0.5, 0.0)))
    frame = mission_frame(mission)
    fence = Geofence(point_to_ned(p, frame) for p in mission.geofence)
    tr = res.trace
    margin = min(fence.signed_distance_m(n, e) for n, e in zip(tr["truth_n"], tr["truth_e"]))
    fs = [e for e in res.events if e.kind == "failsafe"]
    modes = " -> ".join(["MANUAL"] + [e.message.split(" -> ")[1].split(":")[0]
                                      for e in res.events if e.kind == "mode" and " -> " in e.message][1:])
    print(f"geofence: MANUAL at half throttle toward a fence 40 m north: failsafe at {fs[0].time_s:.1f} s "
          f"({fs[0].failsafe} -> {fs[0].action}), closest approach to the fence {margin:.2f} m; modes {modes}")


def loiter_rows(seed: int) -> None:
    print("LOITER ten minutes, foka, 0.3 m/s current, 5 m/s wind, white GNSS, true position")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "station.yaml"
        path.write_text(STATION)
        mission = load_mission(path)
        for toward, wind_from in ((90.0, 270.0), (90.0, 200.0), (0.0, 90.0)):
            env = EnvironmentConfig(
                current_speed_mps=0.3, current_toward_deg=toward, wind_speed_mps=5.0, wind_from_deg=wind_from
            )
            res = run_sim(load_vessel("foka"), mission, SimOptions(seed=seed, env=env, gps_noise="white",
                                                                  plant_spec=_plant(seed),
                                                                  duration_s=620.0))
            t0 = min(e.time_s for e in res.events if e.kind == "mode" and "-> LOITER" in e.message)
            tr = res.trace
            m = (tr["t"] >= t0) & (tr["t"] < t0 + 600.0)
            d = np.hypot(tr["truth_n"][m], tr["truth_e"][m])
            inside = 100 * np.mean(d <= 2.0)
            print(f"  current toward {toward:5.1f}, wind from {wind_from:5.1f}: inside 2 m {inside:5.1f} %"
                  f", 95th percentile {np.percentile(d, 95):.2f} m, max {d.max():.2f} m")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mismatch", type=parse_mismatch, default={}, metavar="KEY=FACTOR,...")
    args = ap.parse_args()
    MISMATCH.update(args.mismatch)
    if args.mismatch:
        print(f"plant mismatch: {args.mismatch}")
    fault_rows(args.seed)
    geofence_row(args.seed)
    loiter_rows(args.seed)


if __name__ == "__main__":
    main()
