"""Hull identification on the simulator, through the same path as a boat (issue 12).

Every run is the identification mission (config/missions/identify.yaml: AUTO, two sets of open-loop segments in
a 60 m box) through the real drivers, 1 Hz GNSS with realistic noise, logged at 50 Hz; `identify` fits the first
set and validates on the second, segment by segment.

Part 1, each preset on its own plant, with each velocity source (`truth`: the simulator's; `smoother`: GNSS +
accelerometer, what a boat has; `estimate`: the EKF's, which leans on the vessel file). Prints every parameter's
error and whether its 95 % interval holds the truth, and the validation R^2 of u, v, r, x, y, psi (000 Table 4's
measures); for the IAcquaBot also paper 000's comparison (Table 3's intervals, Table 4's R^2). For the smoother
it first prints its u, v error against the simulator's truth (bias, RMS, turns to starboard vs port, heading).

Part 2, a file off by x/÷2: the autopilot flies with a vessel file whose added masses, yaw inertia and sway
damping are x2 and surge and yaw damping ÷2 of the true boat's; it flies the identification mission, identifies
(smoother velocities; parameters the run does not excite are kept from the file, as the refusal suggests), and
the demo survey is flown on the true boat with three files: the true one (matched), the wrong one (before) and
the identified one (after). Prints xte_rms, the position estimate error and failsafes per seed.

Part gamepad, identification from MANUAL with a gamepad, end to end as a user runs it: `autopilot sim
--transport ros --gamepad SEQUENCE` (the autopilot in its own process over real DDS, a joy_node stand-in process
publishing sensor_msgs/Joy with the enable button held; hil/ros/joy_standin.py) drives each preset in MANUAL on a
plant that differs from its vessel file (GAMEPAD_MISMATCH), twice: tests/data/gamepad/ident_gamepad_fit.csv
(seed 1) and ident_gamepad_validate.csv (seed 2), logged at 50 Hz by the autopilot process; `autopilot identify
hull FIT VALIDATE` (smoother velocities: a ROS log has no truth) fits and validates. Prints each parameter's error
against the plant's and the file's, whether the plant's value is inside the 95 % CI, the validation R^2 (flown
free over the whole run as identify prints it, and restarted from the measured state every 10 s), and the
checks of GAMEPAD_TOLERANCE_PCT / GAMEPAD_R2_FLOOR (--gnss-velocity: the simulated GNSS gives speed and course).
A refusal is printed and, as it suggests, the named parameters are kept from the file and the fit is run again.
ROS_DOMAIN_ID from the environment (default 40 + pid % 50).

Part 1 fits with each method (--methods ls,oe: equation-error least squares, and that refined by output error)
and prints the validation three ways: each open-loop segment flown whole from its first state (paper 000's measure),
and flown in 10 s pieces (a directionally unstable hull diverges over a whole segment), and whole from first
states fitted to each segment (autopilot.identification.hull.validate's initial="estimated"). For the smoother and the
estimate it then scores the plant's own parameters the same way: what the measured track lets any model reach.

    python benchmarks/bench_identification.py [--presets foka,iacquabot,wamv] [--part 1|2|both|gamepad]
        [--seeds 1,2] [--ident-seeds 1] [--methods ls,oe] [--sources truth,smoother] [--runs-dir DIR] [--keep DIR]
        [--pooled] [--sets N]

--pooled (part 1, with --runs-dir and two or more --ident-seeds) then fits the first sets of all the flights
together and prints the errors and interval widths: what flying the mission n times buys. --sets N (part 1)
flies each flight with N sets instead, fits the first N - 1 together and validates on the last: the same, in one
longer run, as `autopilot identify` does with a mission of `sets: N`.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import List

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from autopilot.identification.hull import identified_vessel, identify, validate  # noqa: E402
from autopilot.identification.runs import load_ident_run, split_last_set  # noqa: E402
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel  # noqa: E402
from estimation.identification.hull_least_squares import NAMES, IdentificationError, zeta_of_hull  # noqa: E402
from hil.sim.environment import EnvironmentConfig  # noqa: E402
from hil.sim.identification_flight import fly_identification_mission  # noqa: E402
from hil.sim.plant_spec import PlantSpec, apply_mismatch  # noqa: E402
from hil.sim.runner import SimOptions, run_sim  # noqa: E402

WRONG_BY_2 = {"x_udot": 2.0, "y_vdot": 2.0, "n_rdot": 2.0, "iz": 2.0, "y_v": 2.0, "y_vv": 2.0,
              "x_u": 0.5, "x_uu": 0.5, "n_r": 0.5, "n_rr": 0.5}
DEMO_WEATHER = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                                 wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)


TABLE_3 = {"z1": (124.5923, 123.9456, 125.2389), "z2": (120.0275, 118.7015, 121.3535),
           "z3": (141.5164, 140.9026, 142.1302), "z4": (25.9335, 25.0368, 26.8303), "z5": (35.9833, 35.2669, 36.6996),
           "z6": (37.0247, 34.1923, 39.8570), "z7": (25.7968, 21.0590, 30.5346), "z8": (200.2944, 198.1114, 202.4775),
           "z9": (18.5319, 15.3741, 21.6898)}
TABLE_4_R2 = {"u": 0.99548, "v": 0.99541, "r": 0.99887, "x": 0.99847, "y": 0.99774, "psi": 0.99976}
MISSION = CONFIG_DIR / "missions" / "identify.yaml"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
GAMEPAD = [os.path.join(REPO, "tests", "data", "gamepad", n) for n in ("ident_gamepad_fit.csv",
                                                                         "ident_gamepad_validate.csv")]
# the true boat of the gamepad part: a geometric estimate's typical errors (surge damping, yaw inertia and
# damping, sway damping off by 30-40 %)
GAMEPAD_MISMATCH = {"x_u": 0.6, "x_uu": 1.4, "iz": 1.3, "n_r": 0.7, "y_v": 1.3}
# |error| against the plant's value: the issue's own-plant limits, 5 % (10 % for the sway terms z6, z7). With the
# smoother of estimation/identification/track_smoother.py and output error, five runs of this part on FOKA measured z6
# -5.1 to
# -5.4 %, every other term within 3.1 % (before that smoother: z7 refused or -47 %, z4 +72 %)
GAMEPAD_TOLERANCE_PCT = {"z1": 5, "z2": 5, "z3": 5, "z4": 5, "z5": 5, "z6": 10, "z7": 10, "z8": 5, "z9": 5}
# validation flown from the measured state every WINDOW_S (the 0.99 on u, r, x, y, psi; measured 0.9927 or
# more on all six; flown free over the whole drive y reached 0.970-0.989: the hull is directionally unstable)
GAMEPAD_R2_FLOOR = {"u": 0.99, "r": 0.99, "x": 0.99, "y": 0.99, "psi": 0.99}


def _fly(vessel, tmp, plant_spec=None, seed: int = 1, sets: int = 2) -> str:
    """The identification mission flown with `sets` sets of segments; returns the run directory."""
    mission = load_mission(MISSION)
    mission = dataclasses.replace(mission, identification=dataclasses.replace(mission.identification, sets=sets))
    run_dir, _ = fly_identification_mission(vessel, mission, tmp, seed=seed, plant_spec=plant_spec)
    return run_dir


def _identify_keeping(fit_runs, val_runs, vessel, window_s, require=NAMES, method="ls"):
    """identify(); a refusal naming unexcited parameters is retried with them kept from the file (what the
    refusal tells a user to do). Returns (report, fixed names); IdentificationError when still refused."""
    fix = []
    for _ in range(3):
        try:
            return identify(fit_runs, val_runs, vessel, window_s=window_s, require=require, fix=fix,
                            method=method), fix
        except IdentificationError as e:
            weak = [n for n in NAMES if f"{n} (" in str(e).split(" (--fix")[0] and n not in fix]
            if not weak:
                raise
            fix += weak
    raise IdentificationError("still refused after keeping " + ", ".join(fix))


def _error_lines(z, ci, truth, fixed, label: str, note: str = "") -> List[str]:
    """Each parameter's error against the truth [%] (! when its 95 % interval misses it) after `label`, and
    each interval's half-width [% of the value] below it."""
    err = 100 * (z - truth) / truth
    inside = [lo <= t <= hi for (lo, hi), t in zip(ci, truth)]
    half = 100 * (ci[:, 1] - ci[:, 0]) / 2 / np.abs(z)
    pad = " " * len(label)
    return [f"{label}err %: " + " ".join(f"{n} {'fixed' if n in fixed else f'{e:+6.1f}'}"
                                         f"{'' if i or n in fixed else '!'}" for n, e, i in zip(NAMES, err, inside))
            + f"   (! = truth outside the 95 % CI; {sum(inside) - len(fixed)}/{9 - len(fixed)} inside{note})",
            f"{pad} CI %: " + " ".join(f"{n} {'fixed' if n in fixed else f'{h:6.1f}'}"
                                       for n, h in zip(NAMES, half))
            + "   (half-width of each 95 % interval, % of the value)"]


def _floor_lines(truth_zeta, val_run) -> List[str]:
    """The validation R^2 of the plant's own parameters on the validation run: the most any fit can reach with
    these measured signals (1 Hz GNSS makes the measured track, not the model, the limit)."""
    pad = " " * 14
    return [f"{pad}true parameters' R^2, segments open loop: "
            + ", ".join(f"{k} {v['r2']:.4f}" for k, v in validate(truth_zeta, val_run).items()),
            f"{pad}true parameters' R^2, first states fitted: "
            + ", ".join(f"{k} {v['r2']:.4f}" for k, v in validate(truth_zeta, val_run, initial="estimated").items())]


def part1(preset: str, window_s: float, methods=("ls", "oe"), sources=("truth", "smoother", "estimate"),
          runs_dir=None, seed: int = 1, sets: int = 2) -> str:
    vessel = load_vessel(preset)
    truth = zeta_of_hull(vessel.hull)
    fitted = "set 1" if sets == 2 else f"sets 1-{sets - 1}"
    out = [f"\n{preset}: own plant, identification mission (seed {seed}), fit on {fitted}, validate on set {sets} "
           f"(real drivers, realistic 1 Hz GNSS)"]
    stored = (preset if seed == 1 else f"{preset}-seed{seed}") + ("" if sets == 2 else f"-sets{sets}")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _stored_run(runs_dir, stored) if runs_dir else None
        if run_dir is None:
            base = os.path.join(runs_dir, stored) if runs_dir else tmp
            os.makedirs(base, exist_ok=True)
            run_dir = _fly(vessel, base, seed=seed, sets=sets)
        for source in sources:
            if source == "smoother":
                out.append(_smoother_error(run_dir, vessel))
            try:                                      # read once per source, fitted by each method
                fit_run, val_run = split_last_set(load_ident_run(run_dir, vessel, source))
            except IdentificationError as e:
                out.append(f"  {source:12s} refused: {e}")
                continue
            val_name = val_run.name
            for method in methods:
                label = f"{source}/{method}"
                t0 = time.monotonic()
                try:
                    rep, fixed = _identify_keeping([fit_run], [val_run], vessel, window_s, method=method)
                except IdentificationError as e:
                    out.append(f"  {label:12s} refused: {e}")
                    continue
                wall = time.monotonic() - t0
                z, ci = rep.fit.zeta, rep.fit.ci95
                out += _error_lines(z, ci, truth, fixed, f"  {label:12s} ", f"; {wall:.0f} s")
                q = rep.validation[val_name]
                out.append(f"  {'':12s} validation R^2, segments open loop: "
                           + ", ".join(f"{k} {v['r2']:.4f}" for k, v in q.items()))
                qs = rep.validation_short[val_name]
                out.append(f"  {'':12s} validation R^2, 10 s pieces:        "
                           + ", ".join(f"{k} {v['r2']:.4f}" for k, v in qs.items()))
                qx = rep.validation_x0[val_name]
                out.append(f"  {'':12s} validation R^2, first states fitted: "
                           + ", ".join(f"{k} {v['r2']:.4f}" for k, v in qx.items()))
                if source != "truth" and method == methods[-1]:
                    out += _floor_lines(truth, val_run)
                if preset == "iacquabot" and source == "truth":
                    within = [n for i, n in enumerate(NAMES)
                              if n not in fixed and TABLE_3[n][1] <= z[i] <= TABLE_3[n][2]]
                    out.append(f"  {'':12s} paper 000: {len(within)}/{9 - len(fixed)} within Table 3's 95 % CIs ("
                               + ", ".join(f"{n} {z[i]:.4g} vs [{TABLE_3[n][1]:g}, {TABLE_3[n][2]:g}]"
                                           for i, n in enumerate(NAMES) if n not in within and n not in fixed)
                               + " outside); R^2 at least Table 4's: "
                               + ", ".join(f"{k} {'yes' if q[k]['r2'] >= TABLE_4_R2[k] else 'NO'}"
                                           for k in TABLE_4_R2))
    return "\n".join(out)


def pooled(preset: str, window_s: float, runs_dir: str, seeds) -> str:
    """The first sets of the flights stored in runs_dir for `seeds` fitted together (smoother, output error),
    validated on the first flight's second set: what flying the mission n times buys. Parameters a refusal
    names are kept from the file, as for one flight."""
    vessel = load_vessel(preset)
    truth = zeta_of_hull(vessel.hull)
    fits, vals = [], []
    for s in seeds:
        run_dir = _stored_run(runs_dir, preset if s == 1 else f"{preset}-seed{s}")
        if run_dir is None:
            return f"\n{preset}: pooled: no stored flight for seed {s} in {runs_dir} (run part 1 first)"
        f, v = split_last_set(load_ident_run(run_dir, vessel, "smoother"))
        fits.append(f)
        vals.append(v)
    t0 = time.monotonic()
    try:
        rep, fix = _identify_keeping(fits, vals[:1], vessel, window_s, method="oe")
    except IdentificationError as e:
        return f"\n{preset}: pooled: refused: {e}"
    q = rep.validation_x0[vals[0].name]
    return "\n".join([
        f"\n{preset}: the first sets of {len(seeds)} flights (seeds {','.join(map(str, seeds))}) fitted together "
        f"(smoother, output error; {time.monotonic() - t0:.0f} s)",
        *_error_lines(rep.fit.zeta, rep.fit.ci95, truth, fix, "  "),
        "  validation R^2 on seed 1's second set, first states fitted: "
        + ", ".join(f"{k} {v['r2']:.4f}" for k, v in q.items())])


def _smoother_error(run_dir, vessel) -> str:
    """The smoother's u, v against the simulator's truth over the open-loop segments: bias and RMS, and the
    mean in turns to starboard and to port (|r| > 5 deg/s; a heading or timing error shows as a difference)."""
    from autopilot.identification.hull import segment_spans
    sm, tr = load_ident_run(run_dir, vessel, "smoother"), load_ident_run(run_dir, vessel, "truth")
    seg = np.zeros(len(tr.data.t_s), bool)
    for a, b in segment_spans(tr):
        seg[a:b] = True
    r = tr.data.r
    parts = []
    for k in ("u", "v"):
        e = getattr(sm.data, k) - getattr(tr.data, k)
        parts.append(f"{k} bias {e[seg].mean():+.4f} RMS {np.sqrt(np.mean(e[seg] ** 2)):.4f}, in turns to starboard "
                     f"{e[seg & (r > 0.087)].mean():+.4f} / port {e[seg & (r < -0.087)].mean():+.4f}")
    psi = np.degrees(np.angle(np.exp(1j * (sm.psi_rad - tr.psi_rad))))
    return (f"  {'smoother':12s} u, v - truth [m/s] over the segments: " + "; ".join(parts)
            + f"; heading RMS {np.sqrt(np.mean(psi[seg] ** 2)):.2f} deg")


def _stored_run(runs_dir, preset):
    """A run flown earlier into runs_dir/preset (--runs-dir), or None."""
    base = os.path.join(runs_dir, preset)
    found = sorted(d for d in (os.listdir(base) if os.path.isdir(base) else [])
                   if os.path.isfile(os.path.join(base, d, "state.csv")))
    return os.path.join(base, found[-1]) if found else None


def _demo(vessel, plant_vessel, seed: int) -> dict:
    spec = PlantSpec.resolve(vessel, seed, plant_vessel=plant_vessel)
    r = run_sim(vessel, load_mission(CONFIG_DIR / "missions" / "demo.yaml"),
                SimOptions(seed=seed, env=DEMO_WEATHER, plant_spec=spec)).report
    return {"xte": r["xte_rms_m"], "pos": r["pos_err_rms_m"], "done": r["mission_complete"],
            "fs": len(r["failsafe_events"])}


def part2(preset: str, window_s: float, seeds, methods=("ls", "oe")) -> str:
    true = load_vessel(preset)
    wrong = apply_mismatch(true, WRONG_BY_2)
    out = [f"\n{preset}: file off by x/÷2 ({', '.join(f'{k} x{v:g}' for k, v in WRONG_BY_2.items())})"]
    tz, wz = zeta_of_hull(true.hull), zeta_of_hull(wrong.hull)
    out.append("  z error vs the true boat, file: " + " ".join(f"{n} {100 * (w - t) / t:+.0f}%"
                                                            for n, w, t in zip(NAMES, wz, tz)))
    files = [("matched", true), ("before", wrong)]
    with tempfile.TemporaryDirectory() as tmp:
        spec = PlantSpec.resolve(wrong, 1, plant_vessel=true)
        run_dir = _fly(wrong, tmp, plant_spec=spec)
        try:                                          # read once, fitted by each method
            runs = split_last_set(load_ident_run(run_dir, wrong, "smoother"))
        except IdentificationError as e:
            out.append(f"  identification refused: {e}")
            methods = ()
        else:
            val_name = runs[1].name
        for method in methods:
            try:
                rep, fixed = _identify_keeping([runs[0]], [runs[1]], wrong, window_s, method=method)
            except IdentificationError as e:
                out.append(f"  {method}: identification refused: {e}")
                continue
            if fixed:
                out.append(f"  {method}: kept from the (wrong) file, not excited: {', '.join(fixed)}")
            found = identified_vessel(wrong, rep)
            fz = zeta_of_hull(found.hull)
            out.append(f"  z error vs the true boat, identified ({method}): "
                       + " ".join(f"{n} {100 * (f - t) / t:+.0f}%" for n, f, t in zip(NAMES, fz, tz)))
            out.append(f"  validation R^2 ({method}): "
                       + ", ".join(f"{k} {v['r2']:.3f}" for k, v in rep.validation[val_name].items()))
            files.append((f"after {method}", found))
    out.append(f"  demo survey in the demo weather on the true boat ({len(seeds)} seeds):")
    out.append(f"    {'file':10s} {'xte_rms m':>10s} {'pos_err m':>10s} {'complete':>9s} {'failsafes':>9s}")
    rows = {}
    for label, v in files:
        res = [_demo(v, true, s) for s in seeds]
        rows[label] = res
        out.append(f"    {label:10s} {np.mean([r['xte'] for r in res]):10.2f} {np.mean([r['pos'] for r in res]):10.2f} "
                   f"{sum(r['done'] for r in res):>5d}/{len(res)} {sum(r['fs'] for r in res):9d}")
    m = rows["matched"]
    for label in rows:
        if label.startswith("after"):
            a = rows[label]
            out.append(f"    {label} vs matched: xte "
                       f"{100 * (np.mean([r['xte'] for r in a]) / np.mean([r['xte'] for r in m]) - 1):+.0f} %, "
                       f"position error "
                       f"{100 * (np.mean([r['pos'] for r in a]) / np.mean([r['pos'] for r in m]) - 1):+.0f} %")
    return "\n".join(out)


def _cli(*argv, timeout=900):
    return subprocess.run([sys.executable, "-m", "autopilot.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


WINDOW_S = 10.0


def _windowed_validation(zeta, run_dir, vessel) -> dict:
    """identify's validation with the model restarted from the measured state every WINDOW_S (as it does per
    segment of an identification mission): a MANUAL run has no segments, and flown free for two minutes a hull
    that is directionally unstable at speed (the Munk moment) drifts off on any small error."""
    import dataclasses

    from autopilot.identification.hull import validate
    run = load_ident_run(run_dir, vessel, "smoother")
    t = run.data.t_s
    starts = tuple((float(a), 1) for a in np.arange(t[0], t[-1] - 1.0, WINDOW_S))
    ends = tuple(float(a) + WINDOW_S for a, _ in starts)
    return validate(zeta, dataclasses.replace(run, segment_starts_s=starts, segment_ends_s=ends))


def part_gamepad(preset: str, keep: str = "") -> str:
    vessel = load_vessel(preset)
    spec = PlantSpec.resolve(vessel, 1, mismatch=GAMEPAD_MISMATCH)
    plant, filed = zeta_of_hull(spec.vessel.hull), zeta_of_hull(vessel.hull)
    mismatch = ",".join(f"{k}={v:g}" for k, v in GAMEPAD_MISMATCH.items())
    out = [f"\n{preset}: MANUAL from a joy_node stand-in over DDS (autopilot sim --transport ros --gamepad), plant "
           f"--mismatch {mismatch}"]
    with tempfile.TemporaryDirectory() as tmp:
        if keep:
            os.makedirs(keep, exist_ok=True)
            tmp = keep
        runs = []
        for seed, seq in enumerate(GAMEPAD, start=1):
            report = os.path.join(tmp, f"r{seed}.json")
            t0 = time.perf_counter()
            done = _cli("sim", str(CONFIG_DIR / "missions" / "demo.yaml"), "--vessel", preset, "--transport", "ros",
                        "--gamepad", seq, "--gnss-velocity", "--mismatch", mismatch, "--seed", str(seed),
                        "--log", tmp, "--log-rate-hz", "50", "--report", report)
            if done.returncode != 0:
                return "\n".join(out + [f"  sim failed (exit {done.returncode}): {done.stderr[-1500:]}"])
            r = json.load(open(report))
            runs.append(r["log_dir"])
            out.append(f"  run {seed} ({os.path.basename(seq)}): {r['sim_time_s']:.0f} s simulated in "
                       f"{time.perf_counter() - t0:.0f} s wall; {r['gamepad']['said']}; failsafes "
                       f"{len(r['failsafes'])}; latency p99 {r.get('latency_p99_ms', float('nan')):.1f} ms")
        ident = os.path.join(tmp, "ident.json")
        fixed: list = []
        for _ in range(3):          # a refusal names parameters to keep from the file: do what it says, once more
            done = _cli("identify", "hull", runs[0], runs[1], "--vessel", vessel.source_file, "--report", ident,
                        *(["--fix", ",".join(fixed)] if fixed else []))
            if done.returncode == 0:
                break
            out.append(f"  identify (exit {done.returncode}): {done.stderr.strip()[-1500:]}")
            weak = [n for n in NAMES if f"{n} (" in done.stderr.split(" (--fix")[0] and n not in fixed]
            if done.returncode != 1 or not weak:
                return "\n".join(out)
            fixed += weak
        else:
            return "\n".join(out)
        if fixed:
            out.append(f"  identify --fix {','.join(fixed)}: accepted")
        rep = json.load(open(ident))
        windowed = _windowed_validation(np.array([rep["parameters"][n]["value"] for n in NAMES]), runs[1],
                                        vessel)
    z = np.array([rep["parameters"][n]["value"] for n in NAMES])
    ci = [rep["parameters"][n]["ci95"] for n in NAMES]
    err = 100 * (z - plant) / plant
    inside = [lo <= t <= hi for (lo, hi), t in zip(ci, plant)]
    out.append("  plant:       " + " ".join(f"{n} {v:.4g}" for n, v in zip(NAMES, plant)))
    out.append("  file err %:  " + " ".join(f"{n} {100 * (f - t) / t:+6.1f}" for n, f, t in zip(NAMES, filed, plant)))
    shown = [f"{n} fixed" if n in fixed else f"{n} {e:+6.1f}{'' if i else '!'}" for n, e, i in zip(NAMES, err, inside)]
    out.append("  fit err %:   " + " ".join(shown)
               + f"   (! = plant outside the 95 % CI; {sum(i for n, i in zip(NAMES, inside) if n not in fixed)}/"
                 f"{9 - len(fixed)} inside)")
    val = next(iter(rep["validation"].values()))
    out.append("  validation R^2 (run 2, flown free from its start, as identify prints it): "
               + ", ".join(f"{k} {v['r2']:.4f}" for k, v in val.items()))
    out.append(f"  validation R^2 (run 2 flown from its measured state every {WINDOW_S:g} s): "
               + ", ".join(f"{k} {v['r2']:.4f}" for k, v in windowed.items()))
    bad = [f"{n} {e:+.1f} % (> {GAMEPAD_TOLERANCE_PCT[n]} %)" for n, e in zip(NAMES, err)
           if abs(e) > GAMEPAD_TOLERANCE_PCT[n] and n not in fixed]
    bad += [f"R^2 {k} ({WINDOW_S:g} s windows) {windowed[k]['r2']:.4f} < {f}" for k, f in GAMEPAD_R2_FLOOR.items()
            if windowed[k]["r2"] < f]
    out.append("  checks: " + ("all within tolerance" if not bad else "FAILED: " + "; ".join(bad)))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="foka,iacquabot,wamv")
    ap.add_argument("--part", choices=("1", "2", "both", "gamepad"), default="both")
    ap.add_argument("--seeds", default="1,2", help="demo seeds of part 2")
    ap.add_argument("--ident-seeds", default="1", help="part 1: seeds of the identification flights (each its own "
                                                       "run: its noise, its own fit)")
    ap.add_argument("--window", type=float, default=1.0, help="smoothing window [s]")
    ap.add_argument("--keep", default="", metavar="DIR", help="part gamepad: keep the run logs and reports in DIR")
    ap.add_argument("--methods", default="ls,oe", help="fitting methods side by side (ls, oe)")
    ap.add_argument("--sources", default="truth,smoother,estimate", help="part 1: velocity sources")
    ap.add_argument("--runs-dir", default=None, help="part 1: keep the flown runs here (DIR/<preset>/...) and "
                                                      "reuse them when present")
    ap.add_argument("--pooled", action="store_true", help="part 1: also fit the flights of all --ident-seeds "
                                                           "together (needs --runs-dir)")
    ap.add_argument("--sets", type=int, default=2, help="part 1: sets of segments each flight flies (the last "
                    "validates, the others are fitted together)")
    ap.add_argument("--workers", type=int, default=0, help="processes (default: one per preset, at most the cores)")
    a = ap.parse_args()
    presets = a.presets.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    ident_seeds = [int(s) for s in a.ident_seeds.split(",")]
    if a.part == "gamepad":              # ROS runs, one at a time (each is three processes)
        os.environ.setdefault("ROS_DOMAIN_ID", str(40 + os.getpid() % 50))
        for p in presets:
            print(part_gamepad(p, a.keep), flush=True)
        return
    if a.pooled and (a.part not in ("1", "both") or not a.runs_dir or len(ident_seeds) < 2 or a.sets != 2):
        sys.exit("--pooled needs part 1, --runs-dir, two or more --ident-seeds and two sets")
    if not 2 <= a.sets <= 10:
        sys.exit("--sets: 2 to 10 (one set or more to fit, the last to validate)")
    jobs = []
    with ProcessPoolExecutor(a.workers or min(len(presets), os.cpu_count() or 1)) as pool:
        if a.part in ("1", "both"):
            jobs += [pool.submit(part1, p, a.window, tuple(a.methods.split(",")), tuple(a.sources.split(",")),
                                 a.runs_dir, s, a.sets) for p in presets for s in ident_seeds]
        if a.part in ("2", "both"):
            jobs += [pool.submit(part2, p, a.window, seeds, tuple(a.methods.split(","))) for p in presets]
        for j in jobs:
            print(j.result(), flush=True)
        if a.pooled:
            for j in [pool.submit(pooled, p, a.window, a.runs_dir, ident_seeds) for p in presets]:
                print(j.result(), flush=True)


if __name__ == "__main__":
    main()
