"""Body velocities for identification from what the boat measures, without its hull model.

The autopilot's EKF predicts with the vessel file's hull model, so its u and v lean toward that model exactly
where an identification must not: fitting them returns the file, not the boat (measured in
benchmarks/bench_identification.py). This smoother uses kinematics only:

    state x = [north, east, v_north, v_east, b_x, b_y]   (m, m/s, m/s^2)
    d(north, east)/dt   = (v_north, v_east)
    d(v_north, v_east)/dt = R(psi) (a_meas - b),   R(psi) = [[cos psi, -sin psi], [sin psi, cos psi]]
    d(b_x, b_y)/dt       = white noise (the accelerometer's slowly wandering bias, body frame)

a_meas is the accelerometer's horizontal specific force in body FRD (on a level hull it is the inertial
acceleration, (u_dot - r v, v_dot + r u)) and psi the logged heading. GNSS fixes correct position and, when
the receiver gives speed and course, velocity. A forward Kalman pass (filterpy) and a Rauch-Tung-Striebel
backward pass over the whole run give the smoothed track; u and v are its velocity rotated into the body
frame. They are over the ground: in a current they include it (identify in still water, or subtract a known
current). Roll and pitch are ignored (a level boat in calm water: the identification conditions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from filterpy.kalman import predict, update


@dataclass(frozen=True)
class SmoothedTrack:
    north_m: np.ndarray
    east_m: np.ndarray
    u_mps: np.ndarray             # body forward velocity over ground [m/s]
    v_mps: np.ndarray             # body starboard velocity over ground [m/s]
    bias_mps2: np.ndarray         # (N, 2) accelerometer bias, body x and y [m/s^2]
    vel_std_mps: np.ndarray       # 1-sigma of the smoothed velocity (larger axis) [m/s]


def smooth_track(t_s: np.ndarray, heading_rad: np.ndarray, accel_x_mps2: np.ndarray, accel_y_mps2: np.ndarray,
                 fix_north_m: np.ndarray, fix_east_m: np.ndarray, fix_speed_mps: Optional[np.ndarray] = None,
                 fix_course_rad: Optional[np.ndarray] = None, pos_std_m: float = 1.5, vel_std_mps: float = 0.1,
                 accel_noise_mps2: float = 0.05, bias_walk_mps2_per_sqrt_s: float = 0.002) -> SmoothedTrack:
    """Smooth a run sampled at t_s (increasing, seconds). Per sample: heading [rad, clockwise from north], the
    accelerometer's body x/y specific force [m/s^2], and a GNSS fix (north/east [m] in the run's local frame,
    speed [m/s] and course [rad]) or NaN where no fix arrived. Missing accelerometer samples (NaN) are held
    from the previous one. Raises ValueError for fewer than 2 fixes or non-increasing time."""
    t = np.asarray(t_s, float)
    n = len(t)
    if n < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("time must have at least 2 samples, strictly increasing")
    fn, fe = np.asarray(fix_north_m, float), np.asarray(fix_east_m, float)
    has_fix = np.isfinite(fn) & np.isfinite(fe)
    if has_fix.sum() < 2:
        raise ValueError("fewer than 2 GNSS fixes in the run")
    psi = _hold(np.asarray(heading_rad, float))
    ax, ay = _hold(np.asarray(accel_x_mps2, float)), _hold(np.asarray(accel_y_mps2, float))
    sog = np.full(n, np.nan) if fix_speed_mps is None else np.asarray(fix_speed_mps, float)
    cog = np.full(n, np.nan) if fix_course_rad is None else np.asarray(fix_course_rad, float)

    first = int(np.argmax(has_fix))
    x = np.array([fn[first], fe[first], 0.0, 0.0, 0.0, 0.0])
    P = np.diag([pos_std_m ** 2, pos_std_m ** 2, 1.0, 1.0, 0.1 ** 2, 0.1 ** 2])
    H_pos = np.hstack([np.eye(2), np.zeros((2, 4))])
    H_all = np.hstack([np.eye(4), np.zeros((4, 2))])
    R_pos = np.eye(2) * pos_std_m ** 2
    R_all = np.diag([pos_std_m ** 2, pos_std_m ** 2, vel_std_mps ** 2, vel_std_mps ** 2])

    xs_f = np.zeros((n, 6))
    Ps_f = np.zeros((n, 6, 6))
    xs_p = np.zeros((n, 6))
    Ps_p = np.zeros((n, 6, 6))
    Fs = np.zeros((n, 6, 6))
    for k in range(n):
        dt = t[k] - t[k - 1] if k > 0 else 0.0
        c, s = np.cos(psi[k]), np.sin(psi[k])
        rot = np.array([[c, -s], [s, c]])
        F = np.eye(6)
        F[0:2, 2:4] = np.eye(2) * dt
        F[0:2, 4:6] = -0.5 * dt * dt * rot
        F[2:4, 4:6] = -dt * rot
        a_ned = rot @ np.array([ax[k], ay[k]])
        B_u = np.concatenate([0.5 * dt * dt * a_ned, dt * a_ned, np.zeros(2)])
        q_a, q_b = accel_noise_mps2 ** 2 * dt, bias_walk_mps2_per_sqrt_s ** 2 * dt
        Q = np.diag([0.25 * dt * dt * q_a, 0.25 * dt * dt * q_a, q_a, q_a, q_b, q_b])
        if k > 0:
            x, P = predict(x, P, F=F, Q=Q, B=np.eye(6), u=B_u)
        Fs[k], xs_p[k], Ps_p[k] = F, x, P
        if has_fix[k]:
            if np.isfinite(sog[k]) and np.isfinite(cog[k]):
                z = np.array([fn[k], fe[k], sog[k] * np.cos(cog[k]), sog[k] * np.sin(cog[k])])
                x, P = update(x, P, z, R_all, H_all)
            else:
                x, P = update(x, P, np.array([fn[k], fe[k]]), R_pos, H_pos)
        xs_f[k], Ps_f[k] = x, P

    xs, Ps = xs_f.copy(), Ps_f.copy()
    for k in range(n - 2, -1, -1):          # Rauch-Tung-Striebel, with the input-driven predictions kept above
        gain = Ps_f[k] @ Fs[k + 1].T @ np.linalg.inv(Ps_p[k + 1])
        xs[k] = xs_f[k] + gain @ (xs[k + 1] - xs_p[k + 1])
        Ps[k] = Ps_f[k] + gain @ (Ps[k + 1] - Ps_p[k + 1]) @ gain.T

    c, s = np.cos(psi), np.sin(psi)
    u = c * xs[:, 2] + s * xs[:, 3]
    v = -s * xs[:, 2] + c * xs[:, 3]
    vel_std = np.sqrt(np.maximum(Ps[:, 2, 2], Ps[:, 3, 3]))
    return SmoothedTrack(xs[:, 0], xs[:, 1], u, v, xs[:, 4:6], vel_std)


def _hold(a: np.ndarray) -> np.ndarray:
    """NaNs replaced by the last finite value before them (the first finite value at the start; 0 if none)."""
    a = a.copy()
    ok = np.isfinite(a)
    if not ok.any():
        return np.zeros_like(a)
    idx = np.where(ok, np.arange(len(a)), 0)
    np.maximum.accumulate(idx, out=idx)
    a = a[idx]
    first = int(np.argmax(ok))
    a[:first] = a[first]
    return a
