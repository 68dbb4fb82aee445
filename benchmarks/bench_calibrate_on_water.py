"""First day on the water: `autopilot sim demo.yaml --no-mag-calibration --calibrate-on-water`, measured.

    python benchmarks/bench_calibrate_on_water.py [--seeds 1,2] [--quick]

The simulated LSM9DS1 is distorted (30 uT hard iron, 10 % soft iron, `autopilot calibrate mag --sim`'s) and
the autopilot has no calibration. Mission: the demo survey (config/missions/demo.yaml). Hulls: the vessel
file itself, and a foreign hull (`--mismatch random=0.5`, drawn from the seed). Water: calm; scripts/demo.sh's
(wind 3 m/s from 90 deg, current 0.2 m/s toward 0 deg, waves 0.2 m / 3 s from 90 deg); the same with the
waves rolling and pitching the hull (plant extra wave_motion).

Printed per run:
  outcome   accepted / refused / aborted
  circles   time of the circles until the fit [s]; to AUTO: from arming to AUTO (circles + 10 s straight) [s]
  fit       readings, coverage, residual [% of the field], field ratio, anisotropy (the one-off fit's figures)
  box       the farthest the true position got from where the circles began, along north or east (the box
            check's measure; sensors.mag.on_water.box_m is 50 m, so 25 m aborts) [m]
  hi_err    |fitted - true| horizontal hard iron [uT] (true: the simulated hard iron plus the soft iron's
            coupling of the vertical field, which a level-turn fit takes into its offset)
  after     RMS heading error (EKF - plant truth) in AUTO after the calibration [deg]
  exact     the same run with the simulator's exact calibration and no circles: RMS heading error in AUTO [deg]
Nothing is asserted; tests/modes/test_calibrate_on_water.py holds the shorter closed-loop version.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant_spec import PlantExtras, PlantSpec, parse_mismatch
from hil.sim.runner import SimOptions, distorted_mag, run_sim

CALM = EnvironmentConfig()
WATER = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, current_speed_mps=0.2, current_toward_deg=0.0,
                          wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)
CONDITIONS = (("calm", CALM, False), ("wind+waves", WATER, False), ("wind+waves, rolling", WATER, True))


def auto_heading_rms_deg(res) -> float:
    t = res.trace
    auto = np.isfinite(t["xte_est"])
    e = np.remainder(t["est_psi"][auto] - t["truth_psi"][auto] + math.pi, 2 * math.pi) - math.pi
    return math.degrees(float(np.sqrt(np.mean(e ** 2)))) if e.size else float("nan")


def true_horizontal_offset_t(vessel) -> np.ndarray:
    mag = vessel.sensors.mag
    h = np.asarray(mag.hard_iron_t, dtype=float)
    S = np.asarray(mag.soft_iron, dtype=float).reshape(3, 3)
    bz = mag.field_t * math.sin(math.radians(mag.inclination_deg))
    return h[:2] + S[:2, 2] * bz


def row(vessel, mission, seed, hull, water, env, rolling):
    distorted = distorted_mag(vessel)
    mismatch = parse_mismatch("random=0.5") if hull == "foreign" else {}
    spec = PlantSpec.resolve(distorted, seed, mismatch=mismatch, extras=PlantExtras(wave_motion=rolling))
    res = run_sim(vessel, mission, SimOptions(seed=seed, env=env, plant_spec=spec, mag_calibration="none",
                                              initial_mode="CALIBRATE_ON_WATER"))
    exact = run_sim(distorted, mission, SimOptions(seed=seed, env=env, plant_spec=spec))
    c = res.report["calibrate_on_water"]
    f = c["figures"] or {}
    armed = res.report["armed_at_s"] or 0.0
    to_auto = next((e.time_s for e in res.events if e.kind == "mode" and "CALIBRATE_ON_WATER -> AUTO" in e.message),
                   None)
    hi = (float(np.linalg.norm(np.array(f["offset_ut"][:2]) * 1e-6 - true_horizontal_offset_t(distorted))) * 1e6
          if f.get("offset_ut") else float("nan"))
    after = c["heading_err_rms_deg_after"]
    t = res.trace
    during = (t["t"] >= armed) & (t["t"] <= (to_auto or t["t"][-1]))
    n0, e0 = t["truth_n"][during][0], t["truth_e"][during][0]
    box = float(np.max(np.maximum(np.abs(t["truth_n"][during] - n0), np.abs(t["truth_e"][during] - e0))))
    fit = (f"{f['n_samples']:5d} {f['coverage']:4.0%} {f['residual_rms_pct']:5.2f} % {f['field_ratio']:5.2f} "
           f"{f['anisotropy']:5.2f}" if f.get("coverage") is not None else "-")
    print(f"{hull:8s} {water:20s} {seed:4d}  {c['outcome']:8s} {f.get('time_s', float('nan')):6.1f} "
          f"{(to_auto - armed) if to_auto else float('nan'):6.1f}  {fit}  {box:4.1f}  {hi:5.2f}  "
          f"{after if after is not None else float('nan'):5.2f}  {auto_heading_rms_deg(exact):5.2f}  "
          f"{'done' if res.report['mission_complete'] else 'NOT done'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--quick", action="store_true", help="seed 1 only")
    args = ap.parse_args()
    seeds = [1] if args.quick else [int(s) for s in args.seeds.split(",")]
    vessel = load_vessel("foka")
    mission = load_mission(CONFIG_DIR / "missions/demo.yaml")
    print("hull     water                seed  outcome  circles toAUTO  fit: n cov resid ratio aniso   box  hi_err  "
          "after  exact  mission")
    for hull in ("matched", "foreign"):
        for water, env, rolling in CONDITIONS:
            for seed in seeds:
                row(vessel, mission, seed, hull, water, env, rolling)


if __name__ == "__main__":
    main()
