"""The EKF's covariance prediction and Joseph-form update, written for the navigation filter's sizes.

The same arithmetic as filterpy's ExtendedKalmanFilter.predict / .update (which the tests hold these to), without
what a generic filter carries per call: prior and posterior copies, scalar checks, Jacobian callbacks and a
general matrix inverse for the 1x1 and 2x2 innovation covariances of the gyro, heading and GNSS rows.

Shapes: x (n, 1), P (n, n), F (n, n), Q (n, n); a measurement of m rows has z and hx (m, 1), H (m, n),
R (m, m). Nothing is checked: the filter builds every argument itself.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


def predicted_covariance(P: Array, F: Array, Q: Array) -> Array:
    """F P F^T + Q."""
    return (F @ P) @ F.T + Q


def innovation_inverse(S: Array) -> Array:
    """S^-1 of a symmetric innovation covariance: closed forms for 1x1 and 2x2, numpy's inverse above.
    A singular S gives inf/nan entries (the filter's finiteness check then restarts it), never an exception
    for m <= 2."""
    m = S.shape[0]
    if m == 1:
        return np.array([[1.0 / S[0, 0]]])
    if m == 2:
        a, b, c, d = S[0, 0], S[0, 1], S[1, 0], S[1, 1]
        det = a * d - b * c
        return np.array([[d / det, -b / det], [-c / det, a / det]])
    return np.linalg.inv(S)


def joseph_update(x: Array, P: Array, z: Array, hx: Array, H: Array, R: Array,
                  residual: Optional[Callable[[Array, Array], Array]] = None) -> tuple[Array, Array]:
    """(x+, P+) of the Kalman update with the optimal gain and the Joseph-form covariance
    (I - K H) P (I - K H)^T + K R K^T. residual(z, hx) defaults to z - hx (pass one that wraps angles)."""
    PHt = P @ H.T
    K = PHt @ innovation_inverse(H @ PHt + R)
    y = residual(z, hx) if residual is not None else z - hx
    x_new = x + K @ y
    I_KH = np.eye(P.shape[0]) - K @ H
    return x_new, (I_KH @ P) @ I_KH.T + (K @ R) @ K.T
