"""Output-error refinement of a hull fit: the model simulated from the applied thrust, compared with what was
measured, so the noise sits only in the outputs and the estimate is consistent.

The model of equation-error least squares (estimation/identification/hull_least_squares.py)

    z1 u_dot = X' + z2 v r - (z4 + z5 |u|) u          X' = X - delta N / (2 arm)
    z2 v_dot = Y  - z1 u r - (z6 + z7 |v|) v
    z3 r_dot = N' - (z2 - z1) u v - (z8 + z9 |r|) r    N' = N - delta arm X / 2
    psi_dot  = r

(forces [N], moment [N m], u, v [m/s], r [rad/s], psi [rad]; delta the thrust imbalance of fit_hull, when
fitted) is integrated (RK4, inputs held over each step) from the logged forces, and a Levenberg-Marquardt on the
sparse Jacobian (_levenberg_marquardt) minimises the weighted error between simulated and measured u, v, r, psi.

Multiple shooting: each open-loop segment is cut into pieces of `piece_s` seconds, each starting from its own
initial state (u0, v0, r0, psi0), free in the fit (started at the measured values). The pieces are independent
(no continuity constraints): each adds four nuisance parameters and nothing else.

Weights: each output channel c is weighted by 1 / (sigma_c sqrt(k_c)), sigma_c its residual standard
deviation and k_c twice its integrated autocorrelation time in samples, both from a first pass.

Intervals: the wider of two 95 % intervals: one from the z-block of (J^T W J)^-1 at the optimum (initial
states included), with Student's t on the independent samples less the parameters (right for white noise);
the other a delete-a-block jackknife (estimation/identification/block_jackknife.py) over blocks of consecutive
pieces of a segment, `block_s` (24 s) long, with Student's t on the blocks less one (errors correlated over
tens of seconds). A required parameter whose interval is wider than its value is refused
(IdentificationError), as in fit_hull. Pure numpy/scipy, no I/O.
Why: docs/design-notes/estimation-and-drivers.md, "Identification fits".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

import numpy as np
from scipy import sparse, stats

from estimation.identification.block_jackknife import block_jackknife_cov
from estimation.identification.hull_least_squares import (
    MEANING,
    NAMES,
    HullFit,
    IdentificationError,
    RunData,
    _autocorrelation_time,
)

CHANNELS = ("u", "v", "r", "psi")
MAX_STEP_S = 0.05          # integration step: the log's, decimated to at most this
MIN_PIECE_S = 2.0          # a shorter remainder is merged into the piece before it (or dropped if alone)
MIN_BLOCKS = 5             # fewer jackknife blocks than this: the white-noise interval alone


@dataclass(frozen=True)
class OutputSegment:
    """One stretch of run flown open loop (inputs not fed back from the measurements), uniformly sampled:
    `data` holds time [s], the measured u, v [m/s], r [rad/s] and the applied X, Y [N] and N [N m];
    psi_rad the measured heading [rad], unwrapped."""
    data: RunData
    psi_rad: np.ndarray


@dataclass
class _Pieces:
    """Pieces padded to one length L (mask False past a piece's end), decimated to step h [s]."""
    h: float
    x: np.ndarray          # (P, L) surge force [N]
    y: np.ndarray          # (P, L) sway force [N]
    n: np.ndarray          # (P, L) yaw moment [N m]
    meas: np.ndarray       # (4, P, L) u, v, r, psi
    mask: np.ndarray       # (P, L) bool
    block: np.ndarray      # (P,) jackknife block of each piece: consecutive pieces of one segment share one


def cut_pieces(segments: Sequence[OutputSegment], piece_s: float, block_s: float = 24.0) -> _Pieces:
    """The segments cut into pieces of about `piece_s` seconds (a remainder shorter than MIN_PIECE_S joins the
    piece before it), decimated so the step is at most MAX_STEP_S (forces averaged over each step); pieces
    grouped into jackknife blocks of about `block_s` seconds within each segment."""
    spans = []
    blocks = []
    dt = None
    per_block = max(1, int(round(block_s / piece_s)))
    for number, seg in enumerate(segments):
        t = np.asarray(seg.data.t_s, float)
        if len(t) < 3:
            continue
        d = float(np.median(np.diff(t)))
        dt = d if dt is None else dt
        stride = max(1, int(math.floor(MAX_STEP_S / d + 1e-9)))
        per = max(2, int(round(piece_s / (d * stride))))
        m = (len(t) // stride)
        if m < 2:
            continue
        cols = {}
        for key in ("u", "v", "r"):
            cols[key] = np.asarray(getattr(seg.data, key), float)[:m * stride:stride]
        cols["psi"] = np.asarray(seg.psi_rad, float)[:m * stride:stride]
        for key, src in (("x", seg.data.x_n), ("y", seg.data.y_n), ("n", seg.data.n_nm)):
            cols[key] = np.asarray(src, float)[:m * stride].reshape(m, stride).mean(axis=1)
        starts = list(range(0, m, per))
        bounds = [(a, min(a + per + 1, m)) for a in starts]     # +1: a piece ends where the next starts
        if len(bounds) > 1 and (bounds[-1][1] - bounds[-1][0]) * d * stride < MIN_PIECE_S:
            last = bounds.pop()
            bounds[-1] = (bounds[-1][0], last[1])
        for i, (a, b) in enumerate(bounds):
            if (b - a - 1) * d * stride >= MIN_PIECE_S:
                spans.append((d * stride, {k: c[a:b] for k, c in cols.items()}))
                blocks.append((number, i // per_block))
    if not spans:
        raise IdentificationError(f"no open-loop stretch of {MIN_PIECE_S:g} s or more to fit the output error on")
    hs = [s[0] for s in spans]
    if max(hs) - min(hs) > 1e-3 * max(hs):
        raise ValueError("segments sampled at different rates")
    length = max(len(s[1]["u"]) for s in spans)
    pad = lambda key: np.array([np.pad(s[1][key], (0, length - len(s[1][key]))) for s in spans])  # noqa: E731
    mask = np.array([np.arange(length) < len(s[1]["u"]) for s in spans])
    block = np.unique(np.array(blocks), axis=0, return_inverse=True)[1].ravel()
    return _Pieces(float(np.mean(hs)), pad("x"), pad("y"), pad("n"),
                   np.stack([pad(c) for c in CHANNELS]), mask, block)


def simulate(zeta: np.ndarray, x0: np.ndarray, x_n: np.ndarray, y_n: np.ndarray, n_nm: np.ndarray, h: float,
             delta: Union[float, np.ndarray] = 0.0, arm_m: float = 1.0) -> np.ndarray:
    """The model (module docstring) run on P pieces at once: x0 (P, 4) initial u, v, r, psi; forces (P, L) held
    over each step of h seconds; zeta (9,) or (9, P) and delta scalar or (P,) (parameters per piece). Returns
    (4, P, L) u, v, r, psi; a diverging piece is clipped, never inf/NaN."""
    z1, z2, z3, z4, z5, z6, z7, z8, z9 = np.asarray(zeta, float)
    delta = np.asarray(delta, float).reshape(-1, 1)
    fx = x_n - 0.5 * delta * n_nm / arm_m
    fn = n_nm - 0.5 * delta * arm_m * x_n
    p, length = x_n.shape
    out = np.empty((4, p, length))
    u, v, r, psi = (x0[:, i].astype(float).copy() for i in range(4))
    iz1, iz2, iz3 = 1.0 / z1, 1.0 / z2, 1.0 / z3

    def f(u, v, r, X, Y, N):
        return ((X + z2 * v * r - (z4 + z5 * np.abs(u)) * u) * iz1,
                (Y - z1 * u * r - (z6 + z7 * np.abs(v)) * v) * iz2,
                (N - (z2 - z1) * u * v - (z8 + z9 * np.abs(r)) * r) * iz3)

    with np.errstate(all="ignore"):
        for k in range(length):
            out[0, :, k], out[1, :, k], out[2, :, k], out[3, :, k] = u, v, r, psi
            if k + 1 == length:
                break
            X, Y, N = fx[:, k], y_n[:, k], fn[:, k]
            a1 = f(u, v, r, X, Y, N)
            a2 = f(u + 0.5 * h * a1[0], v + 0.5 * h * a1[1], r + 0.5 * h * a1[2], X, Y, N)
            a3 = f(u + 0.5 * h * a2[0], v + 0.5 * h * a2[1], r + 0.5 * h * a2[2], X, Y, N)
            a4 = f(u + h * a3[0], v + h * a3[1], r + h * a3[2], X, Y, N)
            psi = psi + h / 6.0 * (r + 2 * (r + 0.5 * h * a1[2]) + 2 * (r + 0.5 * h * a2[2]) + (r + h * a3[2]))
            u = np.clip(u + h / 6.0 * (a1[0] + 2 * a2[0] + 2 * a3[0] + a4[0]), -1e3, 1e3)
            v = np.clip(v + h / 6.0 * (a1[1] + 2 * a2[1] + 2 * a3[1] + a4[1]), -1e3, 1e3)
            r = np.clip(r + h / 6.0 * (a1[2] + 2 * a2[2] + 2 * a3[2] + a4[2]), -1e3, 1e3)
            psi = np.clip(psi, -1e4, 1e4)
    return np.nan_to_num(out, nan=1e3, posinf=1e3, neginf=-1e3)


def fit_hull_oe(segments: Sequence[OutputSegment], start: HullFit, require: Sequence[str] = NAMES,
                imbalance_arm_m: Optional[float] = None, piece_s: float = 8.0,
                max_iter: int = 30, block_s: Optional[float] = 24.0, bounds: Optional[tuple] = None,
                segment_refits: bool = False, refuse_wide: bool = True) -> HullFit:
    """Refine `start` (a fit_hull result on the same runs) by output error over the segments' pieces; the
    parameters `start` holds fixed stay fixed, and the imbalance is refitted when `start` fitted one (needs
    `imbalance_arm_m`, the thrusters' mean |y| [m]). Returns a HullFit whose residual_std is per output
    channel (u [m/s], v [m/s], r [rad/s], psi [rad]) and whose condition is that of the parameters'
    correlation matrix; intervals as the module docstring says (`block_s` the jackknife's block [s]; None:
    no jackknife, the residuals taken for white noise).
    IdentificationError when a required free parameter's interval is wider than its value, or no piece is long
    enough.
    `bounds` (lower (9,), upper (9,) of z1..z9; `start` inside them) constrain the fit: scipy's bounded
    least_squares (trf) in place of the Levenberg-Marquardt; parameters it ends on a bound of are listed in
    `at_bound` (held exactly there), their intervals cut at the bound.
    `segment_refits`: the fit redone leaving each segment out (from this fit, at most max_iter // 6 steps),
    their delete-one jackknife spread an interval that holds when the model cannot reproduce the hull
    (`ci95_segments`; needs 3 segments or more); `ci95` is the wider of that and the residual one.
    `refuse_wide` False: a wide interval is reported, not refused (a parameter the outputs do not depend on
    at all still is)."""
    pcs = cut_pieces(segments, piece_s, block_s or piece_s)
    p_count, length = pcs.mask.shape
    free = [i for i, n in enumerate(NAMES) if n not in start.fixed]
    with_imb = start.imbalance is not None and bool(imbalance_arm_m)
    arm = float(imbalance_arm_m) if with_imb and imbalance_arm_m is not None else 1.0    # with_imb: it is set
    scale = np.abs(start.zeta[free])
    scale[scale == 0.0] = 1.0
    n_glob = len(free) + (1 if with_imb else 0)

    def unpack(q):
        zeta = start.zeta.copy()
        zeta[free] = q[:len(free)] * scale
        delta = float(q[len(free)]) if with_imb else 0.0
        return zeta, delta, q[n_glob:].reshape(p_count, 4)

    def sim(q):
        zeta, delta, x0 = unpack(q)
        return simulate(zeta, x0, pcs.x, pcs.y, pcs.n, pcs.h, delta, arm)

    weights = np.array([1.0 / max(float(np.std(pcs.meas[c][pcs.mask])), 1e-6) for c in range(4)])
    m = pcs.mask.astype(float)

    def residuals(q, w):
        return ((sim(q) - pcs.meas) * m[None] * w[:, None, None]).ravel()

    def jacobian_rows(q, w):
        """The Jacobian's nonzero entries (4, P, L, globals + 4): each row's derivatives by the global
        parameters, then by its own piece's initial state. Forward differences, every perturbation in one
        batched simulation: each global parameter moves for all pieces, and each initial-state component for
        all pieces at once (a piece's state touches only its own rows)."""
        zeta, delta, x0 = unpack(q)
        steps = 1e-6 * np.maximum(1.0, np.abs(q))
        b = 1 + n_glob + 4
        zs = np.repeat(zeta[:, None], b * p_count, axis=1).reshape(9, b, p_count)
        ds = np.full((b, p_count), delta)
        xs = np.repeat(x0[None], b, axis=0)
        for j in range(n_glob):
            if j < len(free):
                zs[free[j], 1 + j] += steps[j] * scale[j]
            else:
                ds[1 + j] += steps[j]
        st = steps[n_glob:].reshape(p_count, 4)
        for j in range(4):
            xs[1 + n_glob + j, :, j] += st[:, j]
        tile = lambda a: np.tile(a, (b, 1))  # noqa: E731
        out = simulate(zs.reshape(9, -1), xs.reshape(-1, 4), tile(pcs.x), tile(pcs.y), tile(pcs.n), pcs.h,
                       ds.ravel(), arm).reshape(4, b, p_count, length)
        diff = (out[:, 1:] - out[:, :1]) * (m[None, None] * w[:, None, None, None])
        data = np.empty((4, p_count, length, n_glob + 4))
        for j in range(n_glob):
            data[..., j] = diff[:, j] / steps[j]
        for j in range(4):
            data[..., n_glob + j] = diff[:, n_glob + j] / st[None, :, j, None]
        return data

    def jacobian(q, w):
        """jacobian_rows as a sparse matrix, columns: globals, then 4 initial states per piece."""
        data = jacobian_rows(q, w)
        width = n_glob + 4
        cols = np.empty(data.shape, dtype=np.int64)
        cols[..., :n_glob] = np.arange(n_glob)
        cols[..., n_glob:] = (n_glob + 4 * np.arange(p_count)[:, None] + np.arange(4))[None, :, None, :]
        rows = 4 * p_count * length
        return sparse.csr_matrix((data.ravel(), cols.ravel(), np.arange(rows + 1) * width),
                                 shape=(rows, n_glob + 4 * p_count))

    q0 = np.concatenate([np.ones(len(free)), [start.imbalance[0]] if with_imb and start.imbalance is not None else [],
                         pcs.meas[:, :, 0].T.ravel()])
    lo_all = np.full(9, -np.inf) if bounds is None else np.asarray(bounds[0], float)
    hi_all = np.full(9, np.inf) if bounds is None else np.asarray(bounds[1], float)
    q_lo = np.concatenate([lo_all[free] / scale, np.full(len(q0) - len(free), -np.inf)])
    q_hi = np.concatenate([hi_all[free] / scale, np.full(len(q0) - len(free), np.inf)])
    if bounds is not None and not np.all((q_lo <= q0) & (q0 <= q_hi)):
        raise ValueError("start: a parameter is outside the bounds")
    active = np.zeros(len(free), dtype=bool)
    for _ in range(2):      # pass 1: channels normalised by their spread; pass 2: by residual noise and correlation
        used = weights
        if bounds is None:
            q0 = _levenberg_marquardt(lambda q: residuals(q, used), lambda q: jacobian(q, used), q0, max_iter)
        else:
            q0, active = _bounded_trf(lambda q: residuals(q, used), lambda q: jacobian(q, used), q0, q_lo, q_hi,
                                      max_iter)
            active = active[:len(free)]
        e = sim(q0) - pcs.meas
        sd = np.array([max(float(np.std(e[c][pcs.mask])), 1e-9) for c in range(4)])
        k_corr = np.array([max(1.0, math.ceil(2.0 * _autocorrelation_time(e[c][pcs.mask]))) for c in range(4)])
        weights = 1.0 / (sd * np.sqrt(k_corr))
    zeta, delta, _ = unpack(q0)
    at_bound = tuple(NAMES[i] for k, i in enumerate(free) if active[k])
    # the Jacobian at the optimum, re-weighted from the weights it was taken with to the final ones
    jac = jacobian(q0, weights)
    info = (jac.T @ jac).toarray()
    norm = np.sqrt(np.maximum(np.diag(info), 0.0))
    dead = norm[:n_glob] <= 1e-9 * max(float(np.max(norm[:n_glob])), 1e-300)   # outputs do not depend on it
    norm[norm == 0.0] = 1.0
    cov_q = (np.linalg.pinv(info / np.outer(norm, norm)) / np.outer(norm, norm))[:n_glob, :n_glob]
    sc = np.concatenate([scale, [1.0] if with_imb else []])
    cov = cov_q * np.outer(sc, sc)
    std_g = np.where(dead, np.inf, np.sqrt(np.maximum(np.diag(cov), 0.0)))
    independent = int(sum(pcs.mask.sum() / k for k in k_corr))
    dof = max(1, independent - n_glob - 4 * p_count)
    half = stats.t.ppf(0.975, dof) * std_g
    blocks = len(np.unique(pcs.block))
    if block_s and blocks >= MIN_BLOCKS:
        # with the weights the optimum was found with: only there do the blocks' scores sum to zero
        piece_info, piece_score = _profiled_pieces(jacobian_rows(q0, used),
                                                   residuals(q0, used).reshape(4, p_count, length), n_glob)
        cov_jk = block_jackknife_cov(piece_info, piece_score, pcs.block) * np.outer(sc, sc)
        std_jk = np.sqrt(np.maximum(np.diag(cov_jk), 0.0))
        wider = stats.t.ppf(0.975, blocks - 1) * std_jk > half
        half = np.where(wider, stats.t.ppf(0.975, blocks - 1) * std_jk, half)
        std_g = np.where(wider, std_jk, std_g)
    live = ~dead
    d = np.sqrt(np.maximum(np.diag(cov)[live], 1e-300))
    corr = cov[np.ix_(live, live)] / np.outer(d, d)
    cond = float(math.sqrt(max(np.linalg.cond(corr), 1.0))) if live.any() else math.inf

    half_res = half.copy()
    seg_half = None
    if segment_refits and len(segments) >= 3:
        here = HullFit(zeta, np.zeros(9), np.column_stack([zeta, zeta]), 0.0, 0, (), start.fixed,
                       None if not with_imb else (float(delta), 0.0, float(delta), float(delta)))
        drop = []
        for j in range(len(segments)):
            rest = [seg for k, seg in enumerate(segments) if k != j]
            try:
                f = fit_hull_oe(rest, here, require=(), imbalance_arm_m=imbalance_arm_m, piece_s=piece_s,
                                max_iter=max(3, max_iter // 6), block_s=None, bounds=bounds, refuse_wide=False)
            except IdentificationError:
                continue            # too little left without this segment: it does not count
            drop.append(np.r_[f.zeta[free], [f.imbalance[0]] if with_imb and f.imbalance is not None else []])
        if len(drop) >= 3:
            d_arr = np.array(drop)
            g_count = len(drop)
            std_seg = np.sqrt((g_count - 1) / g_count * np.sum((d_arr - d_arr.mean(axis=0)) ** 2, axis=0))
            seg_half = stats.t.ppf(0.975, g_count - 1) * std_seg
            std_g = np.where(seg_half > half, std_seg, std_g)
            half = np.maximum(half, seg_half)
    std, ci = np.zeros(9), np.column_stack([start.zeta, start.zeta]).astype(float)
    ci_res = ci.copy()
    ci_seg = None if seg_half is None else ci.copy()
    for k, i in enumerate(free):
        if NAMES[i] in at_bound:
            zeta[i] = lo_all[i] if abs(zeta[i] - lo_all[i]) <= abs(zeta[i] - hi_all[i]) else hi_all[i]
    problems: List[str] = []
    unexcited = [NAMES[i] for k, i in enumerate(free) if dead[k] and NAMES[i] in require]
    if unexcited:
        problems.append("the run does not excite " + ", ".join(f"{n} ({MEANING[n]})" for n in unexcited))
    for k, i in enumerate(free):
        if dead[k]:
            continue
        std[i] = std_g[k]
        cut = lambda h: (max(zeta[i] - h, lo_all[i]), min(zeta[i] + h, hi_all[i]))  # noqa: E731
        ci[i], ci_res[i] = cut(half[k]), cut(half_res[k])
        if ci_seg is not None and seg_half is not None:
            ci_seg[i] = cut(seg_half[k])
        if not refuse_wide or NAMES[i] in at_bound:
            continue
        if NAMES[i] in require and not math.isfinite(half[k]):
            problems.append(f"{NAMES[i]} ({MEANING[NAMES[i]]}) = {zeta[i]:.4g}: rests on one stretch of the run "
                            f"(leaving it out leaves {NAMES[i]} undetermined): not excited enough")
        elif NAMES[i] in require and not half[k] < abs(zeta[i]):
            problems.append(f"{NAMES[i]} ({MEANING[NAMES[i]]}) = {zeta[i]:.4g} +/- {half[k]:.3g}: not excited "
                            f"enough")
    if problems:
        raise IdentificationError("output error: " + "; ".join(problems))
    imb = None
    if with_imb:
        h = half[-1]
        imb = (float(delta), float(std_g[-1]), float(delta - h), float(delta + h))
    return HullFit(zeta, std, ci, cond, int(pcs.mask.sum()), tuple(float(s) for s in sd), start.fixed, imb,
                   at_bound, ci_res, ci_seg)


def _bounded_trf(fun, jac, q0: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_iter: int):
    """Minimise |fun(q)|^2 subject to lo <= q <= hi by scipy's trust-region reflective least_squares (the
    Jacobian made dense: a few hundred columns, where the iterative sparse solver took 20x longer). At most
    max_iter Jacobians. Returns (q, active): active True where q ended on a bound (held exactly there)."""
    from scipy.optimize import least_squares
    res = least_squares(fun, q0, jac=lambda q: jac(q).toarray(), bounds=(lo, hi), method="trf",
                        tr_solver="exact", x_scale="jac", max_nfev=max_iter, ftol=1e-9, xtol=1e-10, gtol=1e-10)
    q = res.x.copy()
    active = res.active_mask != 0
    q[res.active_mask < 0] = lo[res.active_mask < 0]
    q[res.active_mask > 0] = hi[res.active_mask > 0]
    return q, active



def _profiled_pieces(rows: np.ndarray, residual: np.ndarray, n_glob: int):
    """Each piece's information and score for the global parameters with its own initial state profiled
    out: rows (4, P, L, n_glob + 4) the Jacobian's entries (jacobian_rows), residual (4, P, L). Returns
    (P, n_glob, n_glob) and (P, n_glob)."""
    p_count = rows.shape[1]
    info = np.empty((p_count, n_glob, n_glob))
    score = np.empty((p_count, n_glob))
    for p in range(p_count):
        j = rows[:, p].reshape(-1, rows.shape[-1])
        jg, js, r = j[:, :n_glob], j[:, n_glob:], residual[:, p].ravel()
        proj = np.linalg.pinv(js.T @ js) @ js.T           # the initial state's least-squares fit to a row set
        info[p] = jg.T @ jg - (jg.T @ js) @ (proj @ jg)
        score[p] = jg.T @ r - (jg.T @ js) @ (proj @ r)
    return info, score


def _levenberg_marquardt(fun, jac, q0: np.ndarray, max_iter: int) -> np.ndarray:
    """Minimise |fun(q)|^2 from q0 by Levenberg-Marquardt on the normal equations of a sparse Jacobian (the
    multiple-shooting Jacobian is mostly zeros). Stops when an accepted step lowers the cost by less than 1e-9
    of it, or after max_iter Jacobians."""
    q = np.asarray(q0, float).copy()
    r = fun(q)
    cost = float(np.sum(r * r))
    lam = 1e-3
    for _ in range(max_iter):
        j = jac(q)
        a = (j.T @ j).toarray()
        g = j.T @ r
        d = np.diag(a).copy()
        d[d <= 0.0] = 1.0
        while lam < 1e12:
            try:
                step = np.linalg.solve(a + lam * np.diag(d), -g)
            except np.linalg.LinAlgError:
                lam *= 10.0
                continue
            r_new = fun(q + step)
            new = float(np.sum(r_new * r_new))
            if new < cost:
                break
            lam *= 4.0
        else:
            return q                     # no step lowers the cost: at the minimum to working precision
        q, r, gain, cost = q + step, r_new, cost - new, new
        lam = max(lam / 3.0, 1e-12)
        if gain <= 1e-9 * cost:
            break
    return q
