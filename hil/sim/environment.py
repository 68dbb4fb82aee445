"""The world around the simulated hull: wind, gusts, current and waves.

Directions follow the sailors' conventions, in degrees only here at the user-facing edge: `wind_from_deg` is
where the wind blows FROM (90 = from the east), `current_toward_deg` where the water flows TOWARD, `wave_from_deg`
where the waves come FROM; all clockwise from true north. Inside, everything is SI and radians, NED and body FRD.
Every force model returns generalised forces in body FRD: surge X [N], sway Y [N], yaw N [N*m], +N to starboard.

Wind: Fossen's relative-wind load, with the boat's velocity over ground (u, v) and the wind velocity in body
axes (u_w, v_w): u_rw = u - u_w, v_rw = v - v_w, V_rw^2 = u_rw^2 + v_rw^2, gamma_rw = -atan2(v_rw, u_rw),
    X = q c_x A_F (-cos gamma_rw),  Y = q c_y A_L sin gamma_rw,  N = q c_n A_L L sin(2 gamma_rw),  q = rho V_rw^2 / 2,
i.e. X = -k_x V_rw u_rw, Y = -k_y V_rw v_rw, N = -k_n u_rw v_rw: downwind drag, and a wind on the bow turns the
bow away from it (c_n > 0).

Waves: first-order excitation of a hull short against the waves, by the long-wave (G. I. Taylor) approximation:
force = M_hydro * a_water, M_hydro = (m - X_udot, m - Y_vdot), a_water the water's horizontal orbital
acceleration. The orbital velocity is water motion, like the current: the dynamics subtract it before damping and
Coriolis. The sea is a sum of regular deep-water components from the Bretschneider spectrum of Hs and Tp
(equal-energy frequency bins, a seeded random frequency in each, random phase); a component of amplitude A,
frequency w, wave number k = w^2/g travelling toward beta has, at NED point p and time t, elevation A cos(theta),
orbital velocity w A cos(theta) and acceleration -w^2 A sin(theta) along e_beta, theta = w t - k (p . e_beta) + phi.
Both are averaged over an L x B waterplane rectangle, i.e. multiplied by sinc(k_x L/2) sinc(k_y B/2), which also
gives a yaw moment from the bow-stern phase difference. No second-order drift forces; Hs = 0 gives exactly zero.

Current: uniform in space, constant, or slowly varying in speed with `current_variation_mps` (a sinusoid of
period `current_period_s`); the dynamics handle it through the velocity relative to the water.
Gusts: the wind speed is V_w + g(t), g a first-order Gauss-Markov process of standard deviation `gust_std_mps`
and correlation time `gust_tau_s`, discretised exactly; the speed never goes below zero.
Why: docs/design-notes/simulator-and-rims.md, "The simulator".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

GRAVITY_MPS2 = 9.80665


@dataclass(frozen=True)
class EnvironmentConfig:
    """Wind, current and sea state for the built-in simulator. Degrees only here (user-facing)."""

    wind_speed_mps: float = 0.0       # mean true wind speed [m/s], >= 0
    wind_from_deg: float = 0.0        # meteorological: direction the wind blows FROM, clockwise from north [deg]
    gust_std_mps: float = 0.0         # standard deviation of the gust speed [m/s] (0: steady wind)
    gust_tau_s: float = 5.0           # correlation time of the gusts [s]
    current_speed_mps: float = 0.0    # mean current speed [m/s], >= 0
    current_toward_deg: float = 0.0   # oceanographic: direction the current flows TOWARD [deg]
    current_variation_mps: float = 0.0  # amplitude of a slow sinusoidal variation of the current speed [m/s]
    current_period_s: float = 600.0   # period of that variation [s]
    wave_hs_m: float = 0.0            # significant wave height [m] (0: calm)
    wave_tp_s: float = 4.0            # peak period [s]
    wave_from_deg: float = 0.0        # direction the waves come FROM [deg]
    wave_spread_deg: float = 0.0      # half-width of the cos^2 directional spreading [deg] (0: long-crested)
    wave_components: int = 20         # number of regular components in the wave sum

    def __post_init__(self):
        def finite(name):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name}: must be a finite number, got {value!r}")
            return value

        for name in ("wind_from_deg", "current_toward_deg", "wave_from_deg"):
            finite(name)
        for name in ("wind_speed_mps", "gust_std_mps", "current_speed_mps", "current_variation_mps", "wave_hs_m"):
            if finite(name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        for name in ("gust_tau_s", "current_period_s", "wave_tp_s"):
            if finite(name) <= 0:
                raise ValueError(f"{name}: must be > 0, got {getattr(self, name)}")
        if self.current_variation_mps > self.current_speed_mps:
            raise ValueError("current_variation_mps: must not exceed current_speed_mps (the speed would turn "
                             "negative)")
        if not 0.0 <= finite("wave_spread_deg") <= 90.0:
            raise ValueError(f"wave_spread_deg: must lie in [0, 90], got {self.wave_spread_deg}")
        if isinstance(self.wave_components, bool) or not isinstance(self.wave_components, int) \
                or not 1 <= self.wave_components <= 200:
            raise ValueError(f"wave_components: must be an integer in [1, 200], got {self.wave_components!r}")

    @classmethod
    def from_cli(cls, wind: Optional[str] = None, current: Optional[str] = None, waves: Optional[str] = None,
                 **extra) -> "EnvironmentConfig":
        """Build from the `autopilot sim` option strings.

        wind "SPEED_MPS,FROM_DEG", current "SPEED_MPS,TOWARD_DEG", waves "HS_M,PERIOD_S,FROM_DEG"; None or ""
        leaves that part calm. Raises ValueError naming the option and what is wrong.
        """
        kwargs = dict(extra)
        if wind:
            kwargs["wind_speed_mps"], kwargs["wind_from_deg"] = _numbers("--wind", wind, "SPEED_MPS,FROM_DEG")
        if current:
            kwargs["current_speed_mps"], kwargs["current_toward_deg"] = _numbers(
                "--current", current, "SPEED_MPS,TOWARD_DEG")
        if waves:
            kwargs["wave_hs_m"], kwargs["wave_tp_s"], kwargs["wave_from_deg"] = _numbers(
                "--waves", waves, "HS_M,PERIOD_S,FROM_DEG")
        return cls(**kwargs)


def _numbers(option: str, text: str, form: str) -> Tuple[float, ...]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ValueError(f"{option}: expected {form}, got {text!r}") from None
    if len(values) != form.count(",") + 1:
        raise ValueError(f"{option}: expected {form} ({form.count(',') + 1} numbers), got {text!r}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{option}: numbers must be finite, got {text!r}")
    return values


# ------------------------------------------------------------------------------------------------ wind
class WindLoad:
    """Fossen's relative-wind load for one vessel (see module docstring for the formula and signs)."""

    def __init__(self, area_frontal_m2: float, area_lateral_m2: float, length_m: float,
                 cx: float, cy: float, cn: float, air_density_kgpm3: float):
        half_rho = 0.5 * air_density_kgpm3
        self.k_x = half_rho * cx * area_frontal_m2
        self.k_y = half_rho * cy * area_lateral_m2
        self.k_n = air_density_kgpm3 * cn * area_lateral_m2 * length_m

    @classmethod
    def for_vessel(cls, vessel) -> "WindLoad":
        w = vessel.wind
        return cls(w.area_frontal_m2, w.area_lateral_m2, vessel.hull.length_m, w.cx, w.cy, w.cn,
                   w.air_density_kgpm3)

    def force_body(self, surge_mps: float, sway_mps: float, heading_rad: float,
                   wind_north_mps: float, wind_east_mps: float) -> Tuple[float, float, float]:
        """(X [N], Y [N], N [N*m]) on a hull moving at (surge, sway) over ground, in a wind whose air velocity
        over ground is (wind_north, wind_east) (the direction it blows TOWARD, unlike wind_from_deg)."""
        c, s = math.cos(heading_rad), math.sin(heading_rad)
        u_rw = surge_mps - (wind_north_mps * c + wind_east_mps * s)
        v_rw = sway_mps - (-wind_north_mps * s + wind_east_mps * c)
        v_abs = math.sqrt(u_rw * u_rw + v_rw * v_rw)
        return -self.k_x * v_abs * u_rw, -self.k_y * v_abs * v_rw, -self.k_n * u_rw * v_rw


class GustProcess:
    """Wind speed with first-order Gauss-Markov gusts: g_{k+1} = a g_k + sigma sqrt(1 - a^2) w_k, exact for dt."""

    def __init__(self, mean_mps: float, std_mps: float, tau_s: float, dt_s: float, rng: np.random.Generator):
        self.mean_mps = mean_mps
        self._a = math.exp(-dt_s / tau_s)
        self._b = std_mps * math.sqrt(1.0 - self._a * self._a)
        self._rng = rng
        self._buf: list = []
        self._i = 0
        self.gust_mps = std_mps * float(rng.standard_normal()) if std_mps > 0 else 0.0

    def step(self) -> float:
        """Advance one dt and return the wind speed [m/s] (never negative)."""
        if self._b == 0.0:
            return self.mean_mps
        if self._i >= len(self._buf):
            self._buf = self._rng.standard_normal(4096).tolist()
            self._i = 0
        self.gust_mps = self._a * self.gust_mps + self._b * self._buf[self._i]
        self._i += 1
        return max(0.0, self.mean_mps + self.gust_mps)


# ------------------------------------------------------------------------------------------------ waves
def bretschneider_spectrum(omega_rps, hs_m: float, tp_s: float):
    """Two-parameter Bretschneider spectrum S(w) [m^2 s/rad]; its area is Hs^2/16.

    S(w) = 5/16 Hs^2 w0^4 / w^5 exp(-5/4 (w0/w)^4), w0 = 2 pi / Tp. Accepts a scalar or an array; S(0) = 0.
    """
    w = np.asarray(omega_rps, dtype=float)
    w0 = 2.0 * math.pi / tp_s
    out = np.zeros_like(w)
    pos = w > 0
    wp = w[pos]
    out[pos] = 5.0 / 16.0 * hs_m ** 2 * w0 ** 4 / wp ** 5 * np.exp(-1.25 * (w0 / wp) ** 4)
    return out if out.ndim else float(out)


def _sinc(x):
    """sin(x)/x, vectorised, 1 at 0."""
    return np.sinc(np.asarray(x) / math.pi)


def _sinc1(x: float) -> float:
    """sin(x)/x of one float, 1 at 0 (the scalar form, for per-step use)."""
    return math.sin(x) / x if abs(x) > 1e-9 else 1.0


def _moment_arm(kappa, length_m: float):
    """(1/L) * integral over [-L/2, L/2] of x sin(kappa x) dx [m]; tends to kappa L^2/12 as kappa -> 0."""
    kappa = np.asarray(kappa, dtype=float)
    h = 0.5 * length_m
    kh = kappa * h
    small = np.abs(kh) < 1e-3
    safe = np.where(small, 1.0, kappa)
    exact = 2.0 / length_m * (np.sin(safe * h) / safe ** 2 - h * np.cos(safe * h) / safe)
    return np.where(small, kappa * length_m ** 2 / 12.0 * (1.0 - kh ** 2 / 10.0), exact)


class WaveField:
    """A seeded sum of regular deep-water waves and the first-order force they exert on one hull.

    `force_body(t, north, east, heading)` returns (X, Y, N) in body FRD; `excitation` adds the water's
    orbital motion around the hull (u, v, r in body axes), which the dynamics treat as local current.
    Coefficients that depend only on the heading are tabulated on a 0.5 deg grid at construction, so one
    evaluation is a plain loop over the components (a few microseconds).
    """

    HEADING_BINS = 720

    def __init__(self, env: EnvironmentConfig, length_m: float, beam_m: float, surge_mass_kg: float,
                 sway_mass_kg: float, rng: np.random.Generator):
        self.hs_m = env.wave_hs_m
        self.tp_s = env.wave_tp_s
        n = env.wave_components
        w0 = 2.0 * math.pi / env.wave_tp_s
        # Equal-energy bins of the Bretschneider cumulative energy F(w) = exp(-5/4 (w0/w)^4), tails cut at
        # 0.5 % and 99 %; one component per bin at a random energy quantile within it.
        p_lo, p_hi = 0.005, 0.99
        p = p_lo + (p_hi - p_lo) * (np.arange(n) + rng.uniform(0.0, 1.0, n)) / n
        self.omega_rps = w0 * (1.25 / -np.log(p)) ** 0.25
        self.amplitude_m = np.full(n, env.wave_hs_m / 4.0 * math.sqrt(2.0 / n))   # sum A^2/2 = Hs^2/16
        self.phase_rad = rng.uniform(0.0, 2.0 * math.pi, n)
        toward = math.radians(env.wave_from_deg) + math.pi
        self.direction_rad = toward + self._spread(rng, n, math.radians(env.wave_spread_deg))
        self.k_per_m = self.omega_rps ** 2 / GRAVITY_MPS2
        self._length_m, self._beam_m = length_m, beam_m
        self._mx, self._my = surge_mass_kg, sway_mass_kg
        self._accel = self.omega_rps ** 2 * self.amplitude_m          # orbital acceleration amplitude
        self._static = list(zip(self.omega_rps.tolist(), self.phase_rad.tolist(),
                                (self.k_per_m * np.cos(self.direction_rad)).tolist(),
                                (self.k_per_m * np.sin(self.direction_rad)).tolist()))
        self.calm = env.wave_hs_m == 0.0
        self._table = self._tabulate()
        self._rows: list = [None] * self.HEADING_BINS        # the table's rows as Python lists, on first use

    @staticmethod
    def _spread(rng, n, half_width_rad):
        """Directions drawn from a cos^2 spreading of the given half-width (rejection sampling)."""
        if half_width_rad == 0.0:
            return np.zeros(n)
        out = []
        while len(out) < n:
            d = rng.uniform(-half_width_rad, half_width_rad)
            if rng.uniform() <= math.cos(0.5 * math.pi * d / half_width_rad) ** 2:
                out.append(d)
        return np.array(out)

    def elevation_m(self, t_s: float, north_m: float, east_m: float) -> float:
        """Sea-surface elevation, positive up [m], at a NED point (for plots and checks)."""
        total = 0.0
        for (w, ph, kn, ke), a in zip(self._static, self.amplitude_m.tolist()):
            total += a * math.cos(w * t_s + ph - kn * north_m - ke * east_m)
        return total

    def _tabulate(self) -> np.ndarray:
        """Per heading bin and component, the coefficients of the hull-averaged force and water motion.

        With theta the component's phase at the CG: X = sum c_x sin, Y = sum c_y sin, N = sum c_n cos,
        u_w = sum p_u cos, v_w = sum p_v cos, r_w = sum p_r sin.
        """
        psi = 2.0 * math.pi * np.arange(self.HEADING_BINS)[:, None] / self.HEADING_BINS
        chi = self.direction_rad[None, :] - psi                # wave heading relative to the bow
        cos_chi, sin_chi = np.cos(chi), np.sin(chi)
        kx, ky = self.k_per_m * cos_chi, self.k_per_m * sin_chi
        sx, sy = _sinc(0.5 * kx * self._length_m), _sinc(0.5 * ky * self._beam_m)
        # Water at body point (x, y): velocity w A (cos chi, sin chi) cos(theta - kx x - ky y), acceleration
        # -w^2 A (cos chi, sin chi) sin(...). Averaged over the L x B rectangle; the moment is the integral of
        # (x m_y a_y - y m_x a_x) per unit area.
        vel = self.omega_rps * self.amplitude_m
        cx = -self._mx * self._accel * cos_chi * sx * sy
        cy = -self._my * self._accel * sin_chi * sx * sy
        cn = self._accel * (self._my * sin_chi * _moment_arm(kx, self._length_m) * sy
                            - self._mx * cos_chi * _moment_arm(ky, self._beam_m) * sx)
        pu = vel * cos_chi * sx * sy
        pv = vel * sin_chi * sx * sy
        # The same moment taken of the velocity, over the polar moment of the evenly spread hydrodynamic mass:
        # the rotation rate of the water along the hull.
        polar = (self._my * self._length_m ** 2 + self._mx * self._beam_m ** 2) / 12.0
        pr = cn / self.omega_rps / polar
        return np.stack((cx, cy, cn, pu, pv, pr), axis=-1)

    def _coefficients(self, heading_bin: int) -> list:
        rows = self._rows[heading_bin]
        if rows is None:
            rows = self._rows[heading_bin] = self._table[heading_bin].tolist()
        return rows

    def excitation(self, t_s: float, north_m: float, east_m: float, heading_rad: float
                   ) -> Tuple[float, float, float, float, float, float]:
        """(X [N], Y [N], N [N*m], u_w [m/s], v_w [m/s], r_w [rad/s]) at time t, hull at a NED position/heading:
        the first-order wave force in body FRD and the orbital motion of the water around the hull."""
        if self.calm:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        b = int(round(heading_rad * (self.HEADING_BINS / (2.0 * math.pi)))) % self.HEADING_BINS
        fx = fy = fn = wu = wv = wr = 0.0
        sin, cos = math.sin, math.cos
        for (w, ph, kn, ke), (cx, cy, cn, pu, pv, pr) in zip(self._static, self._coefficients(b)):
            theta = w * t_s + ph - kn * north_m - ke * east_m
            s, c = sin(theta), cos(theta)
            fx += cx * s
            fy += cy * s
            fn += cn * c
            wu += pu * c
            wv += pv * c
            wr += pr * s
        return fx, fy, fn, wu, wv, wr

    def slope_attitude(self, t_s: float, north_m: float, east_m: float, heading_rad: float
                       ) -> Tuple[float, float, float, float]:
        """(roll [rad], pitch [rad], roll rate [rad/s], pitch rate [rad/s]) of a hull lying on the sea surface:
        pitch (bow up +) is the surface slope along the bow, roll (starboard down +) minus the slope toward
        starboard. Each component's slope is k A sin(theta) along its direction, reduced by the same waterplane
        averaging (sinc) as the forces: a hull long against the waves does not follow them."""
        c, s = math.cos(heading_rad), math.sin(heading_rad)
        gn = ge = rn = re = 0.0
        length, beam = self._length_m, self._beam_m
        for (w, ph, kn, ke), a in zip(self._static, self.amplitude_m.tolist()):
            kx, ky = kn * c + ke * s, -kn * s + ke * c
            avg = a * _sinc1(0.5 * kx * length) * _sinc1(0.5 * ky * beam)
            theta = w * t_s + ph - kn * north_m - ke * east_m
            st, ct = math.sin(theta), math.cos(theta)
            gn += avg * kn * st
            ge += avg * ke * st
            rn += avg * kn * w * ct
            re += avg * ke * w * ct
        pitch, roll = c * gn + s * ge, -(-s * gn + c * ge)
        return math.atan(roll), math.atan(pitch), -(-s * rn + c * re), c * rn + s * re

    def force_body(self, t_s: float, north_m: float, east_m: float, heading_rad: float
                   ) -> Tuple[float, float, float]:
        """(X [N], Y [N], N [N*m]) of the first-order wave force on the hull at time t and NED position."""
        return self.excitation(t_s, north_m, east_m, heading_rad)[:3]


# ------------------------------------------------------------------------------------------------ current
class CurrentField:
    """Uniform current: velocity over ground toward `current_toward_deg`, speed optionally varying slowly."""

    def __init__(self, env: EnvironmentConfig, rng: np.random.Generator):
        toward = math.radians(env.current_toward_deg)
        self._cn, self._ce = math.cos(toward), math.sin(toward)
        self._mean = env.current_speed_mps
        self._var = env.current_variation_mps
        self._omega = 2.0 * math.pi / env.current_period_s
        self._phase = float(rng.uniform(0.0, 2.0 * math.pi))

    def velocity_ned(self, t_s: float) -> Tuple[float, float]:
        """(north, east) velocity of the water over ground [m/s] at time t."""
        speed = self._mean
        if self._var:
            speed += self._var * math.sin(self._omega * t_s + self._phase)
        return speed * self._cn, speed * self._ce
