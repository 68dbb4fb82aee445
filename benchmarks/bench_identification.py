"""Hull identification on the simulator, through the whole pipeline (issue 12, first figures).

Each preset's own plant (matched: the file is the truth) is driven in MANUAL by a scripted operator with the
open-loop excitation of hil/excitation.py (surge steps, fixed-moment turns both ways, sinusoid, square, PRBS),
through the real drivers (emulated L76K at the vessel's GNSS rate, LSM9DS1, pigpio ESCs) and the EKF. The fit
uses what a boat logs: the EKF's u, v, r and the thrust of the pulses actually sent (through the thrust map),
and, for comparison, the plant's true u, v, r. A second run with another PRBS draw validates: the identified
model run free on its inputs, R^2 of u, v, r, x, y, psi (000 Table 4's measures).

    python benchmarks/bench_identification.py [--presets foka,iacquabot,wamv] [--window 1.0]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from autopilot.config import load_mission, load_vessel  # noqa: E402
from drivers.thrust_map import make_thrust_maps  # noqa: E402
from estimation.hull_identification import (NAMES, IdentificationError, RunData, fit_hull,  # noqa: E402
                                            fit_quality, free_run, smoothed, zeta_of_hull)
from hil.environment import EnvironmentConfig  # noqa: E402
from hil.excitation import excitation  # noqa: E402
from hil.sim_runner import SimOptions, run_sim  # noqa: E402

MISSION = os.path.join(os.path.dirname(__file__), "..", "config", "missions", "demo.yaml")


def fly(preset: str, seed: int):
    vessel = load_vessel(preset)
    t_in, x_in, n_in = excitation(vessel, seed=seed)
    t0 = 5.0                                      # let the run arm and settle first

    def operator(t, ap, truth):
        k = int((t - t0) / (t_in[1] - t_in[0]))
        if 0 <= k < len(t_in):
            ap.operator_command(t, x_in[k] / ap.manual.max_surge_n, n_in[k] / ap.manual.max_yaw_nm)
        else:
            ap.operator_command(t, 0.0, 0.0)

    opts = SimOptions(seed=seed, env=EnvironmentConfig(), duration_s=t0 + t_in[-1], initial_mode="MANUAL",
                      on_cycle=operator)
    res = run_sim(vessel, load_mission(MISSION), opts)
    tr = res.trace
    maps = make_thrust_maps(vessel)
    thrust = np.array([[m.pulse_to_thrust(p) for m, p in zip(maps, row)] for row in res.pulses_us])
    # the thrusters answer a pulse with the first-order lag the vessel file gives (time_constant_s)
    dt = float(tr["t"][1] - tr["t"][0])
    for i, th in enumerate(vessel.thrusters):
        a = dt / (th.time_constant_s + dt) if th.time_constant_s > 0 else 1.0
        for k in range(1, len(thrust)):
            thrust[k, i] = thrust[k - 1, i] + a * (thrust[k, i] - thrust[k - 1, i])
    x = thrust.sum(axis=1)
    n = -(thrust * np.array([t.y_m for t in vessel.thrusters])).sum(axis=1)
    keep = tr["t"] >= t0
    return vessel, {k: np.asarray(v)[keep] for k, v in tr.items()}, x[keep], n[keep]


def run_data(tr, x, n, source: str) -> RunData:
    u, v, r = (tr[f"{source}_{k}"] for k in ("u", "v", "r"))
    return RunData(tr["t"], u, v, r, x, np.zeros_like(x), n)


def one(preset: str, window_s: float):
    vessel, tr, x, n = fly(preset, 1)
    _, vtr, vx, vn = fly(preset, 2)
    truth = zeta_of_hull(vessel.hull)
    out = {"preset": preset, "zeta_true": truth}
    for source in ("est", "truth"):
        try:
            fit = fit_hull(smoothed(run_data(tr, x, n, source), window_s), require=())
        except IdentificationError as e:
            out[source] = str(e)
            continue
        val = run_data(vtr, vx, vn, source)              # validated against the same kind of signal
        model = free_run(fit.zeta, val, psi0_rad=float(vtr[f"{source}_psi"][0]))
        meas = {"u": val.u, "v": val.v, "r": val.r, "x": vtr[f"{source}_n"] - vtr[f"{source}_n"][0],
                "y": vtr[f"{source}_e"] - vtr[f"{source}_e"][0], "psi": np.unwrap(vtr[f"{source}_psi"])}
        model["psi"] = np.unwrap(model["psi"])
        out[source] = (fit, {k: fit_quality(meas[k], model[k]) for k in meas})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="foka,iacquabot,wamv")
    ap.add_argument("--window", type=float, default=1.0, help="smoothing window [s]")
    a = ap.parse_args()
    presets = a.presets.split(",")
    with ProcessPoolExecutor(min(len(presets), os.cpu_count() or 1)) as pool:
        results = list(pool.map(one, presets, [a.window] * len(presets)))
    for res in results:
        print(f"\n{res['preset']}: identification run seed 1, validation run seed 2 (matched plant, real drivers)")
        for source in ("est", "truth"):
            r = res[source]
            label = "EKF estimate" if source == "est" else "true velocities"
            if isinstance(r, str):
                print(f"  from the {label}: refused: {r}")
                continue
            fit, val = r
            print(f"  from the {label} (condition {fit.condition:.0f}):")
            for i, name in enumerate(NAMES):
                z, (lo, hi), tv = fit.zeta[i], fit.ci95[i], res["zeta_true"][i]
                print(f"    {name}  true {tv:9.3f}  fit {z:9.3f}  [{lo:9.3f}, {hi:9.3f}]  "
                      f"err {100 * (z - tv) / tv:+6.1f} %  {'in CI' if lo <= tv <= hi else 'OUT'}")
            print("    validation R^2: " + ", ".join(f"{k} {q['r2']:.4f}" for k, q in val.items())
                  + "   RMSE: " + ", ".join(f"{k} {q['rmse']:.3g}" for k, q in val.items()))


if __name__ == "__main__":
    main()
