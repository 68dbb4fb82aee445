#!/usr/bin/env python3
"""Model following (paper 001): the WAM-V plant made to behave like FOKA's model, with FOKA's autopilot in MANUAL.

The operator's sticks drive FOKA's autopilot (allocation, ESC pulses, thrust maps as on the boat); its thrust
drives FOKA's model, which the WAM-V plant follows (hil.model_following). Inputs:
  ident      paper 001's identification inputs: hil.excitation's open-loop sequence for FOKA (about 220 s)
  gamepad    tests/data/gamepad/foka_gamepad_90s.csv (tools/make_gamepad_sequence.py, seed 13), 90 s
  cur+wind   the gamepad sequence in 0.3 m/s current toward 90 deg and 6 m/s wind from 45 deg
  mismatch   cur+wind on a WAM-V that differs from its file (random=0.3 factors, realistic extras); the
             follower keeps the wamv file's model
Each with the WAM-V's own thruster limits (x1) and with the follower allowed 10 x (a simulator's thrusters
are force inputs; the real WAM-V cannot turn like a 15 kg catamaran). Prints RMSE with / without following
and the cut in RMSE and MAE per state; paper 001's claim is a cut of more than 98 %.

Usage: python benchmarks/bench_model_following.py [--inputs ident,gamepad,cur+wind,mismatch] [--scales 1,10]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from autopilot.config import CONFIG_DIR, load_mission, load_vessel
from hil.environment import EnvironmentConfig
from hil.excitation import excitation
from hil.model_following import STATES, FollowingSetup, reduction_pct
from hil.plant_spec import PlantSpec, realistic_extras
from hil.sim_runner import SimOptions, run_sim

GAMEPAD_CSV = Path(__file__).resolve().parents[1] / "tests" / "data" / "gamepad" / "foka_gamepad_90s.csv"
START_S = 5.0                      # armed and settled before the sticks move
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
    """One MANUAL run of `vessel`'s autopilot on the plant; returns the report's model_following figures."""
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")     # only its start point and frame are used
    opts = SimOptions(seed=seed, env=env, duration_s=duration_s, initial_mode="MANUAL", on_cycle=operator,
                      plant_spec=plant_spec, model_following=setup, devices="typed")
    return run_sim(vessel, mission, opts).report["model_following"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", default="ident,gamepad,cur+wind,mismatch")
    ap.add_argument("--scales", default="1,10")
    args = ap.parse_args()
    foka, wamv = load_vessel("foka"), load_vessel("wamv")
    nominal = PlantSpec.resolve(foka, 1, plant_vessel=wamv)
    differing = PlantSpec.resolve(foka, 1, plant_vessel=wamv, mismatch={"random": 0.3},
                                  extras=realistic_extras(wamv))
    scenarios = {"ident": (excitation_operator(foka), EnvironmentConfig(), nominal),
                 "gamepad": (gamepad_operator(), EnvironmentConfig(), nominal),
                 "cur+wind": (gamepad_operator(), CUR_WIND, nominal),
                 "mismatch": (gamepad_operator(), CUR_WIND, differing)}
    print("FOKA's autopilot in MANUAL on a WAM-V plant following FOKA's model; RMSE with / without following "
          "[u, v m/s; r rad/s; x, y m; psi rad] and the cut in RMSE / MAE [%]")
    for name in args.inputs.split(","):
        (operator, duration), env, spec = scenarios[name]
        without = None
        for scale in (float(s) for s in args.scales.split(",")):
            w0 = time.perf_counter()
            if without is None:
                without = fly(foka, spec, FollowingSetup(follow=False, follower_vessel=wamv), operator, duration, env)
            with_ = fly(foka, spec, FollowingSetup(follower_vessel=wamv, thrust_limit_scale=scale), operator,
                        duration, env)
            red = reduction_pct(with_, without)
            print(f"\n{name}, {duration:.0f} s, follower thrust limit x{scale:g} (limited on "
                  f"{100 * with_['thrust_limited_frac']:.1f} % of steps; {time.perf_counter() - w0:.1f} s wall)")
            print("  state   RMSE with   RMSE without   cut RMSE   cut MAE   R2 with   R2 without")
            for s in STATES:
                a, b = with_[s], without[s]
                print(f"  {s:<5} {a['rmse']:11.4f} {b['rmse']:14.4f} {red[s]['rmse']:9.1f} {red[s]['mae']:9.1f}"
                      f" {a['r2'] if a['r2'] is not None else float('nan'):9.4f}"
                      f" {b['r2'] if b['r2'] is not None else float('nan'):12.4f}")
            met = [s for s in ("u", "r", "x", "y", "psi") if min(red[s]['rmse'] or 0, red[s]['mae'] or 0) >= 98.0]
            print(f"  >= 98 % cut on both RMSE and MAE: {', '.join(met) or 'none'} (of u, r, x, y, psi)")


if __name__ == "__main__":
    main()
