"""The navigation filter's Jacobians against finite differences of the functions they linearise.

An extended Kalman filter with a wrong Jacobian still runs: it only weighs its measurements wrongly, and a
wrong model-error state or lever-arm term shows up as a worse estimate on some boats, never as an error. Each
analytic Jacobian is compared here with central differences of its own function, on every preset and at
states away from the model's kinks (|u|, |v|, |r| = 0 and the drag-error floor).
"""
from __future__ import annotations

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from estimation.navekf.gnss_rows import antenna_position_rows, antenna_velocity_rows
from estimation.navekf.model import N_STATES, VesselProcessModel

STEP = 1e-6
# north, east, heading, u, v, r, gyro bias, current n/e, drag error, yaw acceleration bias
STATES = [
    [3.0, -2.0, 0.7, 1.1, 0.2, 0.15, 0.01, 0.1, -0.05, 0.3, 0.02],
    [-40.0, 12.0, -2.4, 0.6, -0.3, -0.35, -0.02, -0.2, 0.15, -0.4, -0.05],
    [0.0, 0.0, 3.0, -0.4, 0.05, 0.02, 0.0, 0.0, 0.3, 0.0, 0.0],
]


def _column(x):
    return np.array(x, float).reshape(N_STATES, 1)


def _central_difference(f, x):
    """d f(x) / d x by central differences; f maps a state column to a column."""
    cols = []
    for j in range(N_STATES):
        xp, xm = x.copy(), x.copy()
        xp[j, 0] += STEP
        xm[j, 0] -= STEP
        cols.append((f(xp) - f(xm))[:, 0] / (2.0 * STEP))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("preset", ["foka", "iacquabot", "wamv"])
@pytest.mark.parametrize("known_thrust", [True, False])
@pytest.mark.parametrize("state", STATES)
def test_the_process_jacobian_is_the_derivative_of_the_step(preset, known_thrust, state):
    model = VesselProcessModel(load_vessel(preset))
    dt_s, surge_n, yaw_nm = 0.05, 40.0, -6.0

    def step(x):
        x = x.copy()
        model.propagate(x, dt_s, surge_n, yaw_nm, known_thrust, np.eye(N_STATES))
        return x

    x = _column(state)
    F = np.eye(N_STATES)
    model.propagate(x.copy(), dt_s, surge_n, yaw_nm, known_thrust, F)
    np.testing.assert_allclose(F, _central_difference(step, x), atol=1e-8)


@pytest.mark.parametrize("rows", [antenna_position_rows, antenna_velocity_rows])
@pytest.mark.parametrize("antenna_m", [(0.0, 0.0), (-1.2, 0.3), (0.8, -0.5)])
@pytest.mark.parametrize("dt_s", [0.0, -0.76, 0.2])
@pytest.mark.parametrize("state", STATES)
def test_the_gnss_rows_jacobian_is_the_derivative_of_the_prediction(rows, antenna_m, dt_s, state):
    ax, ay = antenna_m

    def predict(x):
        hx = np.zeros((4, 1))
        rows(x, dt_s, ax, ay, np.zeros((4, N_STATES)), hx, 2)
        return hx[2:]

    x = _column(state)
    H = np.zeros((4, N_STATES))
    rows(x, dt_s, ax, ay, H, np.zeros((4, 1)), 2)
    assert not H[:2].any()                   # only the rows asked for are written
    np.testing.assert_allclose(H[2:], _central_difference(predict, x), atol=1e-7)


def test_a_stern_antenna_in_a_turn_reads_the_turn_in_its_velocity():
    """r = 0.38 rad/s to starboard, heading north, 1.2 m aft: the antenna swings to port at 0.46 m/s."""
    x = _column([0.0, 0.0, 0.0, 1.0, 0.0, 0.38, 0.0, 0.0, 0.0, 0.0, 0.0])
    hx = np.zeros((2, 1))
    antenna_velocity_rows(x, 0.0, -1.2, 0.0, np.zeros((2, N_STATES)), hx)
    assert hx[0, 0] == pytest.approx(1.0)
    assert hx[1, 0] == pytest.approx(-0.456)
