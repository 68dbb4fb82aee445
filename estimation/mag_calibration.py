"""Magnetometer calibration: hard-iron offset and soft-iron matrix, applied as W (m - b).

Distortion model (what the sensor reads): m_raw = S m_true + h, with S the soft-iron matrix and h the
hard-iron offset [T]. Correction: m_corr = W (m_raw - b), with b = h and W ~ S^-1 (symmetric; any rotation
part of S is not observable from field magnitudes alone and is assumed absent).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class MagCalibration:
    """A magnetometer correction: m_corr = matrix @ (m_raw - offset_t). Units: tesla, matrix dimensionless."""

    offset_t: tuple = (0.0, 0.0, 0.0)
    matrix: tuple = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    method: str = "3d"                     # "2d" (level turns: x-y only) or "3d"
    figures: dict = field(default_factory=dict)

    def __post_init__(self):
        b = np.asarray(self.offset_t, dtype=float)
        w = np.asarray(self.matrix, dtype=float)
        if b.shape != (3,) or not np.all(np.isfinite(b)):
            raise ValueError(f"offset_t must be 3 finite numbers, got {self.offset_t!r}")
        if w.shape != (3, 3) or not np.all(np.isfinite(w)):
            raise ValueError(f"matrix must be 3x3 finite numbers, got {self.matrix!r}")
        if self.method not in ("2d", "3d"):
            raise ValueError(f"method must be '2d' or '3d', got {self.method!r}")
        object.__setattr__(self, "_b", b)
        object.__setattr__(self, "_w", w)
        object.__setattr__(self, "_wl", w.tolist())
        object.__setattr__(self, "_bl", b.tolist())

    def apply(self, field_t):
        """Corrected field [T] of one (3,) reading, or of an (n, 3) array of readings."""
        m = np.asarray(field_t, dtype=float)
        if m.ndim == 1:
            return self._w @ (m - self._b)
        return (m - self._b) @ self._w.T

    def apply_xyz(self, mx: float, my: float, mz: float) -> tuple[float, float, float]:
        """Scalar fast path for one reading [T]; returns plain floats."""
        (w0, w1, w2), b = self._wl, self._bl
        dx, dy, dz = mx - b[0], my - b[1], mz - b[2]
        return (w0[0] * dx + w0[1] * dy + w0[2] * dz,
                w1[0] * dx + w1[1] * dy + w1[2] * dz,
                w2[0] * dx + w2[1] * dy + w2[2] * dz)
