"""The hull identification job behind `autopilot identify hull`: fit runs, validate on held-back runs, derive
gains, write a vessel file that says where its numbers came from.

Fit: each fitting run is smoothed on its own (estimation.identification.hull_least_squares.smoothed: zero-phase
Savitzky-Golay, derivatives from the filter), the runs are stacked, and the nine parameters are fitted by
weighted least squares with their 95 % intervals; a run that does not excite a parameter is refused.
With method "oe" (the default) that fit is the start of an output-error refinement over the fitting runs'
open-loop segments (estimation.identification.hull_output_error), which noisy velocities do not bias.
Validation (000 Table 4): the identified model run free on each validation run's inputs from its first state;
RMSE, MAE and R^2 of u, v, r and of the track x (north), y (east), psi.
Nomoto (002 §4.3, a fixed yaw moment in place of a rudder angle): T r_dot + r = K N fitted by linear least
squares on the fitting runs (r_dot = (K N - r) / T).
Gains follow from the identified model and the vessel's thrusters (see `derived_gains`).
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence

import numpy as np

from autopilot.identification.gain_check import GainCheck
from autopilot.identification.hull_bounds import AT_BOUND_ADVICE, schema_key_bounds, zeta_bounds
from estimation.identification.hull_least_squares import (
    EXCITED_BY,
    MEANING,
    NAMES,
    HullFit,
    IdentificationError,
    RunData,
    fit_hull,
    fit_quality,
    free_run,
    hull_keys,
    smoothed,
    zeta_of_hull,
)
from estimation.identification.hull_output_error import OutputSegment, cut_pieces, fit_hull_oe
from estimation.identification.hull_sensitivity import sensitivities

METHODS = ("ls", "oe")
DEFAULT_METHOD: Optional[str] = None    # both, the better-validating kept: identification-constrained-fit.md
SCORED = ("u", "v", "r", "x", "y")          # the validation signals the method choice compares
MIN_SENSITIVITY = 0.02                      # a wide-interval parameter moving the prediction error less: unpinned
MIN_YAW_RATE_SPREAD_RPS = math.radians(0.5)     # less: the boat never turned
MIN_SPEED_SPREAD_MPS = 0.02                     # less: the boat never changed speed
GROUP_S = 30.0                              # jackknife group length of a run without identification segments [s]
OE_PIECE_S = 8.0                            # output-error multiple-shooting piece length [s]
SHORT_HORIZON_S = 10.0                      # second validation measure: the model flown over 10 s pieces

HULL_KEYS = ("x_udot", "y_vdot", "n_rdot", "x_u", "x_uu", "y_v", "y_vv", "n_r", "n_rr")
STEP_FOR_GAINS_RAD = math.radians(20.0)     # a heading step the yaw loop must make without saturating
SPEED_STEP_FOR_GAINS_MPS = 0.5              # a speed step the speed loop must make without saturating


@dataclass
class HullReport:
    fit: HullFit
    keys: Dict[str, float]                      # vessel-file hull keys from the fit
    file_keys: Dict[str, float]                 # the same keys as the vessel file had them
    nomoto: Dict[str, float]                    # K [rad/s per N m], T [s]
    validation: Dict[str, Dict[str, Dict[str, float]]]   # run -> signal -> rmse/mae/r2
    validated_on_fit_data: bool
    gains: Dict[str, float]
    runs_fit: List[str]
    runs_validate: List[str]
    velocities: str
    window_s: float
    file_mass_kg: float
    file_iz_kgm2: float
    thrust_scales: tuple = ()                   # per thruster, after the imbalance (see thrust_scales)
    method: str = "ls"                          # ls: equation-error least squares; oe: output-error refinement
    validation_short: Dict[str, Dict[str, Dict[str, float]]] = field(default_factory=dict)  # SHORT_HORIZON_S pieces
    validation_x0: Dict[str, Dict[str, Dict[str, float]]] = field(default_factory=dict)  # first states estimated
    method_reason: str = ""                     # why `method` was used
    method_scores: Dict[str, dict] = field(default_factory=dict)   # method -> score, rmse_10s (validation_score)
    unpinned: tuple = ()                        # parameters held at the file's values because the fit left them loose
    sensitivity: Dict[str, float] = field(default_factory=dict)    # wide-interval parameter -> prediction rise
    gain_check: Optional[GainCheck] = None      # what the gain check kept (check_report_gains)
    date: str = field(default_factory=lambda: _dt.date.today().isoformat())

    @property
    def written_gains(self) -> Dict[str, float]:
        """The gains the vessel file gets: per group the derived or the file's, as the gain check kept them
        (`check_gains`); the derived ones when it did not run."""
        return self.gains if self.gain_check is None else dict(self.gains, **self.gain_check.gains)

    @property
    def file_zeta(self) -> np.ndarray:
        """z1..z9 of the vessel file the runs were flown with."""
        return zeta_of_hull(SimpleNamespace(mass_kg=self.file_mass_kg, iz_kgm2=self.file_iz_kgm2, **self.file_keys))

    def as_dict(self) -> dict:
        imb = self.fit.imbalance
        return {"parameters": self.fit.as_dict(), "condition": self.fit.condition, "samples": self.fit.samples,
                "thrust_imbalance": None if imb is None else {"value": imb[0], "std": imb[1],
                                                              "ci95": [imb[2], imb[3]]},
                "vessel_keys": self.keys, "vessel_keys_before": self.file_keys, "nomoto": self.nomoto,
                "validation": self.validation,
                "validation_10s": self.validation_short, "validation_x0": self.validation_x0,
                "validated_on_fit_data": self.validated_on_fit_data,
                "gains": self.written_gains, "derived_gains": self.gains,
                "gain_check": None if self.gain_check is None else self.gain_check.as_dict(),
                "runs_fit": self.runs_fit, "runs_validate": self.runs_validate,
                "velocities": self.velocities, "method": self.method, "window_s": self.window_s,
                "method_reason": self.method_reason, "method_scores": self.method_scores,
                "unpinned": list(self.unpinned),
                "sensitivity": {k: (None if math.isnan(v) else v) for k, v in self.sensitivity.items()},
                "at_bound": {n: AT_BOUND_ADVICE[n] for n in self.fit.at_bound},
                "thrust_scales": list(self.thrust_scales),
                "date": self.date}


def _with_advice(e: IdentificationError, fix) -> IdentificationError:
    """A refusal with what the user can do about the parameters it names: keep the file's values (--fix) or
    drive more of what excites them."""
    weak = [n for n in NAMES if f"{n} (" in str(e) and n not in fix]
    hint = f" (--fix {','.join(weak)} keeps the vessel file's values for them)" if weak else ""
    fly = list(dict.fromkeys(EXCITED_BY[n] for n in weak))
    more = f"; to identify them, drive more of: {'; '.join(fly)}" if fly else ""
    return IdentificationError(f"{e}{hint}{more}")


def identify(fit_runs: Sequence, validate_runs: Sequence, vessel, window_s: float = 1.0,
             require: Sequence[str] = NAMES, fix: Sequence[str] = (), method: Optional[str] = DEFAULT_METHOD
             ) -> HullReport:
    """Fit on `fit_runs`, validate on `validate_runs` (autopilot.identification.runs.IdentRun each; the fitting runs
    themselves when none are given). `fix` names parameters held at the vessel file's values. `method`: "ls"
    the equation-error least squares; "oe" that fit refined by output error over the runs' open-loop segments
    (estimation/identification/hull_output_error.py); None (the default) both, the one that validates better
    kept (`choose_method`).
    Both fits are bounded by the vessel-file schema (autopilot/identification/hull_bounds.py: added masses <= 0,
    dampings >= 0, the file's mass and Iz as given); a parameter the fit leaves unpinned (`settle_unpinned`) is
    held at the vessel file's value and the rest refitted. IdentificationError only when the runs carry no
    information on a parameter of `require` that is not fixed (never turned, never changed speed)."""
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if not fit_runs:
        raise IdentificationError("no run to fit")
    parts = [smoothed(r.data, window_s) for r in fit_runs]

    def stack(k: str) -> np.ndarray:
        return np.concatenate([getattr(p, k) for p in parts])
    stacked = RunData(stack("t_s"), stack("u"), stack("v"), stack("r"), stack("x_n"), stack("y_n"), stack("n_nm"),
                      stack("u_dot"), stack("v_dot"), stack("r_dot"), correlated_samples=parts[0].correlated_samples)
    _refuse_without_information(stacked, [n for n in require if n not in fix], fix)
    file_zeta = zeta_of_hull(vessel.hull)
    bounds = zeta_bounds(vessel.hull.mass_kg, vessel.hull.iz_kgm2)
    ys = [t.y_m for t in vessel.thrusters]
    arm = float(np.mean(np.abs(ys))) if min(ys) < 0.0 < max(ys) else None   # thrusters on both sides
    groups = _sample_groups(fit_runs)
    checked = validate_runs or fit_runs
    val_pieces = cut_pieces([seg for r in checked for seg in open_loop_segments(r)], SHORT_HORIZON_S,
                            SHORT_HORIZON_S)
    user_fixed = {n: file_zeta[NAMES.index(n)] for n in fix}
    outside = [n for n, z in user_fixed.items() if not bounds[0][NAMES.index(n)] <= z <= bounds[1][NAMES.index(n)]]
    if outside:
        raise IdentificationError(f"--fix {', '.join(outside)}: the vessel file's value is outside what "
                                  "`autopilot check` accepts")

    def fit_ls(fixed_names):
        return fit_hull(stacked, require=(), fixed={n: file_zeta[NAMES.index(n)] for n in fixed_names},
                        imbalance_arm_m=arm, bounds=bounds, groups=groups, refuse_wide=False)

    try:
        ls_raw = fit_ls(fix)
    except IdentificationError as e:
        raise _with_advice(e, fix) from None
    segments = [seg for r in fit_runs for seg in open_loop_segments(r)]

    def fit_oe(fixed_names):
        start = ls_raw if set(fixed_names) == set(fix) else fit_ls(fixed_names)
        return fit_hull_oe(segments, start, require=(), imbalance_arm_m=arm, piece_s=OE_PIECE_S, bounds=bounds,
                           segment_refits=True, refuse_wide=False)

    candidates = {}
    for m in ([method] if method else list(METHODS)):
        fitter = fit_ls if m == "ls" else fit_oe
        first = ls_raw if m == "ls" else fit_oe(fix)
        candidates[m] = settle_unpinned(first, fitter, fix, val_pieces, bounds, arm)
    scores = {m: validation_score(c[0].zeta, checked) for m, c in candidates.items()}
    chosen, reason = choose_method(scores) if method is None else (method, "forced by --method")
    fit, unpinned, sens = candidates[chosen]
    keys = _keys_within_schema(hull_keys(fit, vessel.hull.mass_kg, vessel.hull.iz_kgm2))
    on_fit_data = not validate_runs
    validation = {r.name: validate(fit.zeta, r) for r in checked}
    short = {r.name: validate(fit.zeta, r, SHORT_HORIZON_S) for r in checked}
    x0 = {r.name: validate(fit.zeta, r, initial="estimated") for r in checked}
    report = HullReport(fit, keys, {k: float(getattr(vessel.hull, k)) for k in HULL_KEYS},
                        nomoto_fit(stacked), validation, on_fit_data, derived_gains(fit.zeta, vessel),
                        [r.name for r in fit_runs], [r.name for r in checked],
                        fit_runs[0].source, window_s, vessel.hull.mass_kg, vessel.hull.iz_kgm2)
    report.thrust_scales = tuple(thrust_scales(vessel, report))
    report.method = chosen
    report.method_reason = reason
    report.method_scores = {m: {"score": sc[0], "rmse_10s": sc[1]} for m, sc in scores.items()}
    report.unpinned = unpinned
    report.sensitivity = sens
    report.validation_short = short
    report.validation_x0 = x0
    return report


def _refuse_without_information(d: RunData, require: Sequence[str], fix: Sequence[str]) -> None:
    """IdentificationError naming the parameters a run carries no information on: the boat never turned (yaw
    rate spread under MIN_YAW_RATE_SPREAD_RPS, or no yaw moment: z2, z3, z6..z9) or never changed speed
    (surge speed spread under MIN_SPEED_SPREAD_MPS: z1, z4, z5)."""
    missing, why = [], []
    if float(np.std(d.r)) < MIN_YAW_RATE_SPREAD_RPS or not np.any(d.n_nm):
        missing += ["z2", "z3", "z6", "z7", "z8", "z9"]
        why.append(f"the boat never turned (yaw rate spread {math.degrees(float(np.std(d.r))):.2f} deg/s)")
    if float(np.std(d.u)) < MIN_SPEED_SPREAD_MPS:
        missing += ["z1", "z4", "z5"]
        why.append(f"the boat never changed speed (surge spread {float(np.std(d.u)):.3f} m/s)")
    missing = [n for n in NAMES if n in missing and n in require]
    if missing:
        raise _with_advice(IdentificationError(
            "the run does not excite " + ", ".join(f"{n} ({MEANING[n]})" for n in missing) + ": "
            + "; ".join(why)), fix)


def _sample_groups(fit_runs) -> np.ndarray:
    """A label per stacked sample of the fitting runs for the delete-a-group jackknife: within each run, the
    identification segment the sample belongs to (from its start to the next one's, the way back included);
    a run without segments in GROUP_S pieces."""
    labels, offset = [], 0
    for r in fit_runs:
        t = np.asarray(r.data.t_s, float)
        starts = sorted(t0 for t0, _ in r.segment_starts_s)
        if len(starts) >= 2:
            g = np.maximum(np.searchsorted(starts, t, side="right") - 1, 0)
        else:
            g = ((t - t[0]) // GROUP_S).astype(int)
        labels.append(g + offset)
        offset += int(g.max()) + 1
    return np.concatenate(labels)


def settle_unpinned(fit: HullFit, refit, fix: Sequence[str], pieces, bounds, arm_m: Optional[float]):
    """(fit, unpinned, sensitivity): the parameters of `fit` neither pinned by their interval (95 % half
    width under the value) nor by the held-out prediction (moving one across its interval raises
    hull_sensitivity.prediction_error by less than MIN_SENSITIVITY) are held at the vessel file's values by
    `refit(fixed names)` once, the rest refitted; so is one whose interval is open (an infinite end). A
    parameter on its bound is reported there, not tested."""
    free = [n for n in NAMES if n not in fit.fixed and n not in fit.at_bound]
    wide = [n for n in free if not _half(fit, n) < abs(float(fit.zeta[NAMES.index(n)]))]
    # an interval the data leave open (an end at infinity) pins nothing: moving a parameter to infinity
    # only shows that the model then diverges
    unbounded = [n for n in wide if not np.all(np.isfinite(fit.ci95[NAMES.index(n)]))]
    tested = [n for n in wide if n not in unbounded]
    delta = 0.0 if fit.imbalance is None else float(fit.imbalance[0])
    sens = sensitivities(fit.zeta, fit.ci95, tested, pieces, delta, arm_m or 1.0, bounds) if tested else {}
    sens.update({n: math.nan for n in unbounded})           # nan: not tested, the interval is open
    unpinned = tuple(n for n in wide if n in unbounded or sens[n] < MIN_SENSITIVITY)
    if not unpinned:
        return fit, (), sens
    return refit(tuple(fix) + unpinned), unpinned, sens


def _half(fit: HullFit, name: str) -> float:
    lo, hi = fit.ci95[NAMES.index(name)]
    return 0.5 * (float(hi) - float(lo))


def validation_score(zeta: np.ndarray, runs) -> tuple:
    """(score, rmse): the model flown free over SHORT_HORIZON_S pieces of each run (`validate`), its RMSE of
    u, v [m/s], r [rad/s], x, y [m] per run, and the score [-]: their mean over each signal's spread in the data
    (sqrt(1 - R^2); lower is better, inf if the model diverges)."""
    parts, rmse = [], {}
    for r in runs:
        q = validate(zeta, r, SHORT_HORIZON_S)
        rmse[r.name] = {k: q[k]["rmse"] for k in SCORED}
        for k in SCORED:
            r2 = q[k]["r2"]
            parts.append(math.sqrt(max(0.0, 1.0 - r2)) if math.isfinite(r2) else math.inf)
    return (float(np.mean(parts)) if parts else math.inf), rmse


def choose_method(scores: Dict[str, tuple]) -> tuple:
    """(method, why): of the methods' validation_score results, the lower score (ls on a tie: the simpler)."""
    order = sorted(scores, key=lambda m: (scores[m][0], m != "ls"))
    best = order[0]
    if len(order) == 1:
        return best, "the only method run"
    other = order[1]
    return best, (f"it validates better on the held-out runs (score {scores[best][0]:.4f} against {other}'s "
                  f"{scores[other][0]:.4f}; mean RMSE/spread of {', '.join(SCORED)} over "
                  f"{SHORT_HORIZON_S:g} s free runs)")


def _keys_within_schema(keys: Dict[str, float]) -> Dict[str, float]:
    """The hull keys, a value past its schema bound by rounding only (1e-9 relative) set on the bound."""
    out = dict(keys)
    for key, (lo, hi) in schema_key_bounds().items():
        v = out[key]
        tol = 1e-9 * max(1.0, abs(v))
        if hi < v <= hi + tol:
            out[key] = hi
        elif lo - tol <= v < lo:
            out[key] = lo
    return out


def segment_spans(run) -> List[tuple]:
    """(first, stop) sample indices of each open-loop segment of an identification mission's run (the ways back
    between them, under closed-loop control, left out); [(0, len)] for any other run."""
    d = run.data
    spans = []
    ends = sorted(run.segment_ends_s)
    for t0, _ in run.segment_starts_s:
        t1 = next((t for t in ends if t > t0), None)
        if t1 is not None:
            spans.append((int(np.searchsorted(d.t_s, t0)), int(np.searchsorted(d.t_s, t1))))
    return spans or [(0, len(d.t_s))]


def open_loop_segments(run) -> List[OutputSegment]:
    """The run's open-loop segments (segment_spans) as output-error data: measured u, v, r, heading, forces."""
    d = run.data
    out = []
    for a, b in segment_spans(run):
        sl = slice(a, b)
        out.append(OutputSegment(RunData(d.t_s[sl], d.u[sl], d.v[sl], d.r[sl], d.x_n[sl], d.y_n[sl], d.n_nm[sl]),
                                 run.psi_rad[sl]))
    return out


def validate(zeta: np.ndarray, run, horizon_s: Optional[float] = None,
             initial: str = "measured") -> Dict[str, Dict[str, float]]:
    """The model run free on `run`'s inputs: quality of u, v, r, x, y, psi (000 Table 4's measures). On a run of
    an identification mission, each open-loop segment is flown from its own measured first state (the ways back
    between them, under closed-loop control, are left out); any other run is flown whole. With `horizon_s`,
    each of those is cut into pieces of that many seconds, each flown from its own measured first state (a
    directionally unstable hull run open loop for a whole segment turns away from any slightly different model;
    this measures the model over the horizon a controller predicts, not the hull's instability).

    `initial` "estimated": each piece starts from the first u, v, r that fit the piece's measured u, v, r best
    (least squares, each channel over its spread in the run), as a system-identification tool's comparison
    does by default (MATLAB's `compare`). Raises ValueError for any other `initial`.
    Why: docs/design-notes/simulator-and-rims.md, "Identification"."""
    if initial not in ("measured", "estimated"):
        raise ValueError("initial must be 'measured' or 'estimated'")
    d = run.data
    pieces = segment_spans(run)
    if horizon_s:
        dt = float(np.median(np.diff(d.t_s)))
        n = max(2, int(round(horizon_s / dt)))
        pieces = [(a, min(a + n, b)) for a0, b in pieces for a in range(a0, b, n)]
    meas: Dict[str, List[np.ndarray]] = {k: [] for k in ("u", "v", "r", "x", "y", "psi")}
    model: Dict[str, List[np.ndarray]] = {k: [] for k in meas}
    spreads = [max(float(np.std(c)), 1e-3) for c in (d.u, d.v, d.r)]
    for a, b in pieces:
        if b - a < 2:
            continue
        sl = slice(a, b)
        piece = RunData(d.t_s[sl], d.u[sl], d.v[sl], d.r[sl], d.x_n[sl], d.y_n[sl], d.n_nm[sl])
        if initial == "estimated":
            piece = _with_best_first_state(zeta, piece, spreads)
        m = free_run(zeta, piece, psi0_rad=float(run.psi_rad[a]))
        got = {"u": d.u[sl], "v": d.v[sl], "r": d.r[sl], "x": run.north_m[sl] - run.north_m[a],
               "y": run.east_m[sl] - run.east_m[a], "psi": run.psi_rad[sl]}
        for k in meas:
            meas[k].append(got[k])
            model[k].append(m[k])
    return {k: fit_quality(np.concatenate(meas[k]), np.concatenate(model[k])) for k in meas}


def _with_best_first_state(zeta: np.ndarray, piece: RunData, spreads) -> RunData:
    """`piece` with its first u, v, r replaced by those whose free run fits its measured u, v, r best."""
    from scipy.optimize import least_squares
    measured = np.concatenate([piece.u, piece.v, piece.r])
    scale = np.repeat(np.asarray(spreads), len(piece.t_s))

    def start(x0):
        return RunData(piece.t_s, np.r_[x0[0], piece.u[1:]], np.r_[x0[1], piece.v[1:]], np.r_[x0[2], piece.r[1:]],
                       piece.x_n, piece.y_n, piece.n_nm)

    def residual(x0):
        m = free_run(zeta, start(x0))
        res = (np.concatenate([m["u"], m["v"], m["r"]]) - measured) / scale
        return np.nan_to_num(res, nan=1e3)

    x0 = np.array([piece.u[0], piece.v[0], piece.r[0]], dtype=float)
    fit = least_squares(residual, x0, x_scale=np.asarray(spreads), max_nfev=60)
    return start(fit.x)


def nomoto_fit(d: RunData) -> Dict[str, float]:
    """K [rad/s per N m] and T [s] of T r_dot + r = K N by least squares on r_dot = a N + b r."""
    assert d.r_dot is not None      # smoothed data: its derivatives are taken
    a_b, *_ = np.linalg.lstsq(np.column_stack([d.n_nm, d.r]), d.r_dot, rcond=None)
    a, b = float(a_b[0]), float(a_b[1])
    if b >= 0.0:
        return {"K": math.nan, "T": math.nan}
    return {"K": -a / b, "T": -1.0 / b}


def derived_gains(zeta: np.ndarray, vessel) -> Dict[str, float]:
    """Gains from the identified model and the vessel's thrusters:
      heading omega_n: the largest (at most 1.5 rad/s) for which a 20 deg heading step asks no more than the
        thrusters' full yaw moment of the pole-placement proportional term, (Iz - N_rdot) omega_n^2 * step;
        zeta 1.0;
      speed PI (002 Eqs. 26-32): kp = 2 lambda, ki = lambda^2, lambda the largest (at most 0.7 /s) for which a
        0.5 m/s step asks no more than the full surge force, (m - X_udot) 2 lambda * step;
      ILOS lookahead: twice the turning radius at half the hull's top speed, in hull lengths (at least 2),
        the radius from the steady yaw rate the full yaw moment gives against the identified damping."""
    from autopilot.control.azimuth_allocation import make_allocator
    from autopilot.guidance.turning import steady_yaw_rate_rps
    from drivers.thrust_map import make_thrust_maps
    z1, z3, z8, z9 = float(zeta[0]), float(zeta[2]), float(zeta[7]), float(zeta[8])
    alloc = make_allocator(vessel, make_thrust_maps(vessel))
    max_yaw, max_surge = float(alloc.max_yaw_nm), float(alloc.max_surge_n)
    omega = min(1.5, math.sqrt(max_yaw / (z3 * STEP_FOR_GAINS_RAD)))
    lam = min(0.7, max_surge / (2.0 * z1 * SPEED_STEP_FOR_GAINS_MPS))
    r_max = steady_yaw_rate_rps(z8, z9, max_yaw)
    radius = 0.5 * vessel.hull.max_speed_mps / r_max
    lookahead = max(2.0, round(2.0 * radius / vessel.hull.length_m * 2.0) / 2.0)
    return {"heading_omega_n_rps": round(omega, 2), "heading_zeta": 1.0, "speed_kp_per_s": round(2 * lam, 2),
            "speed_ki_per_s2": round(lam * lam, 3), "lookahead_hull_lengths": lookahead,
            "turn_rate_max_dps": math.degrees(r_max), "turning_radius_m": radius}


def vessel_text(source_text: str, report: HullReport) -> str:
    """The vessel file's text with the identified hull keys and derived gains written in, each with its 95 %
    interval in a comment, a header saying where they came from, and `validated_against` set (so
    `autopilot check` tells an identified file from a guessed one). Other lines are kept as they were."""
    fit = report.fit
    base = {"x_udot": report.file_mass_kg, "y_vdot": report.file_mass_kg, "n_rdot": report.file_iz_kgm2}
    key_ci = {}
    for key, (lo, hi) in zip(HULL_KEYS, fit.ci95):       # HULL_KEYS is in z1..z9 order
        b = base.get(key, 0.0)
        key_ci[key] = (b - hi, b - lo)
    lines = source_text.splitlines()
    out, section = [], None
    for line in lines:
        m = re.match(r"^([A-Za-z_][\w]*):", line)
        if m:
            section = m.group(1)
        km = re.match(r"^(\s+)([a-z_]+):\s*([^#\s][^#]*?)\s*(#.*)?$", line)
        if section == "hull" and km and km.group(2) in report.keys:
            key = km.group(2)
            lo, hi = key_ci[key]
            name = NAMES[HULL_KEYS.index(key)]
            if name in report.unpinned:
                rise = report.sensitivity.get(name, 0.0)
                why = ("its interval is open: the runs do not bound it" if math.isnan(rise) else
                       f"moving it across its interval changes the held-out prediction by {100 * rise:.1f} %")
                out.append(f"{km.group(1)}{key}: {report.keys[key]:.6g}   # kept from the file: the runs leave "
                           f"{name} unpinned ({why})")
            elif name in fit.fixed:
                out.append(f"{km.group(1)}{key}: {report.keys[key]:.6g}   # kept from the file: the runs do not "
                           f"excite it")
            elif name in fit.at_bound:
                out.append(f"{km.group(1)}{key}: {report.keys[key]:.6g}   # identified at the bound "
                           f"`autopilot check` allows ({AT_BOUND_ADVICE[name]}); 95 % CI [{lo:.5g}, {hi:.5g}]; "
                           f"was {report.file_keys[key]:g}")
            else:
                out.append(f"{km.group(1)}{key}: {report.keys[key]:.6g}   # identified, 95 % CI "
                           f"[{lo:.5g}, {hi:.5g}]; was {report.file_keys[key]:g}")
            continue
        if line.startswith("validated_against:"):
            continue
        out.append(line)
    out = _with_gains(out, report.written_gains, _gain_comments(report))
    if report.fit.imbalance is not None:
        out = _with_thrust_scales(out, report.thrust_scales)
    val = "; ".join(f"{run}: R2 " + " ".join(f"{k} {q['r2']:.3f}" for k, q in sig.items())
                    for run, sig in report.validation.items())
    header = [f"# Hull identified by `autopilot identify hull` on {report.date} from {', '.join(report.runs_fit)}",
              f"# (velocities: {report.velocities}, smoothing window {report.window_s:g} s, "
              f"{report.fit.samples} samples, condition {report.fit.condition:.0f}).",
              f"# Validation{' (on the fitting data: give a second run)' if report.validated_on_fit_data else ''}: "
              f"{val}.",
              f"# Method: {report.method} ({report.method_reason}).",
              f"# Nomoto K = {report.nomoto['K']:.4g} rad/s per N m, T = {report.nomoto['T']:.3g} s.",
              f"# {imbalance_text(report.fit.imbalance)}",
              *_gains_header(report)]
    body = "\n".join(header + out).rstrip("\n") + "\n"
    return body + f"validated_against: \"autopilot identify {report.date}: {', '.join(report.runs_validate)}\"\n"


def imbalance_text(imb) -> str:
    """A thrust imbalance (delta, std, lo, hi) in words."""
    if imb is None:
        return "Thrust imbalance: not fitted (no thrusters on both sides)."
    delta, _, lo, hi = imb
    side = "starboard" if delta >= 0 else "port"
    return (f"Thrust imbalance: the {side} thrusters push {100 * abs(delta):.1f} % more than the other side "
            f"(95 % CI {100 * lo:+.1f} .. {100 * hi:+.1f} %, + = starboard) for the same pulse.")


def _with_thrust_scales(lines: List[str], scales: Sequence[float]) -> List[str]:
    """Set thrust_scale in each one-line `- {name: ...}` entry of `thrusters:`, in order."""
    out, section, i = [], None, 0
    for line in lines:
        m = re.match(r"^([A-Za-z_][\w]*):", line)
        if m:
            section = m.group(1)
        tm = re.match(r"^(\s*-\s*)\{(.*)\}(\s*#.*)?$", line) if section == "thrusters" else None
        if tm and i < len(scales):
            body = re.sub(r",?\s*thrust_scale:\s*[^,}]+", "", tm.group(2)).rstrip()
            out.append(f"{tm.group(1)}{{{body}, thrust_scale: {scales[i]:.3f}}}   # identified imbalance")
            i += 1
            continue
        out.append(line)
    if i != len(scales):
        raise IdentificationError("the vessel file's thrusters are not one-line {...} entries; write the "
                                  "identified thrust_scale values by hand: "
                                  + ", ".join(f"{k:.3f}" for k in scales))
    return out


def _gains_header(report: HullReport) -> List[str]:
    """The header's lines on the gains: derived, and what the gain check kept."""
    head = "# Gains derived from the identified model (autopilot/identification/hull.py derived_gains)"
    gc = report.gain_check
    if gc is None:
        return [head + "; not flown on it (no gain check: --no-gain-check)."]
    said = {"file": "the file's", "derived": "derived", "same": "derived = the file's"}
    kept = ", ".join(f"{g} {said[k]}" for g, k in gc.kept.items())
    return [head + ", then flown on it against the file's own (autopilot/identification/gain_check.py):",
            f"# kept per group: {kept}; why, with the figures, beside each gain below."]


def _gain_comments(report: HullReport) -> Dict[str, str]:
    """group -> the comment its line gets."""
    gc = report.gain_check
    if gc is None:
        return {g: "derived" for g in ("heading", "speed", "lookahead")}
    out = {}
    for g, k in gc.kept.items():
        if k == "file":
            d = ", ".join(f"{_SHORT[n]} {report.gains[n]:g}" for n in _GROUP_KEYS[g])
            out[g] = f"kept from the file, not the derived {d}: {gc.why[g]}"
        elif k == "derived":
            out[g] = f"derived; the gain check kept it: {gc.why[g]}"
        else:
            out[g] = "derived (the file's values)"
    return out


_GROUP_KEYS = {"heading": ("heading_omega_n_rps", "heading_zeta"), "speed": ("speed_kp_per_s", "speed_ki_per_s2"),
               "lookahead": ("lookahead_hull_lengths",)}
_SHORT = {"heading_omega_n_rps": "omega_n", "heading_zeta": "zeta", "speed_kp_per_s": "kp", "speed_ki_per_s2": "ki",
          "lookahead_hull_lengths": "lookahead"}


def check_report_gains(vessel, report: HullReport, flights) -> None:
    """Fly the derived gains and `vessel`'s (the file the runs were flown with) on the identified model with
    `flights` (see gain_check.check_gains) and set report.gain_check: what `vessel_text` writes
    (autopilot/identification/gain_check.py)."""
    from autopilot.identification.gain_check import check_gains, file_gains
    report.gain_check = None
    report.gain_check = check_gains(identified_vessel(vessel, report), report.gains, file_gains(vessel),
                                    flights=flights)


def _with_gains(lines: List[str], gains: Dict[str, float], comments: Optional[Dict[str, str]] = None
                ) -> List[str]:
    """Set control.heading omega_n/zeta, control.speed kp/ki and control.lookahead_hull_lengths, each line with
    its comment (comments: group -> text; default "derived")."""
    note = {g: "derived" for g in ("heading", "speed", "lookahead")}
    note.update(comments or {})
    flow = {"heading": {"omega_n_rps": gains["heading_omega_n_rps"], "zeta": gains["heading_zeta"]},
            "speed": {"kp_per_s": gains["speed_kp_per_s"], "ki_per_s2": gains["speed_ki_per_s2"]}}
    out, section, done = [], None, set()
    for line in lines:
        m = re.match(r"^([A-Za-z_][\w]*):", line)
        if m:
            section = m.group(1)
        if section == "control":
            km = re.match(r"^(\s+)(heading|speed):\s*\{(.*)\}\s*(#.*)?$", line)
            if km:
                items = dict(re.findall(r"(\w+):\s*([^,}]+)", km.group(3)))
                items.update({k: f"{v:g}" for k, v in flow[km.group(2)].items()})
                out.append(f"{km.group(1)}{km.group(2)}: {{" + ", ".join(f"{k}: {v.strip()}" for k, v in
                                                                         items.items()) + "}   # "
                           + note[km.group(2)])
                done.add(km.group(2))
                continue
            lm = re.match(r"^(\s+)lookahead_hull_lengths:", line)
            if lm:
                out.append(f"{lm.group(1)}lookahead_hull_lengths: {gains['lookahead_hull_lengths']:g}   # "
                           + note["lookahead"])
                done.add("lookahead")
                continue
        out.append(line)
    missing = {"heading", "speed", "lookahead"} - done
    if missing:
        raise IdentificationError("the vessel file's control section does not have the one-line "
                                  f"{', '.join(sorted(missing))} entries the gains are written into")
    return out


def thrust_scales(vessel, report: HullReport) -> List[float]:
    """Each thruster's thrust_scale after the identified imbalance delta: the file's scale x (1 + delta/2) to
    starboard, x (1 - delta/2) to port (only the ratio is identified; the mean is kept)."""
    imb = report.fit.imbalance
    delta = 0.0 if imb is None else imb[0]
    return [t.thrust_scale * (1.0 + math.copysign(0.5 * delta, t.y_m)) if t.y_m != 0.0 else t.thrust_scale
            for t in vessel.thrusters]


def identified_vessel(vessel, report: HullReport):
    """The VesselConfig `vessel_text` describes, built in memory: the identified hull keys, thrust scales and
    the gains it writes (report.written_gains)."""
    import dataclasses
    g, c = report.written_gains, vessel.control
    thrusters = tuple(dataclasses.replace(t, thrust_scale=k) for t, k in zip(vessel.thrusters,
                                                                              thrust_scales(vessel, report)))
    control = dataclasses.replace(
        c, heading=dataclasses.replace(c.heading, omega_n_rps=g["heading_omega_n_rps"], zeta=g["heading_zeta"]),
        speed=dataclasses.replace(c.speed, kp_per_s=g["speed_kp_per_s"], ki_per_s2=g["speed_ki_per_s2"]),
        lookahead_hull_lengths=g["lookahead_hull_lengths"])
    return dataclasses.replace(vessel, hull=dataclasses.replace(vessel.hull, **report.keys), control=control,
                               thrusters=thrusters,
                               validated_against=f"autopilot identify {report.date}: "
                                                 f"{', '.join(report.runs_validate)}")


def write_vessel(path, source_text: str, report: HullReport) -> Path:
    """Write `vessel_text` to path (refusing to overwrite the source file itself is the caller's job), only if
    `autopilot check` accepts it: the text is checked (autopilot.files.check.check_config) in a hidden file
    beside `path`, then moved there; IdentificationError with check's problems (nothing written) if not."""
    from autopilot.files.check import check_config
    p = Path(path)
    trial = p.with_name(f".{p.stem}.checking{p.suffix or '.yaml'}")
    trial.write_text(vessel_text(source_text, report))
    try:
        checked = check_config(trial)
        if not checked.ok:
            raise IdentificationError("`autopilot check` would refuse it: "
                                      + "; ".join(str(q).replace(str(trial), str(p)) for q in checked.problems))
        trial.replace(p)
    finally:
        trial.unlink(missing_ok=True)
    return p
