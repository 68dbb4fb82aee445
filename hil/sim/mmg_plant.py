"""A twin-propeller catamaran after the MMG standard method: a simulated boat of another structure than the
built-in Fossen plant (hil.sim.plant), to fly the autopilot on a hull its vessel file's model cannot match.

Body axes FRD at midship, which is also the centre of gravity; the state is the velocity through the water
(u, v, r), as in hil.sim.dynamics, and the kinematics add the current. Equations (derivation and sources in
docs/design-notes/foreign-plant.md):

    (m + m_x) du/dt = (m + m_y) v r + X        X = X_H + (1 - t_p) (T_port + T_stbd) + X_env
    (m + m_y) dv/dt = -(m + m_x) u r + Y       Y = Y_H + Y_env
    (I_z + J_z) dr/dt = N                      N = N_H - (1 - t_p) (y_port T_port + y_stbd T_stbd) + N_env

Hull forces X_H, Y_H, N_H: each demihull's resistance at its own surge speed (u - y r), linear skin damping, and
a blend, by the weight w(U, beta), of the MMG polynomial in v' = v/U and r' = r L/U (1/2 rho L d U^2 times
X'_vv v'^2 + X'_vr v'r' + X'_rr r'^2 + X'_vvvv v'^4, Y'_v v' + Y'_r r' + Y'_vvv v'^3 + Y'_vvr v'^2 r' +
Y'_vrr v' r'^2 + Y'_rrr r'^3, and N' alike times L) with cross-flow drag over both hulls' lateral sections plus
the ideal-fluid Munk moment -(m_y - m_x) u v. w rises smoothly from 0 below blend_low_mps to 1 above
blend_high_mps, fades out between 60 and 90 deg of drift (and astern) and between |r'| = r_prime_max and twice
that, where the polynomial's captive tests end; so the boat stops, spins and backs up on the cross-flow model.
Going astern a demihull's resistance is astern_resistance_factor times its ahead resistance (transom first).
The cubic terms see v' and r' clipped to v_prime_max and r_prime_max.

Propellers at (x_m, y_m[i]): thrust T = rho n^2 D^4 K_T(J), J = (1 - w_p)(u - y r) / (n D) clipped to
[-0.5, 1.2], K_T = k0 + k1 J + k2 J^2; a shaft turning backwards pushes backwards with reverse_kt_factor times
K_T at the advance ratio along its own thrust. Shaft speed n [rps] follows its setpoint through a first-order
lag (exact per step; a step sees the lag's mean), and stands still once below SHAFT_STOP_RPS when told to
stop. The setpoint comes from the ESC pulse: linear from the dead
band's edge (0) to pulse_max_us (+max_shaft_rps) and pulse_min_us (-max_shaft_rps).

The runner hands a plant thrust demands [N] made from the pulses by the autopilot's thrust maps; `step_to`
turns them back into those pulses with the same maps (thrust_to_pulse), so the boat reacts to the pulse on
the line, not to what its vessel file believes it makes. Wind, gusts, waves and current act as on the built-in
plant (hil.sim.environment), with this hull's masses and areas.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from autopilot.vocab.angles import wrap_pi
from hil.sim.environment import CurrentField, EnvironmentConfig, GustProcess, WaveField, WindLoad
from hil.sim.mmg_params import MmgParams
from hil.sim.plant import Truth

J_MIN, J_MAX = -0.5, 1.2                    # advance ratios the open-water curve is evaluated within
SHAFT_STOP_RPS = 0.05                       # a shaft told to stop stands still once this slow [rev/s]
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)     # cross-flow integral along the hull


def _smoothstep(x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * (3.0 - 2.0 * x)


class MmgCatamaranPlant:
    """The MMG catamaran in its environment, integrated with fixed RK4 steps of dt_s (a PlantModel).

    `maps` are the thrust maps the runner's demands come through (one per propeller, port then starboard).
    Starts at the given position and heading, moving at surge_mps over ground, shafts at rest. A constant
    external force force_n [N, >= 0] pushes toward force_toward_deg [deg clockwise from north]. Deterministic
    for the same parameters, environment, seed and calls. ValueError for a seed that is not a non-negative
    integer, dt_s outside (0, 0.01], a non-finite pose, or maps of another count than the propellers.
    """

    def __init__(self, params: MmgParams, maps: Sequence, env: EnvironmentConfig, seed: int,
                 north_m: float, east_m: float, heading_rad: float, dt_s: float = 0.01, surge_mps: float = 0.0,
                 force_n: float = 0.0, force_toward_deg: float = 0.0):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        if not (isinstance(dt_s, (int, float)) and 0.0 < dt_s <= 0.01 + 1e-12):
            raise ValueError(f"dt_s: must be in (0, 0.01] s (at least 100 Hz), got {dt_s!r}")
        for name, value in (("north_m", north_m), ("east_m", east_m), ("heading_rad", heading_rad),
                            ("surge_mps", surge_mps), ("force_n", force_n), ("force_toward_deg", force_toward_deg)):
            if not math.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}")
        if force_n < 0.0:
            raise ValueError("force_n: must be >= 0 (give the direction in force_toward_deg)")
        prop = params.propellers
        if len(maps) != len(prop.y_m):
            raise ValueError(f"plant model {params.name}: has {len(prop.y_m)} propellers but the vessel file "
                             f"has {len(maps)} thrusters")
        self.params, self.env, self.seed, self.dt_s = params, env, int(seed), float(dt_s)
        self.maps = list(maps)
        g = params.geometry
        rho, length, draft = params.rho_kgpm3, g.length_m, g.draft_m
        self._L = length
        self._q = 0.5 * rho * length * draft                       # 1/2 rho L d: force per U^2 [kg/m]
        nd_mass = 0.5 * rho * length * length * draft
        self.m11 = params.mass_kg + params.added_mass.m_x * nd_mass
        self.m22 = params.mass_kg + params.added_mass.m_y * nd_mass
        self.m33 = params.iz_kgm2 + params.added_mass.j_z * 0.5 * rho * length ** 4 * draft
        self._hull = dict(params.hull)
        self._hull_y = (-g.hull_offset_m, g.hull_offset_m)
        low = params.low_speed
        self._cf = 0.5 * rho * draft * low.cross_flow_cd * 2.0     # both hulls' sections [kg/m^3 * m]
        half = 0.5 * length
        self._xs = tuple(float(x) * half for x in _NODES)
        self._ws = tuple(float(w) * half for w in _WEIGHTS)
        self._prop_y = tuple(prop.y_m)
        self._rho_d4 = rho * prop.diameter_m ** 4
        lag = math.exp(-self.dt_s / prop.motor_time_constant_s)
        self._lag_end = lag
        self._lag_mean = (prop.motor_time_constant_s / self.dt_s) * (1.0 - lag)
        self._shaft_rps = [0.0] * len(prop.y_m)
        self._shaft_cmd = [0.0] * len(prop.y_m)
        w = params.wind
        self._wind = WindLoad(w.area_frontal_m2, w.area_lateral_m2, length, w.cx, w.cy, w.cn, w.air_density_kgpm3)
        rng_waves, rng_gust, rng_current = (np.random.default_rng([self.seed, k]) for k in (1, 2, 3))
        self._waves = WaveField(env, length, g.beam_m, self.m11, self.m22, rng_waves)
        self._gust = GustProcess(env.wind_speed_mps, env.gust_std_mps, env.gust_tau_s, self.dt_s, rng_gust)
        self._current = CurrentField(env, rng_current)
        to_rad = math.radians(env.wind_from_deg) + math.pi
        self._wind_dir = (math.cos(to_rad), math.sin(to_rad))
        self._calm_air = env.wind_speed_mps == 0.0 and env.gust_std_mps == 0.0
        toward = math.radians(force_toward_deg)
        self._force_ne = (force_n * math.cos(toward), force_n * math.sin(toward))
        self._k = 0
        cn, ce = self._current.velocity_ned(0.0)
        psi = float(heading_rad)
        c, s = math.cos(psi), math.sin(psi)
        self._state = (float(north_m), float(east_m), psi,
                       float(surge_mps) - (cn * c + ce * s), -(-cn * s + ce * c), 0.0)
        self._truth = self._make_truth(0.0, 0.0)

    # ------------------------------------------------------------------------------------------ public
    @property
    def truth(self) -> Truth:
        return self._truth

    @property
    def time_s(self) -> float:
        return self._k * self.dt_s

    @property
    def shaft_rps(self) -> Tuple[float, ...]:
        """Each propeller's shaft speed now [rev/s], + turning to push forward."""
        return tuple(self._shaft_rps)

    @property
    def water_velocity(self) -> Tuple[float, float, float]:
        """(u_r, v_r, r): surge and sway through the water [m/s] and yaw rate [rad/s], body FRD, now."""
        return self._state[3], self._state[4], self._state[5]

    def current_ned(self, t_s: float) -> Tuple[float, float]:
        """(north, east) velocity of the water over ground [m/s] at time t_s."""
        return self._current.velocity_ned(t_s)

    def shaft_setpoint_rps(self, pulse_us: float) -> float:
        """The shaft speed [rev/s] the boat's ESC drives toward for a pulse [us] (forward-positive pulse sense);
        0 inside the dead band, pulses beyond the range read as its end."""
        e, n_max = self.params.esc, self.params.propellers.max_shaft_rps
        hi, lo = e.pulse_neutral_us + e.dead_band_us, e.pulse_neutral_us - e.dead_band_us
        if pulse_us > hi:
            return n_max * min(1.0, (pulse_us - hi) / (e.pulse_max_us - hi))
        if pulse_us < lo:
            return -n_max * min(1.0, (lo - pulse_us) / (lo - e.pulse_min_us))
        return 0.0

    def step_to(self, t_s: float, thrust_n: Sequence[float], angle_rad: Optional[Sequence[float]] = None) -> Truth:
        """Hold the demand thrust_n [N per thruster, vessel order, as the runner's maps made it from the pulses]
        up to t_s [s] and return the truth (the last 0.01 s grid point at or before t_s). ValueError for a
        t_s before the plant's time, a demand of the wrong length or not finite, or pod angles (none here)."""
        if angle_rad is not None:
            raise ValueError(f"angle_rad: plant model {self.params.name} has fixed propellers, no pods to turn")
        if len(thrust_n) != len(self.maps):
            raise ValueError(f"thrust_n: expected {len(self.maps)} values (one per thruster), got {len(thrust_n)}")
        if not all(math.isfinite(float(x)) for x in thrust_n):
            raise ValueError(f"thrust_n: values must be finite, got {tuple(thrust_n)}")
        pulses = [m.thrust_to_pulse(float(x)) for m, x in zip(self.maps, thrust_n)]
        return self.step_pulses(t_s, pulses)

    def step_pulses(self, t_s: float, pulses_us: Sequence[float]) -> Truth:
        """Hold the ESC pulses [us, forward-positive sense, propeller order] up to t_s [s]; return the truth.
        ValueError as step_to."""
        if len(pulses_us) != len(self._prop_y) or not all(math.isfinite(float(p)) for p in pulses_us):
            raise ValueError(f"pulses_us: expected {len(self._prop_y)} finite pulses, got {tuple(pulses_us)}")
        self._shaft_cmd = [self.shaft_setpoint_rps(float(p)) for p in pulses_us]
        dt = self.dt_s
        target = int(math.floor(t_s / dt + 1e-6))
        if target < self._k:
            if t_s < self.time_s - 1e-9:
                raise ValueError(f"t_s: {t_s} s lies before the plant's time {self.time_s} s")
            target = self._k
        if target == self._k:
            return self._truth
        waves, wind, gust, current = self._waves, self._wind, self._gust, self._current
        wind_n, wind_e = self._wind_dir
        force_n, force_e = self._force_ne
        external = force_n != 0.0 or force_e != 0.0
        shaft, cmd = self._shaft_rps, self._shaft_cmd
        state = self._state
        k = self._k
        u_prev = v_prev = 0.0
        while k < target:
            t_mid = (k + 0.5) * dt
            mean = []
            for i in range(len(shaft)):
                n0, nc = shaft[i], cmd[i]
                mean.append(nc + (n0 - nc) * self._lag_mean)
                shaft[i] = nc + (n0 - nc) * self._lag_end
                if nc == 0.0 and abs(shaft[i]) < SHAFT_STOP_RPS:     # friction stops a coasting motor
                    shaft[i] = 0.0
            n, e, psi, ur, vr, r = state
            cn, ce = current.velocity_ned(t_mid)
            c, s = math.cos(psi), math.sin(psi)
            u_prev, v_prev = ur + cn * c + ce * s, vr - cn * s + ce * c
            x_n = y_n = n_nm = 0.0
            if external:
                x_n += c * force_n + s * force_e
                y_n += -s * force_n + c * force_e
            if not self._calm_air:
                speed = gust.step()
                fx, fy, fz = wind.force_body(u_prev, v_prev, psi, speed * wind_n, speed * wind_e)
                x_n, y_n, n_nm = x_n + fx, y_n + fy, n_nm + fz
            wu = wv = wr = 0.0
            if not waves.calm:
                fx, fy, fz, wu, wv, wr = waves.excitation(t_mid, n, e, psi)
                x_n, y_n, n_nm = x_n + fx, y_n + fy, n_nm + fz
            state = self._rk4(state, dt, (x_n, y_n, n_nm), tuple(mean), (cn, ce), (wu, wv, wr))
            k += 1
        self._state = (state[0], state[1], wrap_pi(state[2]), state[3], state[4], state[5])
        self._k = k
        self._truth = self._make_truth(u_prev, v_prev)
        return self._truth

    # ------------------------------------------------------------------------------------------ physics
    def hull_force(self, a: float, b: float, q: float) -> Tuple[float, float, float]:
        """(X [N], Y [N], N [N m]) of the water on the hull moving at surge a, sway b [m/s] and yaw rate q
        [rad/s] through it (propellers and environment excluded)."""
        h, low, L, qs = self._hull, self.params.low_speed, self._L, self._q
        x_f, y_f, n_m = low.x_u * a, low.y_v * b, low.n_r * q
        k_r = qs * h["r_0"]
        for y in self._hull_y:                        # each demihull's resistance at its own surge speed
            ui = a - y * q
            xi = -k_r * abs(ui) * ui * (1.0 if ui >= 0.0 else low.astern_resistance_factor)
            x_f += xi
            n_m -= y * xi
        speed2 = a * a + b * b
        speed = math.sqrt(speed2)
        w = 0.0
        if speed > low.blend_low_mps:
            w = (_smoothstep((speed - low.blend_low_mps) / (low.blend_high_mps - low.blend_low_mps))
                 * _smoothstep(2.0 * a / speed) * _smoothstep(2.0 - abs(q) * L / (speed * low.r_prime_max)))
        if w > 0.0:
            vp, rp = b / speed, q * L / speed
            vc = max(-low.v_prime_max, min(low.v_prime_max, vp))
            rc = max(-low.r_prime_max, min(low.r_prime_max, rp))
            vc2, rc2 = vc * vc, rc * rc
            xh = h["x_vv"] * vc2 + h["x_vr"] * vc * rc + h["x_rr"] * rc2 + h["x_vvvv"] * vc2 * vc2
            yh = (h["y_v"] * vp + h["y_r"] * rp + h["y_vvv"] * vc2 * vc + h["y_vvr"] * vc2 * rc
                  + h["y_vrr"] * vc * rc2 + h["y_rrr"] * rc2 * rc)
            nh = (h["n_v"] * vp + h["n_r"] * rp + h["n_vvv"] * vc2 * vc + h["n_vvr"] * vc2 * rc
                  + h["n_vrr"] * vc * rc2 + h["n_rrr"] * rc2 * rc)
            f = w * qs * speed2
            x_f += f * xh
            y_f += f * yh
            n_m += f * L * nh
        if w < 1.0:
            ycf = ncf = 0.0
            for x, wt in zip(self._xs, self._ws):
                lat = b + x * q
                g = wt * abs(lat) * lat
                ycf += g
                ncf += x * g
            rest = 1.0 - w
            y_f -= rest * self._cf * ycf
            n_m -= rest * (self._cf * ncf + (self.m22 - self.m11) * a * b)
        return x_f, y_f, n_m

    def propeller_thrust(self, shaft_rps: float, surge_mps: float) -> float:
        """Thrust [N, + forward] of one propeller turning at shaft_rps [rev/s] where the water passes it at
        surge_mps [m/s, the hull's local surge through the water, before the wake fraction]."""
        if shaft_rps == 0.0:
            return 0.0
        prop = self.params.propellers
        u_p = (1.0 - prop.wake_fraction) * surge_mps
        n_d = abs(shaft_rps) * prop.diameter_m
        if shaft_rps > 0.0:
            j = max(J_MIN, min(J_MAX, u_p / n_d))
            return self._rho_d4 * shaft_rps * shaft_rps * (prop.k0 + prop.k1 * j + prop.k2 * j * j)
        j = max(J_MIN, min(J_MAX, -u_p / n_d))
        kt = prop.reverse_kt_factor * (prop.k0 + prop.k1 * j + prop.k2 * j * j)
        return -self._rho_d4 * shaft_rps * shaft_rps * kt

    def _rk4(self, state, dt, env_force, shaft, current, orbital):
        x_e, y_e, n_e = env_force
        cn, ce = current
        wu, wv, wr = orbital
        m11, m22, m33 = self.m11, self.m22, self.m33
        keep = 1.0 - self.params.propellers.thrust_deduction
        props = tuple(zip(self._prop_y, shaft))
        cos, sin = math.cos, math.sin

        def f(psi, u, v, r):
            a, b, q = u - wu, v - wv, r - wr
            xh, yh, nh = self.hull_force(a, b, q)
            xp = np_ = 0.0
            for y, n_rps in props:
                t = self.propeller_thrust(n_rps, a - y * q)
                xp += t
                np_ -= y * t
            c, s = cos(psi), sin(psi)
            return (c * u - s * v + cn, s * u + c * v + ce, r,
                    (m22 * b * q + xh + keep * xp + x_e) / m11,
                    (-m11 * a * q + yh + y_e) / m22,
                    (nh + keep * np_ + n_e) / m33)

        n0, e0, p0, u0, v0, r0 = state
        h = 0.5 * dt
        a1, b1, c1, d1, e1, f1 = f(p0, u0, v0, r0)
        a2, b2, c2, d2, e2, f2 = f(p0 + h * c1, u0 + h * d1, v0 + h * e1, r0 + h * f1)
        a3, b3, c3, d3, e3, f3 = f(p0 + h * c2, u0 + h * d2, v0 + h * e2, r0 + h * f2)
        a4, b4, c4, d4, e4, f4 = f(p0 + dt * c3, u0 + dt * d3, v0 + dt * e3, r0 + dt * f3)
        k = dt / 6.0
        return (n0 + k * (a1 + 2.0 * (a2 + a3) + a4), e0 + k * (b1 + 2.0 * (b2 + b3) + b4),
                p0 + k * (c1 + 2.0 * (c2 + c3) + c4), u0 + k * (d1 + 2.0 * (d2 + d3) + d4),
                v0 + k * (e1 + 2.0 * (e2 + e3) + e4), r0 + k * (f1 + 2.0 * (f2 + f3) + f4))

    def _make_truth(self, u_prev: float, v_prev: float) -> Truth:
        n, e, psi, ur, vr, r = self._state
        t = self._k * self.dt_s
        cn, ce = self._current.velocity_ned(t)
        c, s = math.cos(psi), math.sin(psi)
        u, v = ur + cn * c + ce * s, vr - cn * s + ce * c
        du, dv = (0.0, 0.0) if self._k == 0 else ((u - u_prev) / self.dt_s, (v - v_prev) / self.dt_s)
        thrust = tuple(self.propeller_thrust(n_rps, ur - y * r) for y, n_rps in zip(self._prop_y, self._shaft_rps))
        return Truth(t, n, e, wrap_pi(psi), u, v, r, du, dv, thrust)
