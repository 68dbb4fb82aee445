"""Station-keeping figures from a true track about the point the boat should hold (numpy; no simulator here).

`station_keeping(dn_m, de_m, radius_m, heading_err_rad=None)` over the samples of the holding period:
- within_radius_frac, within_2m_frac: share of samples within the loiter radius, and within 2 m;
- p95_m, max_m, mean_m: of the distance from the point;
- vrx_score: VRX's station-keeping score, the mean of d + 0.75^d * |dpsi| per sample (d in m, dpsi in rad).
  Our LOITER keeps no goal heading (it points into the drift), so dpsi is the heading error against LOITER's
  own commanded heading when given, else 0 and the score is the mean distance.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np


def station_keeping(dn_m, de_m, radius_m: float, heading_err_rad: Optional[np.ndarray] = None) -> dict:
    d = np.hypot(np.asarray(dn_m, float), np.asarray(de_m, float))
    if d.size == 0:
        nan = math.nan
        return {"within_radius_frac": nan, "within_2m_frac": nan, "p95_m": nan, "max_m": nan, "mean_m": nan,
                "vrx_score": nan}
    dpsi = np.zeros_like(d) if heading_err_rad is None else np.abs(np.asarray(heading_err_rad, float))
    return {"within_radius_frac": float(np.mean(d <= radius_m)), "within_2m_frac": float(np.mean(d <= 2.0)),
            "p95_m": float(np.percentile(d, 95)), "max_m": float(d.max()), "mean_m": float(d.mean()),
            "vrx_score": float(np.mean(d + 0.75 ** d * dpsi))}
