#!/usr/bin/env python3
"""Model following (paper 001): the WAM-V plant made to behave like FOKA's model, with FOKA's autopilot in MANUAL.

The operator's sticks drive FOKA's autopilot (allocation, ESC pulses, thrust maps as on the boat); its thrust
drives FOKA's model, which the WAM-V plant follows (hil.sim.model_following). Inputs:
  ident      paper 001's identification inputs: hil.sim.excitation's open-loop sequence for FOKA (about 220 s)
  gamepad    tests/data/gamepad/foka_gamepad_90s.csv (tools/make_gamepad_sequence.py, seed 13), 90 s
  cur+wind   the gamepad sequence in 0.3 m/s current toward 90 deg and 6 m/s wind from 45 deg
  mismatch   cur+wind on a WAM-V that differs from its file (random=0.3 factors, realistic extras); the
             follower keeps the wamv file's model
  auto       that WAM-V in current + wind, FOKA's autopilot flying the demo survey in AUTO for 150 s (gentler
             than the identification turns: what a mission asks of the hull)
Each with the WAM-V's own thruster limits (x1) and with the follower allowed 10 x or 20 x (a simulator's thrusters
are force inputs; the real WAM-V cannot turn like a 15 kg catamaran), with and without the sway force (paper
001 controls u and r only). Prints RMSE with / without following and the cut in RMSE and MAE per state;
paper 001's claim is a cut of more than 98 %.

Usage: python benchmarks/bench_model_following.py [--inputs ident,gamepad,cur+wind,mismatch,auto]
                                                  [--variants x1,x10,x1+sway,x10+sway,x20+sway]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.excitation import excitation
from hil.sim.model_following import STATES, FollowingSetup, reduction_pct
from hil.sim.plant_spec import PlantSpec, realistic_extras
from hil.sim.runner import SimOptions, run_sim

GAMEPAD_CSV = Path(__file__).resolve().parents[1] / "tests" / "data" / "gamepad" / "foka_gamepad_90s.csv"
START_S = 5.0                      # armed and settled before the sticks move
AUTO_S = 150.0                     # of the demo mission in AUTO (the first legs of the survey)
CUR_WIND = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90.0, wind_speed_mps=6.0, wind_from_deg=45.0)


def gamepad_operator(path: Path = GAMEPAD_CSV):
    """(operator(t, autopilot, truth), duration_s) playing the CSV's sticks, sample and hold."""
    rows = np.loadtxt(path, delimiter=",", comments="#", skiprows=2)
    step = rows[1, 0] - rows[0, 0]

    def operator(t, ap, truth):
        k = int((t - START_S) / step)
        th, st = (rows[k, 1], rows[k, 2]) if 0 <= k < len(rows) else (0.0, 0.0)
        ap.operator_command(t, th, st)
    return operator, START_S + rows[-1, 0]


def excitation_operator(vessel):
    t_in, x_in, n_in = excitation(vessel, seed=1)
    step = t_in[1] - t_in[0]

    def operator(t, ap, truth):
        k = int((t - START_S) / step)
        x, n = (x_in[k], n_in[k]) if 0 <= k < len(t_in) else (0.0, 0.0)
        ap.operator_command(t, x / ap.manual.max_surge_n, n / ap.manual.max_yaw_nm)
    return operator, START_S + t_in[-1]


def fly(vessel, plant_spec, setup, operator, duration_s, env, seed=1) -> dict:
    """One MANUAL run of `vessel`'s autopilot on the plant (operator None: the demo mission in AUTO); returns
    the report's model_following figures."""
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")     # MANUAL: only its start point and frame
    opts = SimOptions(seed=seed, env=env, duration_s=duration_s, initial_mode="MANUAL" if operator else "AUTO",
                      on_cycle=operator, plant_spec=plant_spec, model_following=setup, devices="typed")
    return run_sim(vessel, mission, opts).report["model_following"]


VARIANTS = {"x1": dict(thrust_limit_scale=1.0), "x10": dict(thrust_limit_scale=10.0),
            "x1+sway": dict(thrust_limit_scale=1.0, sway_force=True),
            "x10+sway": dict(thrust_limit_scale=10.0, sway_force=True),
            "x20+sway": dict(thrust_limit_scale=20.0, sway_force=True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", default="ident,gamepad,cur+wind,mismatch,auto")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    foka, wamv = load_vessel("foka"), load_vessel("wamv")
    nominal = PlantSpec.resolve(foka, 1, plant_vessel=wamv)
    differing = PlantSpec.resolve(foka, 1, plant_vessel=wamv, mismatch={"random": 0.3},
                                  extras=realistic_extras(wamv))
    scenarios = {"ident": (excitation_operator(foka), EnvironmentConfig(), nominal),
                 "gamepad": (gamepad_operator(), EnvironmentConfig(), nominal),
                 "cur+wind": (gamepad_operator(), CUR_WIND, nominal),
                 "mismatch": (gamepad_operator(), CUR_WIND, differing),
                 "auto": ((None, AUTO_S), CUR_WIND, differing)}
    variants = args.variants.split(",")
    print("FOKA's autopilot in MANUAL on a WAM-V plant following FOKA's model. Per state: RMSE without following "
          "[u, v m/s; r rad/s; x, y m; psi rad], then per follower variant the RMSE with it and the cut in "
          "RMSE / MAE [%].\nVariants: xF = the follower may use F x the WAM-V's thrust limits; +sway = the sway "
          "force (a lateral force no WAM-V thruster gives) is on.")
    for name in args.inputs.split(","):
        (operator, duration), env, spec = scenarios[name]
        w0 = time.perf_counter()
        without = fly(foka, spec, FollowingSetup(follow=False, follower_vessel=wamv), operator, duration, env)
        runs = {v: fly(foka, spec, FollowingSetup(follower_vessel=wamv, **VARIANTS[v]), operator, duration, env)
                for v in variants}
        print(f"\n{name}, {duration:.0f} s ({time.perf_counter() - w0:.0f} s wall for {1 + len(runs)} runs)")
        print("  state  without " + "".join(f"| {v:>8}: RMSE  cut RMSE/MAE " for v in variants))
        for st in STATES:
            row = f"  {st:<5} {without[st]['rmse']:8.4f} "
            for v in variants:
                red = reduction_pct(runs[v], without)[st]
                row += f"| {runs[v][st]['rmse']:14.4f} {red['rmse']:6.1f} {red['mae']:5.1f} "
            print(row)
        for v in variants:
            r = runs[v]
            red = reduction_pct(r, without)
            met = [st for st in ("u", "r", "x", "y", "psi") if min(red[st]["rmse"], red[st]["mae"]) >= 98.0]
            sway = (f", sway force rms {r['sway_force_rms_n']:.0f} N peak {r['sway_force_max_n']:.0f} N"
                    if r["sway_force"] else "")
            print(f"  {v}: thrust limited on {100 * r['thrust_limited_frac']:.1f} % of steps{sway}; "
                  f">= 98 % cut of RMSE and MAE on: {', '.join(met) or 'none'} (of u, r, x, y, psi)")


if __name__ == "__main__":
    main()
