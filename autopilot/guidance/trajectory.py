"""Trajectory tracking: time-parametrised references and the control-point law (paper 000 §5.3).

A reference gives the position (north, east) [m] the boat should be at, at reference time tau [s] from the
start of tracking, in the mission's local NED frame about an origin. Its velocity and acceleration are taken by
central differences (step DIFF_S), so any smooth reference (and a piecewise-linear one) serves.

The law steers the control point h = p + a (cos psi, sin psi), a metres ahead of the CG, whose velocity is
exactly J(psi) (u, r) for a boat without sway, J = [[cos psi, -a sin psi], [sin psi, a cos psi]]; its inverse
turns a desired h velocity into (u, r):
    h_ref = p_ref + a t_ref        t_ref the reference's unit tangent (the CG on the reference, heading along it)
    h_dot_c = h_ref_dot + K (h_ref - h) + Ki int(h_ref - h)
    (u, r) = [[cos psi, sin psi], [-sin psi / a, cos psi / a]] h_dot_c
so the CG converges to the reference itself, not to a point a metres off it. Heading psi is clockwise from
north (NED), r positive to starboard. The law is singular at a = 0 (r grows as 1/a): a must be > 0.

When the boat cannot keep up (it is behind the reference along its tangent by more than `max_lag_m`), the
reference clock slows and, at twice that lag, stops: the boat follows the path and the time it loses is
reported (`time_behind_s`) instead of being chased with a demand it cannot meet.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from autopilot.vocab.config import MAX_OFFSET_M

DIFF_S = 0.05
SLOW_REF_MPS = 0.05          # below this reference speed the tangent is taken from the boat's heading
MAX_PATH_M = 50000.0         # a path's length along its points (5e5 samples)
MAX_CSV_BYTES = 16 << 20     # a reference file: 10 Hz for 10 h is about 10 MB


class Reference:
    """position(tau) -> (north_m, east_m) for tau in [0, duration_s] (clamped beyond)."""

    def __init__(self, position: Callable[[float], tuple[float, float]], duration_s: float, name: str):
        self._position = position
        self.duration_s = float(duration_s)
        self.name = name

    def position(self, tau: float) -> tuple[float, float]:
        return self._position(min(max(tau, 0.0), self.duration_s))

    def state(self, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p, p_dot, p_ddot) at tau, each a NED 2-vector [m, m/s, m/s^2]."""
        h = DIFF_S
        p0, pm, pp = (np.array(self.position(tau + d)) for d in (0.0, -h, h))
        if tau - h < 0.0:                     # one-sided at the ends (the reference is clamped there)
            pm, p0, pp = p0, np.array(self.position(tau + h)), np.array(self.position(tau + 2 * h))
            return pm, (p0 - pm) / h, (pp - 2 * p0 + pm) / (h * h)
        return p0, (pp - pm) / (2 * h), (pp - 2 * p0 + pm) / (h * h)


def sinusoid(ax, wx, px, ay, wy, py, duration_s) -> Reference:
    """x = ax sin(wx t + px) north, y = ay sin(wy t + py) east (paper 000 Table 6: 10, 0.06; 6, 0.12)."""
    return Reference(lambda t: (ax * math.sin(wx * t + px), ay * math.sin(wy * t + py)), duration_s, "sinusoid")


def circle(radius_m, omega_rps, duration_s) -> Reference:
    """x = R cos(w t), y = R sin(w t): from R north of the centre, clockwise for w > 0 (Table 6: 10, 0.055)."""
    return Reference(lambda t: (radius_m * math.cos(omega_rps * t), radius_m * math.sin(omega_rps * t)),
                     duration_s, "circle")


def spiral(radius_m, growth_mps, omega_rps, duration_s) -> Reference:
    """Radius R + g t, angle w t (Table 6: 10, 0.1, 0.05)."""
    def pos(t):
        r = radius_m + growth_mps * t
        return r * math.cos(omega_rps * t), r * math.sin(omega_rps * t)
    return Reference(pos, duration_s, "spiral")


def timed_points(rows: Sequence[Sequence[float]], name: str = "points") -> Reference:
    """Straight lines between [t_s, north_m, east_m] rows (t increasing), arriving at each point at its time;
    the reference time starts at the first row's t."""
    arr = np.asarray(rows, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 3 or len(arr) < 2:
        raise ValueError(f"{name}: need at least two rows of t_s, north_m, east_m")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: every value must be a finite number")
    _within_reach(arr[:, 1:], name)
    if np.any(np.diff(arr[:, 0]) <= 0.0):
        raise ValueError(f"{name}: the times must increase")
    t = arr[:, 0] - arr[0, 0]
    return Reference(lambda tau: (float(np.interp(tau, t, arr[:, 1])), float(np.interp(tau, t, arr[:, 2]))),
                     float(t[-1]), name)


def _within_reach(ne: np.ndarray, name: str) -> None:
    """ValueError unless every (north, east) [m] is within MAX_OFFSET_M of the first waypoint."""
    far = np.abs(ne) > MAX_OFFSET_M
    if np.any(far):
        i = int(np.argmax(far.any(axis=1)))
        raise ValueError(f"{name}: point {i + 1} ({ne[i, 0]:.6g}, {ne[i, 1]:.6g}) m is more than "
                         f"{MAX_OFFSET_M / 1000:g} km from the first waypoint north or east")


def read_csv_reference(path: Path) -> Reference:
    """A CSV of t_s,north_m,east_m rows (a header line is allowed); ValueError naming the file and the line.
    Only a regular UTF-8 file of at most MAX_CSV_BYTES is read (a FIFO or a device is refused, never opened
    for a blocking read)."""
    from autopilot.vocab.safe_read import read_user_text
    try:
        text = read_user_text(path, MAX_CSV_BYTES)
    except ValueError as e:          # ConfigError (it names the file), or a path the OS cannot take (a NUL)
        reason = getattr(e, "reason", None) or str(e)
        raise ValueError(f"{path}: cannot read ({reason})") from None
    rows = []
    try:
        for n, rec in enumerate(csv.reader(text.splitlines()), start=1):
            if not rec or rec[0].strip().startswith("#"):
                continue
            try:
                rows.append([float(x) for x in rec[:3]])
            except ValueError:
                if rows:
                    raise ValueError(f"{path}: line {n}: expected three numbers t_s,north_m,east_m") from None
                continue                    # a header
            if len(rec) < 3:
                raise ValueError(f"{path}: line {n}: expected three numbers t_s,north_m,east_m")
    except csv.Error as e:              # a NUL byte, an unterminated quote
        raise ValueError(f"{path}: line {n}: not CSV ({e})") from None
    return timed_points(rows, str(path))


def make_reference(cfg, mission_file: str = "") -> Reference:
    """The Reference of an autopilot.vocab.config.TrajectoryConfig (a csv_file is relative to the mission file)."""
    d = cfg.duration_s
    if cfg.kind == "sinusoid":
        return sinusoid(cfg.amp_x_m, cfg.omega_x_rps, cfg.phase_x_rad, cfg.amp_y_m, cfg.omega_y_rps,
                        cfg.phase_y_rad, d)
    if cfg.kind == "circle":
        return circle(cfg.radius_m, cfg.omega_rps, d)
    if cfg.kind == "spiral":
        return spiral(cfg.radius_m, cfg.growth_mps, cfg.omega_rps, d)
    if cfg.kind == "points":
        ref = timed_points(cfg.points)
    elif cfg.kind == "path":
        raise ValueError("a path has no times: make it with make_path")
    else:
        path = Path(cfg.csv_file)
        if not path.is_absolute() and mission_file:
            path = Path(mission_file).parent / path
        ref = read_csv_reference(path)
    ref.duration_s = min(ref.duration_s, d)
    return ref


class ControlPointTracker:
    """The control-point law of the module docstring with integral action: h_dot_c gets + ki int(h_ref - h),
    so a steady push the (u, r) loops cannot see (a sideways force, a current the estimate has not learned)
    is worked off by crabbing instead of leaving a steady offset. `a_m` > 0, `k_per_s` > 0, `ki_per_s2` >= 0;
    the integral's contribution is held within +-max_integral_mps and does not grow while a command is
    clamped or `hold` is asked (the boat cannot keep up). u is clamped to +-max_speed_mps and r to
    +-max_yaw_rate_rps (the velocity controller clamps again)."""

    def __init__(self, a_m: float, k_per_s: float, max_speed_mps: float, max_yaw_rate_rps: float,
                 ki_per_s2: float = 0.0, max_integral_mps: float = 0.5):
        if not (a_m > 0.0 and k_per_s > 0.0 and ki_per_s2 >= 0.0):
            raise ValueError(f"control point: need a > 0 (the law is singular at a = 0), K > 0 and Ki >= 0, got "
                             f"a={a_m!r}, K={k_per_s!r}, Ki={ki_per_s2!r}")
        self.a_m, self.k_per_s, self.ki_per_s2 = float(a_m), float(k_per_s), float(ki_per_s2)
        self.max_speed_mps, self.max_yaw_rate_rps = max_speed_mps, max_yaw_rate_rps
        self.max_integral_mps = max_integral_mps
        self.reset()

    def reset(self) -> None:
        self.integral_mps = np.zeros(2)       # ki int(h_ref - h) dt, NED [m/s]
        self._t_prev: Optional[float] = None

    def command(self, north_m: float, east_m: float, heading_rad: float, p_ref: np.ndarray, v_ref: np.ndarray,
                a_ref: np.ndarray, t_s: Optional[float] = None, hold: bool = False,
                cross_only: bool = False) -> tuple[float, float]:
        """(u_ref [m/s], r_ref [rad/s]) that bring the CG onto the reference p_ref moving at v_ref; t_s [s]
        drives the integral (None: no integration this call). cross_only: integrate only the error across the
        reference's tangent (path following, where the reference is the boat's own projection and the along
        error a (1 - cos(heading error)) is a bias of the control point, never a position to make up)."""
        a, c, s = self.a_m, math.cos(heading_rad), math.sin(heading_rad)
        speed = math.hypot(v_ref[0], v_ref[1])
        if speed > SLOW_REF_MPS:
            tn, te = v_ref[0] / speed, v_ref[1] / speed
            turn = (v_ref[0] * a_ref[1] - v_ref[1] * a_ref[0]) / (speed * speed)     # the tangent's turn rate
            h_ref_dot = (v_ref[0] - a * turn * te, v_ref[1] + a * turn * tn)
        else:
            tn, te = c, s
            h_ref_dot = (v_ref[0], v_ref[1])
        en = p_ref[0] + a * tn - (north_m + a * c)
        ee = p_ref[1] + a * te - (east_m + a * s)
        dt = 0.0
        if t_s is not None:
            if self._t_prev is not None and t_s > self._t_prev:
                dt = min(t_s - self._t_prev, 0.5)
            self._t_prev = t_s
        hn = h_ref_dot[0] + self.k_per_s * en + self.integral_mps[0]
        he = h_ref_dot[1] + self.k_per_s * ee + self.integral_mps[1]
        u = c * hn + s * he
        r = (-s * hn + c * he) / a
        v, w = self.max_speed_mps, self.max_yaw_rate_rps
        clamped = abs(u) > v or abs(r) > w
        if dt > 0.0 and self.ki_per_s2 > 0.0 and not hold and not clamped:
            err = np.array([en, ee])
            if cross_only:
                nrm = np.array([-te, tn])
                err = float(err @ nrm) * nrm
            self.integral_mps += self.ki_per_s2 * dt * err
            norm = float(np.hypot(*self.integral_mps))
            if norm > self.max_integral_mps:
                self.integral_mps *= self.max_integral_mps / norm
        return max(-v, min(v, u)), max(-w, min(w, r))


class ReferenceClock:
    """Reference time that runs with the clock while the boat keeps up and slows when it falls behind.

    lag = (p_ref - p) . tangent [m]; rate = 1 while lag <= max_lag_m, falling linearly to 0 at 2 max_lag_m."""

    def __init__(self, max_lag_m: float):
        if not max_lag_m > 0.0:
            raise ValueError(f"max_lag_m must be > 0, got {max_lag_m!r}")
        self.max_lag_m = float(max_lag_m)
        self.tau_s = 0.0
        self.elapsed_s = 0.0
        self._t_prev: Optional[float] = None

    def advance(self, t_s: float, lag_m: float) -> float:
        if self._t_prev is not None and t_s > self._t_prev:
            dt = min(t_s - self._t_prev, 0.5)
            rate = 1.0 if lag_m <= self.max_lag_m else max(0.0, 2.0 - lag_m / self.max_lag_m)
            self.tau_s += rate * dt
            self.elapsed_s += dt
        self._t_prev = t_s
        return self.tau_s

    @property
    def time_behind_s(self) -> float:
        """How far the reference clock has fallen behind the wall clock since tracking started [s]."""
        return self.elapsed_s - self.tau_s


class PathReference:
    """A geometric path (no time) through (north, east) points, followed at a speed along it (paper 000 §5.4).

    Two points: the straight line. Three or more: a cubic spline through them (chord-length parameter), so
    corners become curves the boat can fly. Sampled every SAMPLE_M metres of arc into a polyline with the
    spline's heading and curvature (+ turning to starboard) at each sample. `speed_mps` is the speed along the
    path, lowered ahead of a bend so the lateral acceleration U^2 kappa stays within `max_lateral_mps2` (with a
    braking distance at `decel_mps2`).
    """

    SAMPLE_M = 0.1

    def __init__(self, points, speed_mps: float, max_lateral_mps2: float = 0.3, decel_mps2: float = 0.2,
                 name: str = "path"):
        pts = np.asarray(points, dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 2:
            raise ValueError(f"{name}: need at least two [north_m, east_m] points")
        if not np.all(np.isfinite(pts)):
            raise ValueError(f"{name}: every value must be a finite number")
        _within_reach(pts - pts[0], name)
        chord = np.hypot(*np.diff(pts, axis=0).T)
        if np.any(chord < 1e-6):
            raise ValueError(f"{name}: two consecutive points are the same")
        if float(np.sum(chord)) > MAX_PATH_M:
            raise ValueError(f"{name}: {np.sum(chord) / 1000:.6g} km from point to point; a path is at most "
                             f"{MAX_PATH_M / 1000:g} km")
        if not speed_mps > 0.0:
            raise ValueError(f"{name}: speed must be > 0, got {speed_mps!r}")
        self.name, self.speed_mps = name, float(speed_mps)
        self.max_lateral_mps2, self.decel_mps2 = max_lateral_mps2, decel_mps2
        if len(pts) == 2:
            n = max(2, int(math.ceil(chord[0] / self.SAMPLE_M)) + 1)
            f = np.linspace(0.0, 1.0, n)[:, None]
            xy = pts[0] + f * (pts[1] - pts[0])
            heading = np.full(n, math.atan2(pts[1, 1] - pts[0, 1], pts[1, 0] - pts[0, 0]))
            kappa = np.zeros(n)
        else:
            from scipy.interpolate import CubicSpline
            c = np.concatenate([[0.0], np.cumsum(chord)])
            spl = CubicSpline(c, pts, bc_type="natural")
            fine = np.linspace(0.0, c[-1], max(50, int(c[-1] / (self.SAMPLE_M / 4))))
            d1, d2 = spl(fine, 1), spl(fine, 2)
            arc = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(spl(fine), axis=0).T))])
            n = max(2, int(math.ceil(arc[-1] / self.SAMPLE_M)) + 1)
            at = np.interp(np.linspace(0.0, arc[-1], n), arc, fine)
            xy, d1, d2 = spl(at), spl(at, 1), spl(at, 2)
            heading = np.arctan2(d1[:, 1], d1[:, 0])
            kappa = (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]) / np.maximum(np.hypot(*d1.T) ** 3, 1e-12)
        self.xy, self.heading, self.kappa = xy, heading, kappa
        self.s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
        self.length_m = float(self.s[-1])
        self.profile_mps = self._speed_profile()

    def _speed_profile(self) -> np.ndarray:
        """The speed at each sample: the cornering limit, and backwards from each bend a braking ramp."""
        lim = np.minimum(self.speed_mps, np.sqrt(self.max_lateral_mps2 / np.maximum(np.abs(self.kappa), 1e-9)))
        # v_i^2 = min(lim_i^2, v_{i+1}^2 + 2 a ds_i) going back from each bend, i.e.
        # v_i^2 = min over j >= i of (lim_j^2 + 2 a (s_j - s_i)): a reversed running minimum
        two_a_s = 2.0 * self.decel_mps2 * self.s
        reach = np.minimum.accumulate((lim ** 2 + two_a_s)[::-1])[::-1]
        return np.sqrt(np.maximum(reach - two_a_s, 0.0))

    def project(self, north_m: float, east_m: float, s_hint: Optional[float] = None,
                back_m: float = 2.0, ahead_m: float = 20.0) -> int:
        """Index of the sample nearest the point; with `s_hint`, searched only within [s - back, s + ahead] so a
        path that comes back near itself is not jumped along."""
        lo, hi = 0, len(self.s)
        if s_hint is not None:
            lo = int(np.searchsorted(self.s, s_hint - back_m))
            hi = int(np.searchsorted(self.s, s_hint + ahead_m)) + 1
        d = np.hypot(self.xy[lo:hi, 0] - north_m, self.xy[lo:hi, 1] - east_m)
        return lo + int(np.argmin(d))

    def state_at(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p, v, a) of a point moving along the path at the profile speed, at sample i."""
        u, psi, k = self.profile_mps[i], self.heading[i], self.kappa[i]
        t = np.array([math.cos(psi), math.sin(psi)])
        nrm = np.array([-math.sin(psi), math.cos(psi)])      # to starboard of the tangent (NED)
        return self.xy[i].copy(), u * t, u * u * k * nrm

    def cross_track_m(self, i: int, north_m: float, east_m: float) -> float:
        """Signed distance of the point from the path at sample i, + to starboard of the path's direction."""
        psi = self.heading[i]
        return -(north_m - self.xy[i, 0]) * math.sin(psi) + (east_m - self.xy[i, 1]) * math.cos(psi)


def make_path(cfg, frame_offset_ne=(0.0, 0.0)) -> PathReference:
    """The PathReference of a TrajectoryConfig of kind path (points relative to the first waypoint)."""
    pts = np.asarray(cfg.path_points, dtype=float) if len(cfg.path_points) else np.zeros((0, 2))
    return PathReference(pts + np.asarray(frame_offset_ne), cfg.speed_mps, cfg.max_lateral_accel_mps2,
                         name="path")
