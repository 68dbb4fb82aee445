"""How hard a run worked its thrusters, from the commanded thrust per control cycle (numpy; no simulator here).

`thruster_usage(thrust_n, dt_s, max_forward_n, max_reverse_n)` over cycles x thrusters:
- reversals_per_min: direction changes per minute of run, summed over thrusters. A reversal is a thruster's
  command crossing from at least +5 % of its full forward thrust to at least 5 % of its full reverse (or back):
  the hysteresis keeps a command resting near 0 N from counting, and every counted one is a real spin-down and
  spin-up of a propeller (ESC wear, a thump in the hull, wasted energy).
- saturated_frac: share of cycles in which any thruster is at its limit (within 1 % of full forward or
  reverse): control authority used up, so the controller is no longer doing what its gains say.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

REVERSAL_BAND = 0.05        # of full thrust, each way
SATURATION_BAND = 0.01      # of full thrust, below the limit


def thruster_usage(thrust_n, dt_s: float, max_forward_n: Sequence[float], max_reverse_n: Sequence[float]) -> dict:
    """Reversals per minute and saturated share of `thrust_n` [N] (cycles x thrusters) sampled every `dt_s`."""
    f = np.asarray(thrust_n, float)
    if f.ndim != 2 or f.shape[0] == 0 or dt_s <= 0:
        return {"reversals_per_min": math.nan, "saturated_frac": math.nan}
    fwd = np.asarray(max_forward_n, float)
    rev = np.asarray(max_reverse_n, float)
    reversals = 0
    for j in range(f.shape[1]):
        side = np.zeros(f.shape[0], int)
        side[(f[:, j] > 0) & (f[:, j] >= REVERSAL_BAND * fwd[j])] = 1
        side[(f[:, j] < 0) & (f[:, j] <= -REVERSAL_BAND * rev[j])] = -1
        held = side[side != 0]                    # the sides visited, in order, ignoring the band between
        reversals += int(np.count_nonzero(held[1:] != held[:-1]))
    at_limit = ((fwd > 0) & (f >= (1.0 - SATURATION_BAND) * fwd)) | ((rev > 0) & (f <= -(1.0 - SATURATION_BAND) * rev))
    minutes = f.shape[0] * dt_s / 60.0
    return {"reversals_per_min": reversals / minutes, "saturated_frac": float(np.mean(at_limit.any(axis=1)))}
