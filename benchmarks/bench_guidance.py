"""Guidance and control figures: ILOS against plain LOS in a cross current, the 20 deg heading step, and the
demo survey's cross-track error over seeds.

    python benchmarks/bench_guidance.py [--seeds 4]

1. `straight_line.yaml` on the WAM-V with a 0.3 m/s current across the leg: mean true cross-track error over
   the second half of the leg, ILOS (the mission's sigma) and LOS (sigma = 0), each with and without the
   crab-angle compensation (plain LOS = sigma 0, no compensation, the textbook law), with white 10 Hz GNSS
   (measures the guidance law) and with the default realistic 1 Hz GNSS (what a user sees).
2. A 20 deg heading step at cruise on each preset, on the full plant with the true state fed back (measures
   the controller): overshoot, time to settle within 1 deg, the lowest thruster command.
3. The README's demo command (foka, wind 3 from 90, current 0.2 toward 0, waves 0.2/3/90, white GNSS):
   xte_rms_m per seed.
"""
from __future__ import annotations

import argparse
import dataclasses
import math

import numpy as np

from autopilot.control.allocation import Allocator
from autopilot.control.heading_speed import HeadingController, SpeedController
from autopilot.guidance.path_following import Leg
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_map
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.runner import SimOptions, run_sim

MISSIONS = CONFIG_DIR / "missions"
CRUISE_MPS = {"foka": 0.8, "iacquabot": 1.0, "wamv": 1.5}


def ilos_rows(seeds) -> None:
    vessel, mission = load_vessel("wamv"), load_mission(MISSIONS / "straight_line.yaml")
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90)
    print("straight_line / wamv, current 0.3 m/s across: mean true XTE over the second half of the leg [m]")
    for label, kw in (("white, 10 Hz", dict(gps_noise="white", gps_rate_hz=10)),
                      ("realistic, 1 Hz (default)", dict(gps_noise="realistic"))):
        for law, sigma, crab, name in (("ilos", mission.guidance.sigma, True, "ilos + crab"),
                                       ("ilos", mission.guidance.sigma, False, "ilos"),
                                       ("los", 0.0, True, "los + crab"),
                                       ("los", 0.0, False, "plain los")):
            m = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance, law=law, sigma=sigma,
                                                                          crab_compensation=crab))
            means = []
            for seed in seeds:
                res = run_sim(vessel, m, SimOptions(seed=seed, env=env, **kw))
                (n0, e0), (n1, e1) = res.waypoints_ned[:2]
                leg = Leg(n0, e0, n1, e1)
                a = np.array([leg.along_cross_m(n, e) for n, e in zip(res.trace["truth_n"], res.trace["truth_e"])])
                half = (a[:, 0] > leg.length_m / 2) & (a[:, 0] < leg.length_m)
                means.append(float(np.mean(a[half, 1])))
            print(f"  {label:26s} {name:11s} sigma {sigma:3.1f}: " + " ".join(f"{x:+.3f}" for x in means))


def heading_step_rows() -> None:
    print("20 deg heading step at cruise, full plant, true state fed back")
    for name in ("foka", "iacquabot", "wamv"):
        vessel = load_vessel(name)
        maps = [make_thrust_map(t, vessel) for t in vessel.thrusters]
        alloc = Allocator(vessel, maps)
        hc = HeadingController(vessel, alloc.max_yaw_nm)
        sc = SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n)
        u = CRUISE_MPS[name]
        plant = Plant(vessel, EnvironmentConfig(), seed=1, north_m=0, east_m=0, heading_rad=0.0, surge_mps=u)
        thrust, dt, t_step = [0.0] * len(maps), 0.02, 20.0
        psi, low, times = [], math.inf, []
        for k in range(1, int(60 / dt)):
            t = k * dt
            ref = math.radians(20.0) if t >= t_step else 0.0
            tr = plant.step_to(t, thrust)
            thrust = list(alloc.allocate(Wrench(sc.update(t, tr.surge_mps, u),
                                                hc.update(t, tr.heading_rad, tr.yaw_rate_rps, ref))).thrust_n)
            if t >= t_step:
                psi.append(math.degrees(tr.heading_rad))
                times.append(t - t_step)
                low = min(low, min(thrust))
        psi, times = np.array(psi), np.array(times)
        outside = np.nonzero(np.abs(psi - 20.0) > 1.0)[0]
        settle = times[outside[-1] + 1] if len(outside) else 0.0
        print(f"  {name:10s} at {u:.1f} m/s: overshoot {psi.max() - 20.0:5.2f} deg, settled within 1 deg after "
              f"{settle:4.1f} s, lowest thruster command {low:+7.1f} N")


def demo_rows(seeds) -> None:
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    vessel, mission = load_vessel("foka"), load_mission(MISSIONS / "demo.yaml")
    print("demo / foka, wind 3 from 90, current 0.2 toward 0, waves 0.2/3/90, white GNSS: xte_rms_m per seed")
    for devices in ("bytes", "typed"):
        xs = [run_sim(vessel, mission, SimOptions(seed=s, env=env, gps_noise="white", devices=devices))
              .report["xte_rms_m"] for s in seeds]
        print(f"  {devices:6s} " + " ".join(f"{x:.3f}" for x in xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    args = ap.parse_args()
    seeds = range(1, args.seeds + 1)
    ilos_rows(seeds)
    heading_step_rows()
    demo_rows(seeds)


if __name__ == "__main__":
    main()
