"""Delete-a-block jackknife (estimation/identification/block_jackknife.py): exact for linear least squares, infinite
for a
parameter that only one block informs, and right about errors shared within a block where the textbook
covariance is not."""
from __future__ import annotations

import numpy as np
import pytest

from estimation.identification.block_jackknife import block_jackknife_cov


def _blocks(x, r, labels):
    info = np.array([np.outer(row, row) for row in x])
    score = x * r[:, None]
    return info, score, labels


def test_for_linear_least_squares_it_equals_refitting_without_each_block():
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(60), rng.normal(size=60), rng.normal(size=60)])
    y = x @ [1.0, 2.0, -0.5] + rng.normal(size=60)
    labels = np.repeat(np.arange(10), 6)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    cov = block_jackknife_cov(*_blocks(x, y - x @ beta, labels))
    leave_out = np.array([np.linalg.lstsq(x[labels != b], y[labels != b], rcond=None)[0] for b in range(10)])
    spread = leave_out - leave_out.mean(axis=0)
    assert np.allclose(cov, 9 / 10 * spread.T @ spread, rtol=1e-9, atol=1e-12)


def test_a_parameter_only_one_block_informs_has_no_finite_variance():
    rng = np.random.default_rng(4)
    x = np.column_stack([np.ones(40), np.zeros(40)])
    x[:4, 1] = 1.0                               # the second parameter seen only in block 0
    y = x @ [1.0, 3.0] + rng.normal(size=40)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    cov = block_jackknife_cov(*_blocks(x, y - x @ beta, np.repeat(np.arange(10), 4)))
    assert np.isinf(cov[1, 1]) and np.isfinite(cov[0, 0])


def test_errors_shared_within_blocks_widen_it_to_the_estimates_real_spread():
    """Each block of 20 samples shares an offset: the textbook interval of a mean is sqrt(20) times too
    narrow; the jackknife's holds the truth as often as it claims."""
    rng = np.random.default_rng(5)
    x = np.ones((200, 1))
    labels = np.repeat(np.arange(10), 20)
    jack, textbook = 0, 0
    for _ in range(400):
        y = np.repeat(rng.normal(size=10), 20) + 0.1 * rng.normal(size=200)
        mean = float(y.mean())
        cov = block_jackknife_cov(*_blocks(x, y - mean, labels))
        jack += abs(mean) <= 2.262 * np.sqrt(cov[0, 0])                   # t, 9 degrees of freedom
        textbook += abs(mean) <= 1.96 * np.std(y) / np.sqrt(200)
    assert 0.92 <= jack / 400 <= 0.98, jack
    assert textbook / 400 < 0.5, textbook


def test_one_block_is_not_enough():
    with pytest.raises(ValueError, match="two blocks"):
        block_jackknife_cov(np.ones((3, 1, 1)), np.zeros((3, 1)), np.zeros(3))
