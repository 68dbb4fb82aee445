"""The filter's sized Kalman steps give filterpy's ExtendedKalmanFilter results: the library stays the reference
the hand-written arithmetic is held to, for every measurement size the navigation filter uses (1: gyro,
2: heading + gyro or GNSS position, 4: GNSS position + velocity) and with an angle-wrapping residual."""
from __future__ import annotations

import math

import numpy as np
import pytest
from filterpy.kalman import ExtendedKalmanFilter

from estimation.navekf.kalman_steps import joseph_update, predicted_covariance

N = 11


def _spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _wrap_first(z, hx):
    y = z - hx
    y[0, 0] = (y[0, 0] + math.pi) % (2 * math.pi) - math.pi
    return y


@pytest.mark.parametrize("m", [1, 2, 4])
@pytest.mark.parametrize("wrap", [False, True])
def test_the_update_is_filterpys_update(m, wrap):
    rng = np.random.default_rng(10 * m + wrap)
    for _ in range(20):
        P, x = _spd(rng, N), rng.normal(size=(N, 1))
        H, R = rng.normal(size=(m, N)), _spd(rng, m) * 0.1
        z = rng.normal(size=(m, 1)) + (6.0 if wrap else 0.0)     # a heading 6 rad away wraps
        hx = H @ x
        ref = ExtendedKalmanFilter(dim_x=N, dim_z=m)
        ref.x, ref.P = x.copy(), P.copy()
        ref.update(z, lambda _x: H, lambda _x: hx, R, residual=_wrap_first if wrap else np.subtract)
        x_new, P_new = joseph_update(x, P, z, hx, H, R, _wrap_first if wrap else None)
        np.testing.assert_allclose(x_new, ref.x, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(P_new, ref.P, rtol=1e-10, atol=1e-12)


def test_the_prediction_is_filterpys_prediction():
    rng = np.random.default_rng(3)
    P, F, Q = _spd(rng, N), np.eye(N) + 0.02 * rng.normal(size=(N, N)), np.diag(rng.uniform(0, 1e-3, N))
    ref = ExtendedKalmanFilter(dim_x=N, dim_z=1)
    ref.P, ref.F, ref.Q = P.copy(), F, Q
    ref.predict_x = lambda u=0: None
    ref.predict()
    np.testing.assert_allclose(predicted_covariance(P, F, Q), ref.P, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("m", [1, 2])
def test_a_singular_innovation_gives_non_finite_numbers_not_an_exception(m):
    # the filter's finiteness check restarts it on such numbers; a raise would stop the control loop
    H, R = np.zeros((m, N)), np.zeros((m, m))
    with np.errstate(divide="ignore", invalid="ignore"):
        x_new, P_new = joseph_update(np.zeros((N, 1)), np.eye(N), np.ones((m, 1)), np.zeros((m, 1)), H, R)
    assert not (np.isfinite(x_new).all() and np.isfinite(P_new).all())
