"""Realtime factor of the full loop: plant + sensors + EKF + guidance + control + allocation + thrust maps.

Runs missions in the in-process simulator, with the typed sensor models and with the byte-level devices
under the real drivers (the default of `autopilot sim`), at the vessels' 50 Hz control rate and prints, for each, the
simulated time over the CPU time of this process (one core; `time.process_time`, so other load on the
machine does not count against us), best of N repeats, plus the per-cycle cost in microseconds.

    python benchmarks/bench_loop.py [--repeats 3] [--duration 300]
"""
from __future__ import annotations

import argparse
import time

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.runner import SimOptions, run_sim

CASES = (
    ("demo", "foka", EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2,
                                       current_toward_deg=0, wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)),
    ("straight_line", "wamv", EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90)),
    ("hexagon", "wamv", EnvironmentConfig(wind_speed_mps=3, wind_from_deg=45)),
    ("demo", "iacquabot", EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=45)),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=300.0, help="simulated seconds per run")
    ap.add_argument("--devices", choices=("bytes", "typed", "both"), default="both")
    args = ap.parse_args()
    levels = ("typed", "bytes") if args.devices == "both" else (args.devices,)
    print(
        f"{'devices':7s} {'mission':15s} {'vessel':10s} {'sim s':>7s} {'cpu s':>7s} {'RTF (cpu)':>10s} "
        f"{'us/cycle':>9s} {'RTF (wall)':>10s}"
    )
    for level, (mission_name, vessel_name, env) in [(lv, c) for lv in levels for c in CASES]:
        vessel = load_vessel(vessel_name)
        mission = load_mission(CONFIG_DIR / "missions" / f"{mission_name}.yaml")
        best = None
        for _ in range(args.repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            res = run_sim(vessel, mission, SimOptions(seed=1, env=env, duration_s=args.duration,
                                                            devices=level))
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            if best is None or cpu < best[0]:
                best = (cpu, wall, res.report["sim_time_s"])
        cpu, wall, sim = best
        cycles = sim * vessel.control.loop_rate_hz
        print(f"{level:7s} {mission_name:15s} {vessel_name:10s} {sim:7.1f} {cpu:7.2f} {sim / cpu:10.1f} "
              f"{1e6 * cpu / cycles:9.1f} {sim / wall:10.1f}")


if __name__ == "__main__":
    main()
