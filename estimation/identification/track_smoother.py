"""Body velocities for identification from what the boat measures, without its hull model.

Kinematics only (no hull model: the EKF's u and v lean toward the vessel file's):

    state x = [north, east, v_north, v_east, b_x, b_y, d_north, d_east]   (m, m/s, m/s^2, m)
    d(north, east)/dt     = (v_north, v_east)
    d(v_north, v_east)/dt = R(psi) (a_meas - b),   R(psi) = [[cos psi, -sin psi], [sin psi, cos psi]]
    d(b_x, b_y)/dt        = white noise (the accelerometer's slowly wandering bias, body frame)
    d(d_north, d_east)/dt = -d / pos_bias_tau_s + white noise (the receiver's wandering position bias,
                            std pos_bias_std_m: a fix is (north, east) + d + white noise of pos_std_m)

a_meas is the accelerometer's horizontal specific force in body FRD (on a level hull it is the inertial
acceleration, (u_dot - r v, v_dot + r u)) and psi the heading. Each step integrates R(psi) a_meas by the
trapezoid rule (the mean of the step's two ends). GNSS fixes correct position and, when the
receiver gives speed and course, velocity. A forward Kalman pass (filterpy) and a Rauch-Tung-Striebel
backward pass over the whole run give the smoothed track; u and v are its velocity rotated into the body frame.

v = -sin(psi) v_north + cos(psi) v_east, so a heading error of delta puts u * delta into v; given the gyro,
the heading used is estimation/heading/smoother.py's (the gyro integrated, held to the logged heading at low
frequency).

They are over the ground: in a current they include it (identify in still water, or subtract a known current).
Roll and pitch are ignored (a level boat in calm water: the identification conditions).
Why: docs/design-notes/estimation-and-drivers.md, "Identification fits".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from filterpy.kalman import predict, update

from estimation.heading.smoother import robust_white_noise, smooth_heading
from estimation.navekf.gnss_latency import fix_latency_s


@dataclass(frozen=True)
class SmoothedTrack:
    north_m: np.ndarray
    east_m: np.ndarray
    u_mps: np.ndarray             # body forward velocity over ground [m/s]
    v_mps: np.ndarray             # body starboard velocity over ground [m/s]
    bias_mps2: np.ndarray         # (N, 2) accelerometer bias, body x and y [m/s^2]
    vel_std_mps: np.ndarray       # 1-sigma of the smoothed velocity (larger axis) [m/s]
    heading_rad: np.ndarray       # the heading u and v were rotated with [rad, clockwise from north]
    fix_latency_s: float = 0.0    # how much earlier than its sample each fix was taken to describe the boat [s]


def smooth_track(t_s: np.ndarray, heading_rad: np.ndarray, accel_x_mps2: np.ndarray, accel_y_mps2: np.ndarray,
                 fix_north_m: np.ndarray, fix_east_m: np.ndarray, fix_speed_mps: Optional[np.ndarray] = None,
                 fix_course_rad: Optional[np.ndarray] = None, pos_std_m: float = 1.5, vel_std_mps: float = 0.1,
                 accel_noise_mps2: Optional[float] = None, bias_walk_mps2_per_sqrt_s: float = 0.002,
                 pos_bias_std_m: float = 1.0, pos_bias_tau_s: float = 60.0,
                 gyro_z_rps: Optional[np.ndarray] = None, fix_latency: Optional[float] = None) -> SmoothedTrack:
    """Smooth a run sampled at t_s (increasing, seconds). Per sample: heading [rad, clockwise from north], the
    accelerometer's body x/y specific force [m/s^2], and a GNSS fix (north/east [m] in the run's local frame,
    speed [m/s] and course [rad]) or NaN where no fix arrived. Missing accelerometer samples (NaN) are held
    from the previous one. pos_std_m: the fixes' white noise per axis [m], on top of the wandering bias
    (pos_bias_std_m [m], correlation time pos_bias_tau_s [s]; 0 for none); vel_std_mps: the receiver's
    velocity noise per axis [m/s]. accel_noise_mps2: the accelerometer's white noise per sample [m/s^2]; None
    estimates it from the spread of the samples' differences. gyro_z_rps: the gyro's body z rate per sample
    [rad/s, clockwise positive]; given, the heading is smoothed with it first (smooth_heading). fix_latency [s]:
    how much earlier than its sample each fix describes the boat; None estimates it (estimation/navekf/gnss_latency.py)
    when the fixes carry speed and course, else 0. Raises ValueError for fewer than 2 fixes or non-increasing
    time."""
    t = np.asarray(t_s, float)
    n = len(t)
    if n < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("time must have at least 2 samples, strictly increasing")
    fn, fe = np.asarray(fix_north_m, float), np.asarray(fix_east_m, float)
    has_fix = np.isfinite(fn) & np.isfinite(fe)
    if has_fix.sum() < 2:
        raise ValueError("fewer than 2 GNSS fixes in the run")
    if gyro_z_rps is not None:
        psi = smooth_heading(t, gyro_z_rps, heading_rad)
    else:
        psi = _hold(np.asarray(heading_rad, float))
    ax, ay = _hold(np.asarray(accel_x_mps2, float)), _hold(np.asarray(accel_y_mps2, float))
    if accel_noise_mps2 is None:
        accel_noise_mps2 = max(robust_white_noise(ax), robust_white_noise(ay))
    # white noise per sample -> density [m/s^2/sqrt(Hz)]: what integrating over a step of dt adds to the speed
    accel_density = accel_noise_mps2 * np.sqrt(float(np.median(np.diff(t))))
    sog = np.full(n, np.nan) if fix_speed_mps is None else np.asarray(fix_speed_mps, float)
    cog = np.full(n, np.nan) if fix_course_rad is None else np.asarray(fix_course_rad, float)

    c, s = np.cos(psi), np.sin(psi)
    a_n, a_e = c * ax - s * ay, s * ax + c * ay
    with_vel = has_fix & np.isfinite(sog) & np.isfinite(cog)
    if fix_latency is None:
        fix_latency = 0.0
        if with_vel.sum() >= 10:
            fix_latency = fix_latency_s(t, a_n, a_e, psi, t[with_vel], sog[with_vel] * np.cos(cog[with_vel]),
                                        sog[with_vel] * np.sin(cog[with_vel]))
    if fix_latency != 0.0:
        fn, fe, sog, cog = _moved(t, fix_latency, has_fix, fn, fe, sog, cog)
        has_fix = np.isfinite(fn) & np.isfinite(fe)

    first = int(np.argmax(has_fix))
    ns = 8
    x = np.array([fn[first], fe[first], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    P = np.diag([pos_std_m ** 2, pos_std_m ** 2, 1.0, 1.0, 0.1 ** 2, 0.1 ** 2, pos_bias_std_m ** 2 + 1e-12,
                 pos_bias_std_m ** 2 + 1e-12])
    H_pos = np.zeros((2, ns))
    H_pos[:, 0:2] = np.eye(2)
    H_pos[:, 6:8] = np.eye(2)
    H_all = np.zeros((4, ns))
    H_all[0:2] = H_pos
    H_all[2:4, 2:4] = np.eye(2)
    R_pos = np.eye(2) * pos_std_m ** 2
    R_all = np.diag([pos_std_m ** 2, pos_std_m ** 2, vel_std_mps ** 2, vel_std_mps ** 2])

    xs_f = np.zeros((n, ns))
    Ps_f = np.zeros((n, ns, ns))
    xs_p = np.zeros((n, ns))
    Ps_p = np.zeros((n, ns, ns))
    Fs = np.zeros((n, ns, ns))
    for k in range(n):
        dt = t[k] - t[k - 1] if k > 0 else 0.0
        j = max(k - 1, 0)
        rot = 0.5 * np.array([[c[j] + c[k], -s[j] - s[k]], [s[j] + s[k], c[j] + c[k]]])
        F = np.eye(ns)
        F[0:2, 2:4] = np.eye(2) * dt
        F[0:2, 4:6] = -0.5 * dt * dt * rot
        F[2:4, 4:6] = -dt * rot
        phi = np.exp(-dt / pos_bias_tau_s)
        F[6:8, 6:8] = np.eye(2) * phi
        a_ned = 0.5 * np.array([a_n[j] + a_n[k], a_e[j] + a_e[k]])
        B_u = np.concatenate([0.5 * dt * dt * a_ned, dt * a_ned, np.zeros(4)])
        q_a, q_b = accel_density ** 2 * dt, bias_walk_mps2_per_sqrt_s ** 2 * dt
        q_p = pos_bias_std_m ** 2 * (1.0 - phi * phi) + 1e-12
        Q = np.diag([0.25 * dt * dt * q_a, 0.25 * dt * dt * q_a, q_a, q_a, q_b, q_b, q_p, q_p])
        if k > 0:
            x, P = predict(x, P, F=F, Q=Q, B=np.eye(ns), u=B_u)
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

    u = c * xs[:, 2] + s * xs[:, 3]
    v = -s * xs[:, 2] + c * xs[:, 3]
    vel_std = np.sqrt(np.maximum(Ps[:, 2, 2], Ps[:, 3, 3]))
    return SmoothedTrack(xs[:, 0], xs[:, 1], u, v, xs[:, 4:6], vel_std, psi, float(fix_latency))


def _moved(t: np.ndarray, latency_s: float, has_fix: np.ndarray, *cols):
    """The fix columns with each fix moved to the sample nearest its time less latency_s (a later fix in the
    same sample wins)."""
    idx = np.where(has_fix)[0]
    dest = np.clip(np.searchsorted(t, t[idx] - latency_s - 0.5 * np.median(np.diff(t))), 0, len(t) - 1)
    out = []
    for col in cols:
        moved = np.full(len(t), np.nan)
        moved[dest] = col[idx]
        out.append(moved)
    return out


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
