"""Heading for identification: the gyro integrated, held to a logged heading only at low frequency.

Kinematic only (no hull model):

    state x = [psi, b_g]             (rad, rad/s)
    d(psi)/dt = gyro - b_g           (the gyro's rate over each step taken as the mean of its two ends)
    d(b_g)/dt = white noise          (the gyro's slowly wandering bias)
    psi_logged = psi + e,  e coloured with std heading_std_rad and correlation time heading_tau_s

The coloured error e is replaced by white noise with the same low-frequency power (variance
heading_std^2 * 2 tau / dt per sample), so the logged heading sets the heading's mean and the gyro its shape.
A Kalman forward pass and a Rauch-Tung-Striebel backward pass over the whole run give the smoothed heading.
A gyro scale-factor error is not a state: over a turn it is left to the logged heading, whose low
frequencies the smoother follows.
Why: docs/design-notes/estimation-and-drivers.md, "Heading and magnetometer".
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np


def smooth_heading(t_s: np.ndarray, gyro_z_rps: np.ndarray, heading_rad: np.ndarray,
                   gyro_noise_rps: Optional[float] = None, heading_std_rad: float = np.radians(2.0),
                   heading_tau_s: float = 30.0, bias_walk_rps_per_sqrt_s: float = 1e-5) -> np.ndarray:
    """Smoothed heading [rad, clockwise from north, unwrapped] at t_s (increasing, seconds) from the gyro's
    body z rate [rad/s, clockwise positive seen from above] and a logged heading [rad] per sample (NaN where
    none: gyro only there). gyro_noise_rps is the gyro's white noise per sample; None estimates it from the
    spread of the gyro's sample-to-sample differences. Raises ValueError for non-increasing time or a run
    without any heading."""
    t = np.asarray(t_s, float)
    n = len(t)
    if n < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("time must have at least 2 samples, strictly increasing")
    g = np.asarray(gyro_z_rps, float)
    g = np.where(np.isfinite(g), g, 0.0)
    h = np.asarray(heading_rad, float)
    has_h = np.isfinite(h)
    if not has_h.any():
        raise ValueError("no heading in the run")
    if gyro_noise_rps is None:
        gyro_noise_rps = robust_white_noise(g)
    dt_med = float(np.median(np.diff(t)))
    r_h = heading_std_rad ** 2 * 2.0 * heading_tau_s / dt_med
    first = int(np.argmax(has_h))
    # the 2x2 algebra written out on Python floats: numpy's per-call cost made this 10x slower on 50 Hz logs
    tl, gl, hl, hok = t.tolist(), g.tolist(), h.tolist(), has_h.tolist()
    p, b = hl[first], 0.0                               # heading, gyro bias
    p00, p01, p11 = heading_std_rad ** 2, 0.0, 0.01 ** 2
    q_b = bias_walk_rps_per_sqrt_s ** 2
    xf, xp = [(0.0, 0.0)] * n, [(0.0, 0.0)] * n
    pf, pp, dts = [(0.0, 0.0, 0.0)] * n, [(0.0, 0.0, 0.0)] * n, [0.0] * n
    for k in range(n):
        if k > 0:                                       # x = F x + dt gyro, F = [[1, -dt], [0, 1]]
            dt = tl[k] - tl[k - 1]
            dts[k] = dt
            p += dt * (0.5 * (gl[k - 1] + gl[k]) - b)
            p00, p01, p11 = (p00 - 2.0 * dt * p01 + dt * dt * p11 + (gyro_noise_rps * dt) ** 2,
                             p01 - dt * p11, p11 + q_b * dt)
        xp[k], pp[k] = (p, b), (p00, p01, p11)
        if hok[k]:
            innov = _wrap(hl[k] - p)
            k0, k1 = p00 / (p00 + r_h), p01 / (p00 + r_h)
            p, b = p + k0 * innov, b + k1 * innov
            p00, p01, p11 = p00 - k0 * p00, p01 - k0 * p01, p11 - k1 * p01
        xf[k], pf[k] = (p, b), (p00, p01, p11)

    out = np.empty(n)
    sp, sb = xf[-1]
    out[-1] = sp
    for k in range(n - 2, -1, -1):                      # Rauch-Tung-Striebel: C = Pf F' inv(Pp), states only
        f00, f01, f11 = pf[k]
        a00, a01, a11 = pp[k + 1]
        dt = dts[k + 1]
        m00, m01, m10, m11 = f00 - dt * f01, f01, f01 - dt * f11, f11      # Pf F'
        det = a00 * a11 - a01 * a01
        c00, c01 = (m00 * a11 - m01 * a01) / det, (m01 * a00 - m00 * a01) / det
        c10, c11 = (m10 * a11 - m11 * a01) / det, (m11 * a00 - m10 * a01) / det
        dp, db = sp - xp[k + 1][0], sb - xp[k + 1][1]
        sp, sb = xf[k][0] + c00 * dp + c01 * db, xf[k][1] + c10 * dp + c11 * db
        out[k] = sp
    return out


def robust_white_noise(a: np.ndarray) -> float:
    """Per-sample std of the white noise on a sampled signal [its units], from the median absolute deviation of
    its sample-to-sample differences (a signal that changes little between samples; its steps are outliers)."""
    d = np.diff(np.asarray(a, float))
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi
