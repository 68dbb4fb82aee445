"""How well a hull model predicts held-out data over short horizons, and how much that changes when one
parameter moves across its interval: the test of whether a fit pins a parameter that matters.

The prediction error of z1..z9 on pieces (hull_output_error.cut_pieces: each flown from its own measured first
u, v, r, psi by hull_output_error.simulate) is the mean over u, v, r, psi of the RMS error over the channel's
standard deviation in the data (1 - R^2 under a square root: 0 a perfect model, 1 no better than the mean).
A parameter's sensitivity is the larger relative rise of that error with the parameter at either end of its
interval, the others kept. Pure numpy, no I/O.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional

import numpy as np

from estimation.identification.hull_least_squares import NAMES
from estimation.identification.hull_output_error import simulate


def prediction_error(zeta: np.ndarray, pieces, delta: float = 0.0, arm_m: float = 1.0) -> float:
    """Mean normalised RMS error [-] (>= 0; inf when the model diverges) of u, v, r, psi of the model z1..z9
    (thrust imbalance `delta` over thruster arm `arm_m` [m]) flown on `pieces` (a cut_pieces result)."""
    sim = simulate(np.asarray(zeta, float), pieces.meas[:, :, 0].T, pieces.x, pieces.y, pieces.n, pieces.h,
                   delta, arm_m)
    m = pieces.mask
    out = []
    for c in range(4):
        meas = pieces.meas[c][m]
        err = sim[c][m] - meas
        spread = max(float(np.std(meas)), 1e-9)
        if np.any(np.abs(sim[c][m]) >= 999.0):         # simulate clips a diverged piece at 1e3
            return float("inf")
        out.append(float(np.sqrt(np.mean(err * err))) / spread)
    return float(np.mean(out))


def sensitivities(zeta: np.ndarray, ci95: np.ndarray, names: Iterable[str], pieces, delta: float = 0.0,
                  arm_m: float = 1.0, bounds: Optional[tuple] = None) -> Dict[str, float]:
    """Per parameter of `names`: the relative rise [-] (>= 0, inf if the model diverges) of prediction_error
    with that parameter at the lower or upper end of its interval `ci95` (9, 2) (kept inside `bounds`, and
    away from 0 for the three inertias, which divide), whichever is larger."""
    zeta = np.asarray(zeta, float)
    base = prediction_error(zeta, pieces, delta, arm_m)
    lo = np.full(9, -np.inf) if bounds is None else np.asarray(bounds[0], float)
    hi = np.full(9, np.inf) if bounds is None else np.asarray(bounds[1], float)
    out = {}
    for name in names:
        i = NAMES.index(name)
        rises = []
        for end in ci95[i]:
            z = zeta.copy()
            z[i] = float(np.clip(end, lo[i], hi[i]))
            if i < 3 and z[i] <= 0.0:
                z[i] = 1e-3 * abs(zeta[i])
            e = prediction_error(z, pieces, delta, arm_m)
            rises.append(float("inf") if not np.isfinite(e) else (e - base) / max(base, 1e-12))
        out[name] = max(0.0, max(rises))
    return out
