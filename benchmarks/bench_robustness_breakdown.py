"""Where a mismatched boat's cross-track error comes from: estimation or control, straight legs or turns.

    python benchmarks/bench_robustness_breakdown.py [--preset foka] [--mission demo] [--seeds 1,3]
        [--keys thrust,x_u,x_uu,n_r] [--factors 0.4,2.5] [--workers N] [--devices bytes|typed] [--per-leg]
        [--ekf KEY=VALUE,...]

Each run is flown as `bench_robustness.py` flies it (the demo's weather, 1 Hz GNSS 2.0 m CEP white noise, the
plant scaled by one mismatch), beside the matched run of the same seed. On the samples that `xte_rms_m` counts
(hil/sim/metrics.py: AUTO, not the approach leg, each leg after it has converged), the true position's
cross-track y_true [m] against the leg being flown splits exactly into

    y_true = y_est + e_lat

with y_est the ESTIMATED position's cross-track (what guidance sees and steers to zero: the control part) and
e_lat = y_true - y_est the estimate's error projected across the leg (the estimation part). Printed per run:
the RMS of y_true (= xte_rms_m), of y_est and of e_lat [m], their correlation, and the mean of y_true [m]
(a standing offset). Then where along the mission the squared true cross-track lies: `entry` (the first
ENTRY_LOOKAHEADS lookahead distances along a leg after a turn: overshoot after the turn), `exit` (the last
EXIT_LOOKAHEADS lookaheads before the waypoint: the turn-in, where guidance slows down) and `straight`
(the rest), as the RMS within each part and each part's share of the sum of squares. `--per-leg` adds the
RMS per leg. `--velocity-split` adds, per phase, where the estimate's error across the leg comes from (velocity_split:
the filter state against its smoothed output, and the cross-leg velocity error split into surge, sway,
heading and current). Nothing is asserted here.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ENTRY_LOOKAHEADS = 5.0     # "entry": this many lookahead distances after a leg begins
EXIT_LOOKAHEADS = 2.0      # "exit": this many before its waypoint (guidance's turn slow-down zone)
PHASES = ("entry", "straight", "exit")


def fly(task: dict) -> dict:
    """One run; the per-sample arrays of the counted cross-track samples (never raises)."""
    import functools

    from bench_robustness import DEMO_ENV, _mission

    from autopilot.vocab.config import load_vessel
    from hil.sim.environment import EnvironmentConfig
    from hil.sim.plant_spec import PlantSpec
    from hil.sim.runner import SimOptions, run_sim
    if task.get("ekf"):
        import estimation.navekf.ekf as ekf
        if not hasattr(ekf, "_BenchDefaultTuning"):
            ekf._BenchDefaultTuning = ekf.EkfTuning
        ekf.EkfTuning = functools.partial(ekf._BenchDefaultTuning, **task["ekf"])
    row = dict(task)
    try:
        vessel = load_vessel(task["preset"])
        mission = _mission(task["mission"])
        spec = PlantSpec.resolve(vessel, task["seed"], mismatch=task["mismatch"])
        samples = []          # (t, leg index, along, leg length, y_true, y_est, counted, *VELOCITY_SPLIT columns)
        state = {"leg": None, "converged": False, "last": None}
        toward = math.radians(DEMO_ENV["current_toward_deg"])
        current_ned = (
            DEMO_ENV["current_speed_mps"] * math.cos(toward),
            DEMO_ENV["current_speed_mps"] * math.sin(toward),
        )

        def on_result(t, autopilot, batch, res, truth):
            if res.mode != "AUTO" or autopilot.guidance.leg is None or not res.nav.valid:
                return
            leg, index = autopilot.guidance.leg, autopilot.guidance.index
            along, y_true = leg.along_cross_m(truth.north_m, truth.east_m)
            _, y_est = leg.along_cross_m(res.nav.north_m, res.nav.east_m)
            if state["leg"] != index:       # hil/sim/metrics.py's convergence rule, repeated
                state.update(leg=index, converged=False, last=None)
            if index > 0 and not state["converged"]:
                crossed = state["last"] is not None and (state["last"] > 0) != (y_true > 0)
                if crossed or abs(y_true) < 0.1 or along >= 2.0 * autopilot.guidance.lookahead_m:
                    state["converged"] = True
            state["last"] = y_true
            samples.append((t, index, along, leg.length_m, y_true, y_est,
                            float(index > 0 and state["converged"]))
                           + velocity_split(autopilot.estimator, truth, leg.path_angle_rad, current_ned))
            state["lookahead"] = autopilot.guidance.lookahead_m

        opts = SimOptions(seed=task["seed"], env=EnvironmentConfig(**DEMO_ENV), gps_noise="white",
                          devices=task["devices"], plant_spec=spec, on_result=on_result)
        res = run_sim(vessel, mission, opts)
        r = res.report
        row.update(complete=bool(r["mission_complete"]), xte_rms_m=r["xte_rms_m"], pos_err_rms_m=r["pos_err_rms_m"],
                   failsafes=[f"{e['kind']}->{e['action']}" for e in r["failsafe_events"]],
                   lookahead_m=state.get("lookahead", float("nan")), samples=samples)
    except Exception as e:      # a crash is a finding, reported as a row
        row["error"] = f"{type(e).__name__}: {e}"
    return row


VELOCITY_SPLIT = ("filt", "offset", "v_surge", "v_sway", "v_head", "v_curr", "psi_err", "r_err", "along", "u_err")


def velocity_split(ekf, truth, leg_angle_rad: float, current_ned: tuple) -> tuple:
    """Where the estimate's cross-leg error comes from at one sample (+ = to starboard of the leg).

    Position [m]: `filt` the filter state's cross-leg error, `offset` the published output's smoothing offset
    (y_est - y_true = filt + offset). Velocity over ground across the leg [m/s], estimate minus truth, split
    exactly into `v_surge` (surge speed through the water wrong), `v_sway` (sway wrong), `v_head` (the true
    water-relative velocity turned by the heading error) and `v_curr` (water current wrong). `psi_err` the
    heading error [deg], `r_err` the yaw-rate error [deg/s]; `along` the filter state's error ALONG the leg [m]
    (+ = ahead) and `u_err` its surge speed through the water minus the truth's [m/s]. Empty unless the estimator is
    the NavigationEKF.
    """
    from estimation.navekf.model import IX_CE, IX_CN, IX_E, IX_N, IX_PSI, IX_R, IX_U, IX_V
    x = getattr(getattr(ekf, "kf", None), "x", None)
    if x is None:
        return ()
    sn, cn = math.sin(leg_angle_rad), math.cos(leg_angle_rad)

    def cross(dn, de):
        return -dn * sn + de * cn
    pt, pe = truth.heading_rad, float(x[IX_PSI, 0])
    ct, st, ce, se = math.cos(pt), math.sin(pt), math.cos(pe), math.sin(pe)
    vn_t, ve_t = truth.velocity_ned_mps
    wn, we = vn_t - current_ned[0], ve_t - current_ned[1]          # true velocity through the water, NED
    u_t, v_t = ct * wn + st * we, -st * wn + ct * we
    du, dv = float(x[IX_U, 0]) - u_t, float(x[IX_V, 0]) - v_t
    return (cross(float(x[IX_N, 0]) - truth.north_m, float(x[IX_E, 0]) - truth.east_m),
            cross(ekf._off_n, ekf._off_e),
            cross(du * ce, du * se), cross(-dv * se, dv * ce),
            cross((ce - ct) * u_t - (se - st) * v_t, (se - st) * u_t + (ce - ct) * v_t),
            cross(float(x[IX_CN, 0]) - current_ned[0], float(x[IX_CE, 0]) - current_ned[1]),
            math.degrees(math.remainder(pe - pt, math.tau)), math.degrees(float(x[IX_R, 0]) - truth.yaw_rate_rps),
            (float(x[IX_N, 0]) - truth.north_m) * cn + (float(x[IX_E, 0]) - truth.east_m) * sn, du)


def split(row: dict) -> dict:
    """The breakdown figures of one run's samples (see the module docstring)."""
    s = np.array(row["samples"], dtype=float)
    s = s.reshape(-1, s.shape[1] if s.ndim == 2 else 7)
    s = s[s[:, 6] > 0]
    along, length, yt, ye = s[:, 2], s[:, 3], s[:, 4], s[:, 5]
    el = yt - ye
    la = row["lookahead_m"]

    def rms(a):
        return float(np.sqrt(np.mean(a * a))) if len(a) else float("nan")
    phase = np.where(along < ENTRY_LOOKAHEADS * la, 0, np.where(length - along < EXIT_LOOKAHEADS * la, 2, 1))
    total = float(np.sum(yt * yt)) or 1.0
    out = {"true": rms(yt), "est": rms(ye), "lat": rms(el),
           "corr": float(np.corrcoef(ye, el)[0, 1]) if len(ye) > 2 else float("nan"), "mean": float(np.mean(yt))}
    for i, name in enumerate(PHASES):
        m = phase == i
        out[name] = (rms(yt[m]), float(np.sum(yt[m] ** 2)) / total, rms(ye[m]), rms(el[m]))
    out["legs"] = {int(k): rms(yt[s[:, 1] == k]) for k in np.unique(s[:, 1])}
    if s.shape[1] >= 7 + len(VELOCITY_SPLIT):
        out["velocity"] = {name: {p: rms(s[phase == i, 7 + j]) for i, p in enumerate(PHASES)}
                           for j, name in enumerate(VELOCITY_SPLIT)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="foka")
    ap.add_argument("--mission", default="demo")
    ap.add_argument("--seeds", default="1,3", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--keys", default="thrust,x_u,x_uu,n_r", type=lambda s: s.split(","))
    ap.add_argument("--factors", default="0.4,2.5", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--devices", choices=("bytes", "typed"), default="bytes")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--per-leg", action="store_true", help="also print the RMS of each leg")
    ap.add_argument("--velocity-split", action="store_true",
                    help="also print where the estimate's cross-leg error comes from, per phase (velocity_split)")
    ap.add_argument("--ekf", default={}, type=lambda s: {k: json.loads(v) for k, v in
                                                         (p.split("=", 1) for p in s.split(",") if p)},
                    metavar="KEY=VALUE,...", help="EkfTuning fields to try instead of the defaults")
    args = ap.parse_args()
    todo = []
    for seed in args.seeds:
        base = dict(preset=args.preset, mission=args.mission, seed=seed, devices=args.devices, ekf=args.ekf)
        todo.append(dict(base, label="matched", mismatch={}))
        todo += [dict(base, label=f"{k}x{f:g}", mismatch={k: f}) for k in args.keys for f in args.factors]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(fly, todo))
    print(f"cross-track breakdown: {args.preset} {args.mission}, {len(rows)} runs in "
          f"{time.perf_counter() - t0:.0f} s; RMS [m] over the samples xte_rms counts; y_true = y_est + e_lat")
    print(f"{'run':16s} {'seed':>4s} {'ratio':>5s} {'y_true':>6s} {'y_est':>6s} {'e_lat':>6s} {'corr':>5s} "
          f"{'mean':>5s} | " + " | ".join(f"{p:>8s} rms/share est/lat" for p in PHASES))
    matched = {r["seed"]: r for r in rows if r["label"] == "matched" and "error" not in r}
    for r in rows:
        if "error" in r:
            print(f"{r['label']:16s} {r['seed']:4d} error: {r['error']}")
            continue
        b = split(r)
        m = matched.get(r["seed"])
        ratio = r["xte_rms_m"] / m["xte_rms_m"] if m else float("nan")
        flags = "" if r["complete"] and not r["failsafes"] else f"  complete={r['complete']} {r['failsafes']}"
        print(f"{r['label']:16s} {r['seed']:4d} {ratio:5.2f} {b['true']:6.2f} {b['est']:6.2f} {b['lat']:6.2f} "
              f"{b['corr']:5.2f} {b['mean']:5.2f} | "
              + " | ".join(f"{b[p][0]:5.2f}/{b[p][1]:4.0%} {b[p][2]:4.2f}/{b[p][3]:4.2f}" for p in PHASES) + flags)
        if args.per_leg:
            print("    per leg: " + ", ".join(f"{k}: {v:.2f}" for k, v in b["legs"].items()))
        if args.velocity_split and "velocity" in b:
            v = b["velocity"]
            print("    RMS entry/straight/exit: " + "  ".join(
                name + " " + "/".join(f"{v[name][p]:.2f}" for p in PHASES) for name in VELOCITY_SPLIT))


if __name__ == "__main__":
    main()
