"""The simulated vessel: hull dynamics, thrusters, wind, current and waves, stepped on a fixed time grid.

Ground truth lives here and only here (`Plant.truth`); the autopilot sees it only through the sensor models.

Thrusters push along body +x at their configured (x_m, y_m) in FRD, thrust positive forward. Each follows its
demand through a first-order lag (time_constant_s), discretised exactly per step; the plant applies the lag's
mean over the step. Surge force = sum T_i, yaw moment N = sum (x_i * 0 - y_i * T_i): forward thrust on a
starboard thruster (y > 0) turns the boat to port (N < 0). Any finite demand is accepted (saturation belongs to
the thrust maps).

Azimuth pods (thrusters with an `azimuth` block) push along their actual angle a_i (from +x, positive to
starboard): force T_i (cos a_i, sin a_i), moment T_i (x_i sin a_i - y_i cos a_i). The actual angle follows the
commanded one (clamped to +-max_deg) through a first-order lag (azimuth.time_constant_s) whose rate is limited
to slew_dps; a step uses the angle at its start. Without a commanded angle the pods hold theirs.

`PlantModel` is the seam the runner sees: anything with `truth` and `step_to(t_s, thrust_n)` can be the boat
(a published hull model, a CFD fit); `Plant` is the built-in one. It is built from the plant's own vessel
description, which may differ from the autopilot's vessel file (hil.sim.plant_spec: mismatch factors and the
extras a diagonal model leaves out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Protocol, Sequence, Tuple, cast, runtime_checkable

import numpy as np

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import AzimuthConfig, VesselConfig
from hil.sim.dynamics import HullDynamics
from hil.sim.environment import CurrentField, EnvironmentConfig, GustProcess, WaveField, WindLoad
from hil.sim.plant_spec import PlantExtras


@dataclass(frozen=True)
class Truth:
    """The true state of the simulated vessel at `time_s`. Never fed to the autopilot directly."""

    time_s: float
    north_m: float                # CG position in the local NED frame [m]
    east_m: float
    heading_rad: float            # clockwise from true north, wrapped to [-pi, pi)
    surge_mps: float              # velocity over ground in body FRD [m/s]
    sway_mps: float
    yaw_rate_rps: float           # positive turning to starboard [rad/s]
    surge_accel_mps2: float       # d/dt of surge_mps and sway_mps (body components), mean over the last step
    sway_accel_mps2: float        # [m/s^2]; the inertial acceleration is (du/dt - r v, dv/dt + r u)
    thrust_n: tuple               # actual (lagged) thrust per thruster, vessel config order [N]
    roll_rad: float = 0.0         # starboard down positive; reaches the IMU (the 3-DOF motion ignores it)
    pitch_rad: float = 0.0        # bow up positive
    roll_rate_rps: float = 0.0
    pitch_rate_rps: float = 0.0
    angle_rad: tuple = ()         # actual pod angles (azimuth thrusters), + = thrust toward starboard [rad]

    @property
    def speed_mps(self) -> float:
        return math.hypot(self.surge_mps, self.sway_mps)

    @property
    def velocity_ned_mps(self) -> Tuple[float, float]:
        """(north, east) velocity over ground [m/s]."""
        c, s = math.cos(self.heading_rad), math.sin(self.heading_rad)
        return c * self.surge_mps - s * self.sway_mps, s * self.surge_mps + c * self.sway_mps


@runtime_checkable
class PlantModel(Protocol):
    """What the simulator needs of a boat. Implement these two members to fly the autopilot on your own hull.

    `truth` is the current true state (a Truth). `step_to(t_s, thrust_n)` holds the per-thruster thrust demand
    thrust_n [N, vessel config order, forward positive] from the plant's time up to t_s [s] (never earlier
    than the last call) and returns the Truth at t_s (or the last internal time step at or before it).
    `angle_rad` is the pods' commanded angle [rad, + = thrust toward starboard] for azimuth thrusters, None for
    fixed ones (a model of a fixed-thruster boat may ignore it).
    """

    @property
    def truth(self) -> Truth: ...

    def step_to(self, t_s: float, thrust_n: Sequence[float], angle_rad: Optional[Sequence[float]] = None
                ) -> Truth: ...


class Plant:
    """A vessel in its environment, integrated with fixed RK4 steps of dt_s.

    `step_to(t_s, thrust_demand_n)` holds the demand from the current time to t_s and integrates whole steps
    on the grid k * dt_s, so the truth time is the last grid point <= t_s (a t_s within a millionth of a step
    below a grid point counts as on it). Within a step, thrust (lag mean), wind (with gusts), waves and current
    are held; the hydrodynamics are integrated by RK4 (hil.sim.dynamics).
    The boat starts at the given position and heading, moving at `surge_mps` over ground with no sway or
    yaw rate. Deterministic: the same vessel, environment, seed and call sequence give the same trajectory.

    `extras` adds what a vessel file's diagonal model leaves out (hil.sim.plant_spec.PlantExtras); `thrust_scale`
    (per thruster) makes a thruster push more or less than its demand, as a real one does against its table.
    """

    def __init__(self, vessel: VesselConfig, env: EnvironmentConfig, seed: int,
                 north_m: float, east_m: float, heading_rad: float, dt_s: float = 0.01, surge_mps: float = 0.0,
                 extras: Optional[PlantExtras] = None, thrust_scale: Optional[Sequence[float]] = None):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        if not (isinstance(dt_s, (int, float)) and 0.0 < dt_s <= 0.01 + 1e-12):
            raise ValueError(f"dt_s: must be in (0, 0.01] s (at least 100 Hz), got {dt_s!r}")
        for name, value in (("north_m", north_m), ("east_m", east_m), ("heading_rad", heading_rad),
                            ("surge_mps", surge_mps)):
            if not math.isfinite(value):
                raise ValueError(f"{name}: must be finite, got {value!r}")
        self.vessel, self.env, self.seed, self.dt_s = vessel, env, int(seed), float(dt_s)
        ex = extras or PlantExtras()
        self.extras = ex
        self._hull = HullDynamics.for_vessel(vessel, x_g_m=ex.x_g_m, y_rdot=ex.y_rdot, y_r=ex.y_r, n_v=ex.n_v)
        self._wind = WindLoad.for_vessel(vessel)
        rng_waves, rng_gust, rng_current = (np.random.default_rng([self.seed, k]) for k in (1, 2, 3))
        self._waves = WaveField(env, vessel.hull.length_m, vessel.hull.beam_m, self._hull.m11, self._hull.m22,
                                rng_waves)
        self._gust = GustProcess(env.wind_speed_mps, env.gust_std_mps, env.gust_tau_s, self.dt_s, rng_gust)
        self._current = CurrentField(env, rng_current)
        to_rad = math.radians(env.wind_from_deg) + math.pi          # the direction the air moves toward
        self._wind_dir = (math.cos(to_rad), math.sin(to_rad))
        self._calm_air = env.wind_speed_mps == 0.0 and env.gust_std_mps == 0.0

        thrusters = vessel.thrusters
        self._n_thr = len(thrusters)
        self._arm_y = tuple(-t.y_m for t in thrusters)             # yaw moment per newton of thrust
        lag = [math.exp(-self.dt_s / t.time_constant_s) if t.time_constant_s > 0 else 0.0 for t in thrusters]
        self._lag_end = tuple(lag)                                 # T(dt) = Td + (T0 - Td) * lag_end
        self._lag_mean = tuple((t.time_constant_s / self.dt_s) * (1.0 - a) if t.time_constant_s > 0 else 0.0
                               for t, a in zip(thrusters, lag))   # mean over the step, same form
        self._thrust = [0.0] * self._n_thr
        pods = [t.azimuth for t in thrusters]
        self._pods = all(p is not None for p in pods)
        if self._pods:
            azimuths = cast(List[AzimuthConfig], pods)      # none is None (self._pods)
            self._arm_x = tuple(t.x_m for t in thrusters)
            self._arm_y_pod = tuple(t.y_m for t in thrusters)
            self._angle_max = tuple(math.radians(p.max_deg) for p in azimuths)
            self._angle_slew = tuple(math.radians(p.slew_dps) * self.dt_s for p in azimuths)   # per step [rad]
            self._angle_gain = tuple(1.0 - math.exp(-self.dt_s / p.time_constant_s) if p.time_constant_s > 0
                                     else 1.0 for p in azimuths)
        self._angle = [0.0] * self._n_thr
        self._angle_cmd = [0.0] * self._n_thr
        scale = tuple(thrust_scale) if thrust_scale else (1.0,) * self._n_thr
        if len(scale) != self._n_thr or not all(math.isfinite(x) and x >= 0.0 for x in scale):
            raise ValueError(f"thrust_scale: expected {self._n_thr} finite factors >= 0, got {scale!r}")
        self._thrust_scale = scale
        toward = math.radians(ex.force_toward_deg)
        self._force_ne = (ex.force_n * math.cos(toward), ex.force_n * math.sin(toward))
        self._trim = (math.radians(ex.trim_roll_deg), math.radians(ex.trim_pitch_deg))
        # (surge N, sway N, yaw N m) in body axes, held from step to step, set by a layer above the plant
        # (hil.sim.model_following's sway force); not a thruster, so no lag and no limit
        self.body_force = (0.0, 0.0, 0.0)

        self._k = 0                                                # steps taken; time = k * dt
        cn, ce = self._current.velocity_ned(0.0)
        psi = float(heading_rad)
        c, s = math.cos(psi), math.sin(psi)
        # Start with the given surge over ground and no sway or yaw rate over ground.
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
    def water_velocity(self) -> Tuple[float, float, float]:
        """(u_r, v_r, r): surge and sway through the water [m/s] and yaw rate [rad/s], body FRD, now."""
        return self._state[3], self._state[4], self._state[5]

    def current_ned(self, t_s: float) -> Tuple[float, float]:
        """(north, east) velocity of the water over ground [m/s] at time t_s, as the plant sees it."""
        return self._current.velocity_ned(t_s)

    def step_to(self, t_s: float, thrust_demand_n: Sequence[float],
                angle_rad: Optional[Sequence[float]] = None) -> Truth:
        """Hold `thrust_demand_n` (N per thruster, config order) and, for pods, the commanded angles `angle_rad`
        [rad] (None: keep the last command), and integrate up to t_s; return the truth.

        Raises ValueError if t_s lies before the current time, the demand or angles have the wrong length or
        are not finite, or angles are given to a boat without pods. Calling with t_s equal to the current time
        only records nothing new and returns the truth.
        """
        if angle_rad is not None:
            if not self._pods:
                raise ValueError(f"angle_rad: vessel {self.vessel.name!r} has no azimuth thrusters to turn")
            if len(angle_rad) != self._n_thr or not all(map(math.isfinite, angle_rad)):
                raise ValueError(f"angle_rad: expected {self._n_thr} finite angles, got {tuple(angle_rad)}")
            self._angle_cmd = [max(-m, min(m, float(a))) for a, m in zip(angle_rad, self._angle_max)]
        if len(thrust_demand_n) != self._n_thr:
            raise ValueError(f"thrust_demand_n: expected {self._n_thr} values (one per thruster), "
                             f"got {len(thrust_demand_n)}")
        demand = [float(x) * k for x, k in zip(thrust_demand_n, self._thrust_scale)]
        if not all(map(math.isfinite, demand)):
            raise ValueError(f"thrust_demand_n: values must be finite, got {tuple(thrust_demand_n)}")
        dt = self.dt_s
        target = int(math.floor(t_s / dt + 1e-6))
        if target < self._k:
            if t_s < self.time_s - 1e-9:
                raise ValueError(f"t_s: {t_s} s lies before the plant's time {self.time_s} s")
            target = self._k
        steps = target - self._k
        if steps == 0:
            return self._truth

        hull, waves, wind, gust, current = self._hull, self._waves, self._wind, self._gust, self._current
        thrust, lag_end, lag_mean, arm_y = self._thrust, self._lag_end, self._lag_mean, self._arm_y
        calm_air = self._calm_air
        pods, angle, angle_cmd = self._pods, self._angle, self._angle_cmd
        if pods:
            arm_x, arm_yp, angle_gain, angle_slew = self._arm_x, self._arm_y_pod, self._angle_gain, self._angle_slew
        wind_n, wind_e = self._wind_dir
        force_n, force_e = self._force_ne
        external = force_n != 0.0 or force_e != 0.0
        state = self._state
        k = self._k
        u_prev = v_prev = 0.0
        for _ in range(steps):
            t_mid = (k + 0.5) * dt
            # Thrusters: exact first-order lag; the step sees the mean thrust over it.
            surge_n = sway_n = yaw_nm = 0.0
            for i in range(self._n_thr):
                td = demand[i]
                t0 = thrust[i]
                mean = td + (t0 - td) * lag_mean[i]
                thrust[i] = td + (t0 - td) * lag_end[i]
                if pods:
                    a = angle[i]
                    ca, sa = math.cos(a), math.sin(a)
                    surge_n += mean * ca
                    sway_n += mean * sa
                    yaw_nm += mean * (arm_x[i] * sa - arm_yp[i] * ca)
                    move = (angle_cmd[i] - a) * angle_gain[i]
                    slew = angle_slew[i]
                    angle[i] = a + (slew if move > slew else -slew if move < -slew else move)
                else:
                    surge_n += mean
                    yaw_nm += arm_y[i] * mean
            n, e, psi, ur, vr, r = state
            cn, ce = current.velocity_ned(t_mid)
            c, s = math.cos(psi), math.sin(psi)
            u_c, v_c = cn * c + ce * s, -cn * s + ce * c
            u_prev, v_prev = ur + u_c, vr + v_c                    # ground velocity at the start of the step
            bx, by, bn = self.body_force
            x_n, y_n, n_nm = surge_n + bx, sway_n + by, yaw_nm + bn
            if external:
                x_n += c * force_n + s * force_e
                y_n += -s * force_n + c * force_e
            if not calm_air:
                speed = gust.step()
                fx, fy, fz = wind.force_body(u_prev, v_prev, psi, speed * wind_n, speed * wind_e)
                x_n += fx
                y_n += fy
                n_nm += fz
            if waves.calm:
                state = hull.rk4_step(state, dt, x_n, y_n, n_nm, cn, ce)
            else:
                fx, fy, fz, wu, wv, wr = waves.excitation(t_mid, n, e, psi)
                state = hull.rk4_step(state, dt, x_n + fx, y_n + fy, n_nm + fz, cn, ce, wu, wv, wr)
            k += 1
        self._state = (state[0], state[1], wrap_pi(state[2]), state[3], state[4], state[5])
        self._k = k
        self._truth = self._make_truth(u_prev, v_prev)
        return self._truth

    # ------------------------------------------------------------------------------------------ internals
    def _make_truth(self, u_prev: float, v_prev: float) -> Truth:
        n, e, psi, ur, vr, r = self._state
        t = self._k * self.dt_s
        cn, ce = self._current.velocity_ned(t)
        c, s = math.cos(psi), math.sin(psi)
        u = ur + cn * c + ce * s
        v = vr - cn * s + ce * c
        if self._k == 0:
            du = dv = 0.0
        else:
            du, dv = (u - u_prev) / self.dt_s, (v - v_prev) / self.dt_s
        roll, pitch = self._trim
        roll_rate = pitch_rate = 0.0
        if self.extras.wave_motion and not self._waves.calm:
            wr, wp, wrr, wpr = self._waves.slope_attitude(t, n, e, psi)
            roll, pitch, roll_rate, pitch_rate = roll + wr, pitch + wp, wrr, wpr
        return Truth(t, n, e, wrap_pi(psi), u, v, r, du, dv, tuple(self._thrust), roll, pitch, roll_rate, pitch_rate,
                     tuple(self._angle) if self._pods else ())
