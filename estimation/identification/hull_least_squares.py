"""Hull identification: the 3-DOF manoeuvring model's nine parameters from a logged run, by least squares.

The model is the plant's (hil/sim/dynamics.py) for a diagonal hull, in the form of paper 000 (§3.5, Table 3) with
positive damping magnitudes and the Munk moment the paper's yaw row leaves out:

    X = z1 u_dot - z2 v r + z4 u + z5 |u| u
    Y = z2 v_dot + z1 u r + z6 v + z7 |v| v
    N = z3 r_dot + (z2 - z1) u v + z8 r + z9 |r| r

(X, Y, N: applied surge force [N], sway force [N], yaw moment [N m], N = -sum(y_i T_i) for the thrusters;
u, v [m/s] and r [rad/s] through the water, body FRD.) The three rows are stacked into one regression
Phi z = tau, so the Munk column ties the yaw row to z1 and z2; each row group is weighted by the inverse of its
residual standard deviation (one reweighting after an ordinary fit), since newtons and newton-metres are not
commensurable. Standard errors: sigma^2 (Phi^T W Phi)^-1 with the weighted residual variance, times the number
of samples a smoothing filter made dependent (one independent sample per filter window); 95 % intervals with
Student's t at that many independent samples less nine.

Vessel-file keys: x_udot = m - z1, y_vdot = m - z2, n_rdot = iz - z3 (only Iz - N_rdot is identifiable),
x_u = -z4, x_uu = -z5, y_v = -z6, y_vv = -z7, n_r = -z8, n_rr = -z9.

A run that does not excite a parameter is refused (`IdentificationError`, the reasons listed): a parameter
whose 95 % interval is wider than its value, or a regressor matrix whose scaled condition number exceeds
`MAX_CONDITION`. Pure numpy/scipy, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
from scipy import signal, stats

NAMES = ("z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9")
MEANING = {"imbalance": "starboard thrust over port, relative",
           "z1": "m - X_udot (surge mass)", "z2": "m - Y_vdot (sway mass)", "z3": "Iz - N_rdot (yaw inertia)",
           "z4": "-X_u", "z5": "-X_uu", "z6": "-Y_v", "z7": "-Y_vv", "z8": "-N_r", "z9": "-N_rr"}
# what an operator (or the identification mission) flies to excite each parameter
SURGE, SWAY, YAW = ("surge steps at several throttle levels and a coast down",
                    "turns both ways at speed, sharp enough that the hull slides sideways",
                    "turns both ways, weaving and spins at full steering")
EXCITED_BY = {"z1": SURGE, "z4": SURGE, "z5": SURGE, "z2": SWAY, "z6": SWAY, "z7": SWAY,
              "z3": YAW, "z8": YAW, "z9": YAW}
MAX_CONDITION = 1.0e4


class IdentificationError(ValueError):
    """The run cannot identify the model; the message lists what is missing (e.g. the boat never turned)."""


@dataclass(frozen=True)
class RunData:
    """One run, uniformly sampled: time [s], body velocities through the water u, v [m/s], r [rad/s], their
    time derivatives (None: taken by a Savitzky-Golay filter), and the applied surge force X [N], sway force Y
    [N] and yaw moment N [N m]."""
    t_s: np.ndarray
    u: np.ndarray
    v: np.ndarray
    r: np.ndarray
    x_n: np.ndarray
    y_n: np.ndarray
    n_nm: np.ndarray
    u_dot: Optional[np.ndarray] = None
    v_dot: Optional[np.ndarray] = None
    r_dot: Optional[np.ndarray] = None
    correlated_samples: int = 1     # samples a smoothing filter made dependent (its window): widens the CIs


@dataclass(frozen=True)
class HullFit:
    zeta: np.ndarray            # (9,) z1..z9
    std: np.ndarray             # (9,) standard errors
    ci95: np.ndarray            # (9, 2) lower, upper
    condition: float            # condition number of the column-scaled weighted regressor
    samples: int
    residual_std: tuple         # per row (surge [N], sway [N], yaw [N m])
    fixed: tuple = ()           # names of parameters held at given values, not fitted
    imbalance: Optional[tuple] = None   # (delta, std, lo, hi) when fitted: starboard thrust x (1 + delta/2),
                                        # port x (1 - delta/2), relative to the thrust maps [-]
    at_bound: tuple = ()        # names of fitted parameters that ended on a bound of the fit
    ci95_residual: Optional[np.ndarray] = None   # (9, 2) the residual-based interval alone
    ci95_segments: Optional[np.ndarray] = None   # (9, 2) the delete-a-segment refit interval alone (model form)

    def as_dict(self) -> Dict[str, dict]:
        out = {}
        for i, (n, z, s, (lo, hi)) in enumerate(zip(NAMES, self.zeta, self.std, self.ci95)):
            out[n] = {"value": float(z), "std": float(s), "ci95": [float(lo), float(hi)], "meaning": MEANING[n],
                      "fixed": n in self.fixed, "at_bound": n in self.at_bound}
            for key, ci in (("ci95_residual", self.ci95_residual), ("ci95_segments", self.ci95_segments)):
                if ci is not None:
                    out[n][key] = [float(ci[i][0]), float(ci[i][1])]
        return out


def smoothed(data: RunData, window_s: float = 1.0, order: int = 3) -> RunData:
    """States smoothed and differentiated by a zero-phase Savitzky-Golay filter (scipy) over `window_s`; the
    forces go through the same smoothing, so a step of thrust and the velocity's answer to it are filtered
    alike (the linear terms of the model hold exactly between filtered signals)."""
    dt = float(np.median(np.diff(data.t_s)))
    n = max(order + 2, int(round(window_s / dt)) | 1)
    sg = lambda x, d: signal.savgol_filter(x, n, order, deriv=d, delta=dt, mode="interp")  # noqa: E731
    return RunData(data.t_s, sg(data.u, 0), sg(data.v, 0), sg(data.r, 0), sg(data.x_n, 0), sg(data.y_n, 0),
                   sg(data.n_nm, 0), sg(data.u, 1), sg(data.v, 1), sg(data.r, 1), correlated_samples=n)


def regressors(d: RunData):
    """(Phi, tau, row): the stacked regression, rows grouped surge, sway, yaw (row = 0, 1, 2 per line)."""
    if d.u_dot is None or d.v_dot is None or d.r_dot is None:
        d = smoothed(d)
    assert d.u_dot is not None and d.v_dot is not None and d.r_dot is not None      # smoothed() gives them
    u, v, r = d.u, d.v, d.r
    z = np.zeros_like(u)
    surge = np.column_stack([d.u_dot, -v * r, z, u, np.abs(u) * u, z, z, z, z])
    sway = np.column_stack([u * r, d.v_dot, z, z, z, v, np.abs(v) * v, z, z])
    yaw = np.column_stack([-u * v, u * v, d.r_dot, z, z, z, z, r, np.abs(r) * r])
    phi = np.vstack([surge, sway, yaw])
    tau = np.concatenate([d.x_n, d.y_n, d.n_nm])
    row = np.repeat([0, 1, 2], len(u))
    return phi, tau, row


def fit_hull(data: RunData, require: Sequence[str] = NAMES, fixed: Optional[Dict[str, float]] = None,
             imbalance_arm_m: Optional[float] = None, bounds: Optional[tuple] = None,
             groups: Optional[np.ndarray] = None, refuse_wide: bool = True) -> HullFit:
    """Weighted least squares of the nine parameters; IdentificationError when a required one is not excited.
    `fixed` holds parameters at given values (e.g. the vessel file's, for what a run cannot excite): their
    columns move to the right-hand side, and they are reported with zero spread.
    `imbalance_arm_m` (the thrusters' mean |y| [m]) also fits a thrust imbalance delta: starboard thrusters
    pushing (1 + delta/2) and port ones (1 - delta/2) times their maps add -(delta/2) arm X to the yaw moment
    and -(delta/2) N / arm to the surge force, so the yaw row gains the column arm X / 2 and the surge row
    N / (2 arm) (only the difference between the sides is identifiable: a common scale is indistinguishable
    from scaling every parameter).
    `bounds` (lower (9,), upper (9,)) constrain z1..z9 inside the fit (bounded linear least squares,
    scipy.optimize.lsq_linear; a fixed value outside its bounds is a ValueError); the parameters that end on
    a bound are listed in `at_bound`, their intervals cut at the bound.
    `groups` (one label per sample of `data`, e.g. the identification segment it belongs to) adds a
    delete-a-group jackknife: the fit redone leaving each group out, its spread an interval that holds when the
    model cannot reproduce the hull (`ci95_segments`); `ci95` is then the wider of that and the residual one.
    `refuse_wide` False: a parameter with a wide interval, or nearly dependent regressors, is reported, not
    refused (only a parameter the run does not excite at all is)."""
    fixed = dict(fixed or {})
    unknown = sorted(set(fixed) - set(NAMES))
    if unknown:
        raise ValueError(f"fixed: not parameters: {', '.join(unknown)}")
    phi, tau, row = regressors(data)
    n_samples = len(data.t_s)
    group_rows = None if groups is None else np.tile(np.asarray(groups), 3)
    if group_rows is not None and len(group_rows) != len(tau):
        raise ValueError(f"groups: {len(group_rows) // 3} labels for {n_samples} samples")
    surge_force = np.tile(tau[row == 0], 3)              # X [N] and N [N m] beside every row (imbalance column)
    yaw_moment = np.tile(tau[row == 2], 3)
    ok = np.all(np.isfinite(phi), axis=1) & np.isfinite(tau)
    phi, tau, row, surge_force, yaw_moment = phi[ok], tau[ok], row[ok], surge_force[ok], yaw_moment[ok]
    if group_rows is not None:
        group_rows = group_rows[ok]
    free = [i for i, name in enumerate(NAMES) if name not in fixed]
    if not free:
        raise ValueError("fixed: every parameter is fixed; nothing to fit")
    lo_all = np.full(9, -np.inf) if bounds is None else np.asarray(bounds[0], float)
    hi_all = np.full(9, np.inf) if bounds is None else np.asarray(bounds[1], float)
    for name, value in fixed.items():
        i = NAMES.index(name)
        if not lo_all[i] <= float(value) <= hi_all[i]:
            raise ValueError(f"fixed: {name} = {float(value):g} is outside its bounds "
                             f"[{lo_all[i]:g}, {hi_all[i]:g}]")
    for name, value in fixed.items():
        tau = tau - phi[:, NAMES.index(name)] * float(value)
    cols, names = phi[:, free], [NAMES[i] for i in free]
    if imbalance_arm_m:
        arm = float(imbalance_arm_m)
        cols = np.column_stack([cols, np.where(row == 2, 0.5 * arm * surge_force,
                                               np.where(row == 0, 0.5 * yaw_moment / arm, 0.0))])
        names = names + ["imbalance"]
    lo = np.r_[lo_all[free], [-np.inf] * (len(names) - len(free))]
    hi = np.r_[hi_all[free], [np.inf] * (len(names) - len(free))]
    fit = _fit_free(cols, tau, row, names, data, [r for r in require if r != "imbalance"], (lo, hi),
                    group_rows, refuse_wide)
    zeta, std = np.zeros(9), np.zeros(9)
    ci, ci_res = np.zeros((9, 2)), np.zeros((9, 2))
    ci_seg = None if fit.ci95_segments is None else np.zeros((9, 2))
    for k, i in enumerate(free):
        zeta[i], std[i], ci[i] = fit.zeta[k], fit.std[k], fit.ci95[k]
        ci_res[i] = fit.ci95_residual[k] if fit.ci95_residual is not None else fit.ci95[k]
        if ci_seg is not None and fit.ci95_segments is not None:
            ci_seg[i] = fit.ci95_segments[k]
    for name, value in fixed.items():
        i = NAMES.index(name)
        zeta[i], ci[i], ci_res[i] = float(value), (float(value), float(value)), (float(value), float(value))
        if ci_seg is not None:
            ci_seg[i] = (float(value), float(value))
    imb = None
    if imbalance_arm_m:
        imb = (float(fit.zeta[-1]), float(fit.std[-1]), float(fit.ci95[-1][0]), float(fit.ci95[-1][1]))
    return HullFit(zeta, std, ci, fit.condition, fit.samples, fit.residual_std, tuple(sorted(fixed)), imb,
                   tuple(n for n in fit.at_bound if n in NAMES), ci_res, ci_seg)


def _autocorrelation_time(x: np.ndarray, max_lag: int = 5000) -> float:
    """Integrated autocorrelation time [samples] of a series, 1/2 + sum of its autocorrelation up to the first
    lag where it turns negative (Geyer's initial positive sequence, simplified); 0.5 for white noise."""
    x = np.asarray(x, float) - np.mean(x)
    n = len(x)
    if n < 4 or not np.any(x):
        return 0.5
    size = 1 << int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(x, size)
    acf = np.fft.irfft(f * np.conj(f), size)[:min(n, max_lag)]
    acf /= acf[0]
    neg = np.where(acf[1:] <= 0.0)[0]
    stop = int(neg[0]) + 1 if len(neg) else len(acf)
    return 0.5 + float(np.sum(acf[1:stop]))


def _bounded_lstsq(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """argmin |a x - b| subject to lo <= x <= hi (columns scaled to unit norm for the solver)."""
    from scipy.optimize import lsq_linear
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0.0] = 1.0
    if np.all(np.isinf(lo)) and np.all(np.isinf(hi)):
        x, *_ = np.linalg.lstsq(a / scale, b, rcond=None)
        return x / scale
    res = lsq_linear(a / scale, b, bounds=(lo * scale, hi * scale), method="bvls", tol=1e-12)
    return np.clip(res.x / scale, lo, hi)


def _fit_free(phi, tau, row, names, data, require, bounds=None, groups=None, refuse_wide=True) -> HullFit:
    """The weighted (bounded) least squares of the columns `names` (see fit_hull)."""
    m = len(names)
    n = len(tau) // 3
    if n < 50:
        raise IdentificationError(f"{n} samples: a fit needs at least 50")
    lo, hi = bounds if bounds is not None else (np.full(m, -np.inf), np.full(m, np.inf))
    w = np.ones(len(tau))
    live = np.linalg.norm(phi, axis=0) > 0.0
    dead = [names[i] for i in range(m) if not live[i]]
    if dead:
        raise IdentificationError("the run does not excite " + ", ".join(f"{d} ({MEANING.get(d, d)})" for d in dead))
    for _ in range(2):                                   # ordinary fit, then rows weighted by 1/residual std
        zeta = _bounded_lstsq(phi * w[:, None], tau * w, lo, hi)
        res = tau - phi @ zeta
        sd = [float(np.std(res[row == k])) or 1e-12 for k in range(3)]
        w = 1.0 / np.array(sd)[row]
    a = phi * w[:, None]
    scale = np.linalg.norm(a, axis=0)
    problems: List[str] = []
    cond = float(np.linalg.cond(a / scale))
    dof = len(tau) - m
    s2 = float(np.sum((tau * w - a @ zeta) ** 2) / dof)
    # residuals are correlated in time (the smoothing filter's window, and model error that persists over a
    # manoeuvre): count one independent sample per 2 x their integrated autocorrelation time, and at least one
    # per filter window
    res_w = tau * w - a @ zeta
    k = max(1, int(getattr(data, "correlated_samples", 1)),
            *(int(math.ceil(2.0 * _autocorrelation_time(res_w[row == g]))) for g in range(3)))
    cov = s2 * k * np.linalg.pinv(a.T @ a)
    dof = max(1, len(tau) // k - m)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    half = stats.t.ppf(0.975, dof) * std
    ci_res = np.column_stack([np.maximum(zeta - half, lo), np.minimum(zeta + half, hi)])
    ci, ci_seg = ci_res.copy(), None
    if groups is not None:
        labels = np.unique(groups)
        if len(labels) >= 3:
            drop = np.array([_bounded_lstsq(a[groups != g], tau[groups != g] * w[groups != g], lo, hi)
                             for g in labels])
            g_count = len(labels)
            std_seg = np.sqrt((g_count - 1) / g_count * np.sum((drop - drop.mean(axis=0)) ** 2, axis=0))
            half_seg = stats.t.ppf(0.975, g_count - 1) * std_seg
            ci_seg = np.column_stack([np.maximum(zeta - half_seg, lo), np.minimum(zeta + half_seg, hi)])
            ci = np.column_stack([np.minimum(ci_res[:, 0], ci_seg[:, 0]), np.maximum(ci_res[:, 1], ci_seg[:, 1])])
            wider = half_seg > half
            std = np.where(wider, std_seg, std)
            half = np.maximum(half, half_seg)
    tol = 1e-9 * np.maximum(1.0, np.abs(zeta))
    at_bound = tuple(names[i] for i in range(m) if zeta[i] - lo[i] <= tol[i] or hi[i] - zeta[i] <= tol[i])
    if cond > MAX_CONDITION and refuse_wide:
        problems.append(f"the regressors are nearly dependent (condition number {cond:.3g} > {MAX_CONDITION:g})")
    for i, name in enumerate(names):
        if refuse_wide and name in require and name not in at_bound and not (half[i] < abs(zeta[i])):
            problems.append(f"{name} ({MEANING.get(name, name)}) = {zeta[i]:.4g} +/- {half[i]:.3g}: not excited enough")
    if problems:
        raise IdentificationError("; ".join(problems))
    return HullFit(zeta, std, ci, cond, n, tuple(sd), (), None, at_bound, ci_res, ci_seg)


def hull_keys(fit: HullFit, mass_kg: float, iz_kgm2: float) -> Dict[str, float]:
    """The vessel file's `hull:` values from a fit (Iz kept from the file; N_rdot takes the rest of z3)."""
    z = fit.zeta
    return {"x_udot": mass_kg - z[0], "y_vdot": mass_kg - z[1], "n_rdot": iz_kgm2 - z[2],
            "x_u": -z[3], "x_uu": -z[4], "y_v": -z[5], "y_vv": -z[6], "n_r": -z[7], "n_rr": -z[8]}


def zeta_of_hull(hull) -> np.ndarray:
    """z1..z9 of a vessel file's `hull:` (the inverse of `hull_keys`)."""
    return np.array([hull.mass_kg - hull.x_udot, hull.mass_kg - hull.y_vdot, hull.iz_kgm2 - hull.n_rdot,
                     -hull.x_u, -hull.x_uu, -hull.y_v, -hull.y_vv, -hull.n_r, -hull.n_rr])


def free_run(zeta: np.ndarray, data: RunData, psi0_rad: float = 0.0, substeps: int = 4) -> Dict[str, np.ndarray]:
    """The identified model run open loop on the run's inputs from its first state: u, v, r, x, y, psi (NaN
    from where an unstable model diverges)."""
    z1, z2, z3, z4, z5, z6, z7, z8, z9 = (float(x) for x in zeta)
    u, v, r = float(data.u[0]), float(data.v[0]), float(data.r[0])
    x = y = 0.0
    psi = psi0_rad
    out = {k: np.empty(len(data.t_s)) for k in ("u", "v", "r", "x", "y", "psi")}

    def f(u, v, r, psi, fx, fy, fn):
        return ((fx + z2 * v * r - (z4 + z5 * abs(u)) * u) / z1,
                (fy - z1 * u * r - (z6 + z7 * abs(v)) * v) / z2,
                (fn - (z2 - z1) * u * v - (z8 + z9 * abs(r)) * r) / z3,
                u * math.cos(psi) - v * math.sin(psi), u * math.sin(psi) + v * math.cos(psi), r)

    for k in range(len(data.t_s)):
        if not all(math.isfinite(a) and abs(a) < 1e6 for a in (u, v, r, x, y, psi)):
            for key in out:                       # an unstable model (negative damping) has diverged
                out[key][k:] = np.nan
            break
        out["u"][k], out["v"][k], out["r"][k], out["x"][k], out["y"][k], out["psi"][k] = u, v, r, x, y, psi
        if k + 1 == len(data.t_s):
            break
        h = float(data.t_s[k + 1] - data.t_s[k]) / substeps
        fx, fy, fn = float(data.x_n[k]), float(data.y_n[k]), float(data.n_nm[k])
        for _ in range(substeps):
            s = (u, v, r, x, y, psi)
            k1 = f(u, v, r, psi, fx, fy, fn)
            # the ignores: mypy cannot count a star-unpacked list (3 items each), so it sees too many arguments
            k2 = f(*[a + 0.5 * h * b for a, b in zip(s[:3], k1[:3])],  # type: ignore[call-arg]  # 3 items
                   psi + 0.5 * h * k1[5], fx, fy, fn)
            k3 = f(*[a + 0.5 * h * b for a, b in zip(s[:3], k2[:3])],  # type: ignore[call-arg]  # 3 items
                   psi + 0.5 * h * k2[5], fx, fy, fn)
            k4 = f(*[a + h * b for a, b in zip(s[:3], k3[:3])],  # type: ignore[call-arg]  # 3 items
                   psi + h * k3[5], fx, fy, fn)
            u, v, r, x, y, psi = (a + h / 6.0 * (b1 + 2 * b2 + 2 * b3 + b4)
                                  for a, b1, b2, b3, b4 in zip(s, k1, k2, k3, k4))
    return out


def fit_quality(measured: np.ndarray, model: np.ndarray) -> Dict[str, float]:
    """RMSE, MAE and R^2 = 1 - SS_res / SS_tot of a model signal against the measured one (000 Table 4)."""
    e = np.asarray(measured) - np.asarray(model)
    if not np.all(np.isfinite(e)):
        return {"rmse": float("nan"), "mae": float("nan"), "r2": float("nan")}
    ss_tot = float(np.sum((measured - np.mean(measured)) ** 2))
    return {"rmse": float(np.sqrt(np.mean(e * e))), "mae": float(np.mean(np.abs(e))),
            "r2": 1.0 - float(np.sum(e * e)) / ss_tot if ss_tot > 0 else float("nan")}
