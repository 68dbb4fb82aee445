"""Delete-a-block jackknife covariance of a least-squares estimate whose errors are correlated in time.

A least-squares fit's textbook covariance (J^T J)^-1 sigma^2 assumes independent residuals. Velocities smoothed
from 1 Hz GNSS are not: their error wanders over tens of seconds, so a stretch of run at one speed shares one
error, and the textbook interval is too narrow. Cutting the run into blocks longer than that wander and asking how much
the estimate moves when each block is left out measures the spread the data actually give.

With the information A_b and the score s_b = J_b^T r_b of each block b at the optimum (their sums A and 0), the
estimate without block b is, to first order, theta - (A - A_b)^-1 s_b (one Gauss-Newton step), and

    Cov = (G - 1) / G * sum_b (d_b - mean d)(d_b - mean d)^T,   d_b = (A - A_b)^-1 s_b,

over the G blocks (Efron & Stein; the one-step form avoids G refits). A parameter that only one block informs
makes A - A_b singular: its variance is infinite, which is the truth about such a fit. Pure numpy.
Why: docs/design-notes/estimation-and-drivers.md, "Identification fits".
"""
from __future__ import annotations

import numpy as np


def block_jackknife_cov(info: np.ndarray, score: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Covariance (n, n) from per-unit information info (U, n, n) and score score (U, n) (residual-weighted
    Jacobian sums, nuisance parameters of each unit profiled out), grouped into blocks by the labels `block`
    (U,). Infinite on the diagonal of a parameter that leaving one block out makes unidentifiable. Needs at
    least two blocks (ValueError)."""
    info = np.asarray(info, float)
    score = np.asarray(score, float)
    labels = np.unique(np.asarray(block))
    g = len(labels)
    if g < 2:
        raise ValueError("a jackknife needs at least two blocks")
    total = info.sum(axis=0)
    n = total.shape[0]
    d = np.empty((g, n))
    unidentified = np.zeros(n, dtype=bool)
    scale = np.sqrt(np.maximum(np.diag(total), 1e-300))      # solve in units of each parameter's information
    for k, lab in enumerate(labels):
        sel = np.asarray(block) == lab
        rest = total - info[sel].sum(axis=0)
        s = score[sel].sum(axis=0)
        reduced = rest / np.outer(scale, scale)
        w, v = np.linalg.eigh(reduced)
        weak = w <= 1e-8 * max(float(w.max()), 1e-300)
        if weak.any():
            unidentified |= np.any(np.abs(v[:, weak]) > 1e-3, axis=1)
        inv = (v[:, ~weak] / w[~weak]) @ v[:, ~weak].T
        d[k] = (inv @ (s / scale)) / scale
    d -= d.mean(axis=0)
    cov = (g - 1) / g * d.T @ d
    cov[unidentified, :] = np.inf
    cov[:, unidentified] = np.inf
    return cov
