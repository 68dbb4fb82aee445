"""Model following (paper 001): make the simulated hull (the plant, e.g. the VRX WAM-V) behave like the
autopilot's vessel file (the reference, e.g. FOKA), so an autopilot tuned for one boat can fly in a world that
only has another.

Chain, per plant step (dt, 100 Hz by default):
  autopilot thrust demand (per reference thruster) -> reference thrusters' first-order lag -> reference wrench
  tau_r = Allocator(reference).wrench_of(thrust) -> reference hull integrated online (hil.sim.dynamics, RK4):
      nu_r_dot = M_r^-1 (tau_r - C_r(nu_r) nu_r - D_r(nu_r) nu_r)
  -> follower (inverse dynamics on the plant's model; surge and yaw):
      Gamma_u = u_r_dot + k_u (u_r - u_s) + k_ui int(u_r - u_s) dt
      Gamma_r = r_r_dot + k_r (r_r - r_s) + k_psi e_psi          e_psi: heading error, wrapped [rad]
      tau_s = M_s Gamma + C_s(nu_s) nu_s + D_s(nu_s) nu_s        (the surge and yaw rows)
  -> Allocator(plant).allocate(tau_s) -> plant thrusters (with their own lag and limits).
The sensors see the plant. The heading and surge-integral terms are additions to paper 001's velocity law
(Gamma = nu_r_dot + K nu~). The plant thrusters' first-order lag is led: the wrench demanded is W + tau dW/dt.

Sway: `sway_force=True` adds the sway row as a body force the plant's thrusters do not give (what a lateral
thruster or a Gazebo force plugin would supply; the figures give its RMS and peak), limited to what the plant's
thrusters give forward together times thrust_limit_scale, with position terms on both axes:
      Gamma_v = v_r_dot + k_v (v_r - v_s) + k_vi int(v_r - v_s) dt + k_y e_y,   Gamma_u += k_x e_x
e_x, e_y: reference position minus the plant's along and across the plant's bow [m]. Without the sway force,
k_x is not applied and the plant's position drifts from the reference's in turns.
Environment: the reference is driven by the thrust only and floats in the same current as the plant; wind and
waves push the plant only (the follower rejects them). The follower's model is the plant's vessel file
(`follower_vessel`), which may differ from the true plant (--mismatch, --plant-extra). Velocities in the law are
through the water; the figures compare ground-referenced states. `follow=False` (the figures' baseline) keeps the
reference running but hands the autopilot's thrust straight to the plant's thrusters, as `--plant-vessel` alone.
Why: docs/design-notes/simulator-and-rims.md, "Model following".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from autopilot.control.allocation import Allocator
from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.types import Wrench
from hil.sim.dynamics import HullDynamics
from hil.sim.plant import Plant, Truth

STATES = ("u", "v", "r", "x", "y", "psi")
POSITION_ERROR_CAP_M = 1.0        # the position terms act on errors clamped to this [m]
STATE_UNITS = {"u": "m/s", "v": "m/s", "r": "rad/s", "x": "m", "y": "m", "psi": "rad"}


@dataclass(frozen=True)
class FollowingSetup:
    """What `hil.sim.runner.SimOptions.model_following` asks for: follow (or only run the reference beside the
    plant, the baseline), the follower's model of the plant (None: the plant's vessel as flown), the gains and
    how far the follower may push the plant's thrusters beyond their vessel-file limits."""

    follow: bool = True
    follower_vessel: Optional[VesselConfig] = None
    gains: Optional["FollowerGains"] = None   # None: FollowerGains()
    thrust_limit_scale: float = 1.0
    sway_force: bool = False         # also drive the plant's sway, by a body force no thruster of it gives


@dataclass(frozen=True)
class FollowerGains:
    """Error-dynamics gains of the follower. Velocity gains [1/s], integral, position and heading gains [1/s^2]:
    with k = 2 w and k_i = w^2 each axis is a critically damped second-order error of natural frequency w; the
    defaults are w = 5 rad/s (the plant thrusters' lag is led, see the module docstring).
    Why: docs/design-notes/simulator-and-rims.md, "Model following"."""

    k_u_per_s: float = 10.0
    k_x_per_s2: float = 25.0         # on the position error along the plant's bow: with the sway force only
    k_ui_per_s2: float = 25.0        # on the integral of the surge error (steady disturbances, model errors)
    k_r_per_s: float = 10.0
    k_psi_per_s2: float = 25.0
    k_v_per_s: float = 10.0          # sway terms: only with the sway force (FollowingSetup.sway_force)
    k_vi_per_s2: float = 25.0
    k_y_per_s2: float = 25.0         # on the position error across the plant's bow: with the sway force only

    def __post_init__(self):
        for name in ("k_u_per_s", "k_x_per_s2", "k_ui_per_s2", "k_r_per_s", "k_psi_per_s2", "k_v_per_s",
                     "k_vi_per_s2", "k_y_per_s2"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
                raise ValueError(f"follower gain {name}: must be finite and >= 0, got {value!r}")


class _ThrusterLag:
    """First-order lag per thruster, discretised exactly: the thrust at the end of a step and its mean over it."""

    def __init__(self, time_constants_s: Sequence[float], dt_s: float):
        self._end = tuple(math.exp(-dt_s / tau) if tau > 0 else 0.0 for tau in time_constants_s)
        self._mean = tuple((tau / dt_s) * (1.0 - a) if tau > 0 else 0.0
                           for tau, a in zip(time_constants_s, self._end))
        self.thrust_n = [0.0] * len(self._end)

    def step(self, demand_n: Sequence[float]) -> list:
        """Advance one step under demand_n [N]; return the mean thrust over the step [N]."""
        mean = []
        for i, td in enumerate(demand_n):
            t0 = self.thrust_n[i]
            mean.append(td + (t0 - td) * self._mean[i])
            self.thrust_n[i] = td + (t0 - td) * self._end[i]
        return mean


class ReferenceModel:
    """The reference vessel's 3-DOF model (its vessel file, diagonal), integrated online from its thrusters'
    demand. State: (north_m, east_m, psi_rad, u_r, v_r, r) with (u_r, v_r) through the water."""

    def __init__(self, vessel: VesselConfig, north_m: float, east_m: float, heading_rad: float,
                 surge_over_ground_mps: float, dt_s: float, current_ned=None):
        from drivers.thrust_map import make_thrust_maps
        self.vessel = vessel
        self.hull = HullDynamics.for_vessel(vessel)
        self.allocator = Allocator(vessel, make_thrust_maps(vessel))
        self.dt_s = float(dt_s)
        self._lag = _ThrusterLag([t.time_constant_s for t in vessel.thrusters], self.dt_s)
        self._current = current_ned or (lambda t_s: (0.0, 0.0))
        cn, ce = self._current(0.0)
        c, s = math.cos(heading_rad), math.sin(heading_rad)
        self.state = (float(north_m), float(east_m), float(heading_rad),
                      surge_over_ground_mps - (cn * c + ce * s), -(-cn * s + ce * c), 0.0)
        self.accel: Tuple[float, ...] = (0.0, 0.0, 0.0)        # mean (u_r, v_r, r) derivative over the last step

    def step(self, t_s: float, thrust_demand_n: Sequence[float]) -> None:
        """Advance one dt from t_s under the per-thruster demand [N, the reference vessel's order]."""
        w = self.allocator.wrench_of(self._lag.step(thrust_demand_n))
        cn, ce = self._current(t_s + 0.5 * self.dt_s)
        old = self.state
        new = self.hull.rk4_step(old, self.dt_s, w.surge_n, 0.0, w.yaw_nm, cn, ce)
        self.state = (new[0], new[1], wrap_pi(new[2]), new[3], new[4], new[5])
        self.accel = tuple((b - a) / self.dt_s for a, b in zip(old[3:], new[3:]))

    def ground_state(self, t_s: float) -> Tuple[float, ...]:
        """(u, v, r, north, east, psi): velocities over ground in body axes [m/s, rad/s], position [m], heading."""
        n, e, psi, ur, vr, r = self.state
        cn, ce = self._current(t_s)
        c, s = math.cos(psi), math.sin(psi)
        return ur + cn * c + ce * s, vr - cn * s + ce * c, r, n, e, psi


class FollowerLaw:
    """Inverse dynamics on the plant's model: (reference and plant states) -> the plant's body force."""

    def __init__(self, hull: HullDynamics, gains: FollowerGains = FollowerGains()):
        self.hull, self.gains = hull, gains

    def force(self, ref_nu: Sequence[float], ref_nu_dot: Sequence[float], plant_nu: Sequence[float],
              heading_error_rad: float, error_integral_m: Sequence[float] = (0.0, 0.0),
              along_error_m: float = 0.0, sway: bool = False,
              across_error_m: float = 0.0) -> Tuple[float, float, float]:
        """ref_nu, plant_nu: (u, v, r) through the water [m/s, m/s, rad/s]; ref_nu_dot its derivative;
        heading_error_rad: reference heading minus the plant's, wrapped; error_integral_m: time integrals of the
        reference surge and sway minus the plant's [m]; along_error_m: reference position minus the plant's
        along the plant's bow [m], across_error_m the same to starboard. Returns (surge force [N], sway force
        [N], yaw moment [N m]), unlimited; the sway force is 0 unless `sway` (the plant's thrusters cannot give
        one)."""
        h, g = self.hull, self.gains
        u, v, r = plant_nu
        gamma_u = (ref_nu_dot[0] + g.k_u_per_s * (ref_nu[0] - u) + g.k_ui_per_s2 * error_integral_m[0]
                   + (g.k_x_per_s2 * along_error_m if sway else 0.0))
        gamma_r = ref_nu_dot[2] + g.k_r_per_s * (ref_nu[2] - r) + g.k_psi_per_s2 * heading_error_rad
        gamma_v = (ref_nu_dot[1] + g.k_v_per_s * (ref_nu[1] - v) + g.k_vi_per_s2 * error_integral_m[1]
                   + g.k_y_per_s2 * across_error_m if sway else 0.0)
        surge = h.m11 * gamma_u - (h.m22 * v + h.m23 * r) * r + (h.d_u + h.d_uu * abs(u)) * u
        yaw = (h.m23 * gamma_v + h.m33 * gamma_r + (h.m22 - h.m11) * u * v + h.m23 * u * r
               + (h.d_r + h.d_rr * abs(r)) * r + h.d_rv * v)
        side = (h.m22 * gamma_v + h.m23 * gamma_r + h.m11 * u * r + (h.d_v + h.d_vv * abs(v)) * v + h.d_vr * r
                if sway else 0.0)
        return surge, side, yaw


class ModelFollowingPlant:
    """A hil.sim.plant.PlantModel: the built-in Plant (the simulated hull) made to follow the reference vessel.

    `step_to(t_s, thrust_demand_n)` takes the autopilot's per-thruster demand for its own (reference) vessel
    and returns the plant's Truth. Every call records the reference and the plant for `figures()`.
    """

    def __init__(self, plant: Plant, reference_vessel: VesselConfig, follower_vessel: Optional[VesselConfig] = None,
                 follow: bool = True, gains: FollowerGains = FollowerGains(), thrust_limit_scale: float = 1.0,
                 sway_force: bool = False):
        from drivers.thrust_map import make_thrust_maps
        if len(reference_vessel.thrusters) != len(plant.vessel.thrusters) and not follow:
            raise ValueError("model following: without following, the plant needs as many thrusters as the "
                             f"reference ({len(plant.vessel.thrusters)} vs {len(reference_vessel.thrusters)})")
        self.plant, self.follow = plant, bool(follow)
        model = follower_vessel or plant.vessel
        self.law = FollowerLaw(HullDynamics.for_vessel(model), gains)
        self.plant_allocator = Allocator(_scaled_limits(plant.vessel, thrust_limit_scale),
                                         make_thrust_maps(_scaled_limits(plant.vessel, thrust_limit_scale)))
        taus = [t.time_constant_s for t in model.thrusters]
        self._lead_s = sum(taus) / len(taus)      # the plant thrusters' lag, led by the demand
        self._want_prev: Optional[Tuple[float, float, float]] = None     # the last (surge, sway, yaw) wanted
        self._integral_m = [0.0, 0.0]     # time integrals of the surge and sway errors
        self._was_limited = False
        self.sway_force = bool(sway_force) and self.follow
        self._sway_sq, self._sway_max = 0.0, 0.0
        # as strong as the (scaled) stern thrusters pushing forward together: a lateral thruster of that size
        self._sway_limit_n = self.plant_allocator.max_surge_n
        self._sway_limited = False
        t0 = plant.truth
        self.reference = ReferenceModel(reference_vessel, t0.north_m, t0.east_m, t0.heading_rad, t0.surge_mps,
                                        plant.dt_s, current_ned=plant.current_ned)
        self._n_ref = len(reference_vessel.thrusters)
        self._steps = 0
        self._limited = 0                 # steps where the plant's thrusters could not give the follower's wrench
        self._log: list = []              # per call: (t, reference u v r x y psi, plant u v r x y psi)

    @property
    def truth(self) -> Truth:
        return self.plant.truth

    def step_to(self, t_s: float, thrust_demand_n: Sequence[float],
                angle_rad: Optional[Sequence[float]] = None) -> Truth:
        if angle_rad is not None:
            raise ValueError("model following drives fixed thrusters: no pod angles")
        if len(thrust_demand_n) != self._n_ref:
            raise ValueError(f"thrust_demand_n: expected {self._n_ref} values (one per thruster), "
                             f"got {len(thrust_demand_n)}")
        demand = [float(x) for x in thrust_demand_n]
        if not all(map(math.isfinite, demand)):
            raise ValueError(f"thrust_demand_n: values must be finite, got {tuple(thrust_demand_n)}")
        plant, ref, dt = self.plant, self.reference, self.plant.dt_s
        target = int(math.floor(t_s / dt + 1e-6))
        k = int(round(plant.time_s / dt))
        if t_s < plant.time_s - 1e-9:
            raise ValueError(f"t_s: {t_s} s lies before the plant's time {plant.time_s} s")
        command: Sequence[float]
        while k < target:
            t_k = k * dt
            ref_nu = ref.state[3:]
            ref_pose = ref.state[:3]
            ref.step(t_k, demand)
            if self.follow:
                command = self._follower_thrust(ref_nu, ref.accel, ref_pose)
            else:
                command = demand
            plant.step_to((k + 1) * dt, command)
            k += 1
            self._steps += 1
        truth = plant.truth
        self._log.append((truth.time_s, *ref.ground_state(truth.time_s), truth.surge_mps, truth.sway_mps,
                          truth.yaw_rate_rps, truth.north_m, truth.east_m, truth.heading_rad))
        return truth

    def _follower_thrust(self, ref_nu, ref_accel, ref_pose) -> tuple:
        s = self.plant
        n, e, psi = s.truth.north_m, s.truth.east_m, s.truth.heading_rad
        c, sn = math.cos(psi), math.sin(psi)
        along, across = c * (ref_pose[0] - n) + sn * (ref_pose[1] - e), -sn * (ref_pose[0] - n) + c * (ref_pose[1] - e)
        # bounded, so that a gap the thrusters could not close (at their limits) is not a huge demand later
        along = max(-POSITION_ERROR_CAP_M, min(POSITION_ERROR_CAP_M, along))
        across = max(-POSITION_ERROR_CAP_M, min(POSITION_ERROR_CAP_M, across))
        nu = s.water_velocity
        if not self._was_limited:         # conditional integration: no wind-up while the thrusters are at a limit
            self._integral_m[0] += (ref_nu[0] - nu[0]) * s.dt_s
        if self.sway_force and not self._sway_limited:
            self._integral_m[1] += (ref_nu[1] - nu[1]) * s.dt_s
        want = self.law.force(ref_nu, ref_accel, nu, wrap_pi(ref_pose[2] - psi), self._integral_m, along,
                              self.sway_force, across)
        prev, self._want_prev = self._want_prev, want
        if prev is not None and self._lead_s > 0.0:
            # lead the first-order thruster lag: demand = wanted + tau d(wanted)/dt (the sway force has no lag)
            k = self._lead_s / s.dt_s
            want = (want[0] + k * (want[0] - prev[0]), want[1], want[2] + k * (want[2] - prev[2]))
        if self.sway_force:
            side = max(-self._sway_limit_n, min(self._sway_limit_n, want[1]))
            self._sway_limited = side != want[1]
            s.body_force = (0.0, side, 0.0)
            self._sway_sq += side * side
            self._sway_max = max(self._sway_max, abs(side))
        wrench = Wrench(want[0], want[2])
        cmd = self.plant_allocator.allocate(wrench).thrust_n
        got = self.plant_allocator.wrench_of(cmd)
        if (abs(got.surge_n - wrench.surge_n) > 0.01 * abs(wrench.surge_n) + 1e-6
                or abs(got.yaw_nm - wrench.yaw_nm) > 0.01 * abs(wrench.yaw_nm) + 1e-6):
            self._limited += 1
            self._was_limited = True
        else:
            self._was_limited = False
        return cmd

    def figures(self) -> dict:
        """RMSE, MAE and R^2 of the plant against the reference for u, v [m/s], r [rad/s], x (north), y (east)
        [m] and psi [rad], over every recorded call; plus how often the plant's thrusters limited the follower."""
        out = {"following": self.follow, "reference_vessel": self.reference.vessel.name,
               "plant_vessel": self.plant.vessel.name, "samples": len(self._log),
               "thrust_limited_frac": round(self._limited / self._steps, 4) if self._steps and self.follow else None,
               "sway_force": self.sway_force,
               "sway_force_rms_n": (round(math.sqrt(self._sway_sq / self._steps), 2)
                                    if self._steps and self.sway_force else None),
               "sway_force_max_n": round(self._sway_max, 2) if self.sway_force else None,
               "units": dict(STATE_UNITS)}
        out.update(state_errors(np.array(self._log).reshape(-1, 13)))
        return out


def _scaled_limits(vessel: VesselConfig, scale: float) -> VesselConfig:
    """The vessel with every thruster's forward and reverse limit times `scale` (the simulator's thrusters are
    force inputs; a follower may be allowed more than the real boat's)."""
    import dataclasses
    if not (math.isfinite(scale) and 0.0 < scale <= 100.0):
        raise ValueError(f"model following thrust_limit_scale: must be in (0, 100], got {scale!r}")
    if scale == 1.0:
        return vessel
    return dataclasses.replace(vessel, thrusters=tuple(
        dataclasses.replace(t, max_forward_n=t.max_forward_n * scale, max_reverse_n=t.max_reverse_n * scale)
        for t in vessel.thrusters))


def state_errors(log: np.ndarray) -> dict:
    """{state: {rmse, mae, r2}} from rows (t, reference u v r x y psi, plant u v r x y psi); psi differences are
    wrapped, and the reference heading unwrapped for its variance. R^2 = 1 - SS_res / SS_tot(reference)."""
    out = {}
    if len(log) == 0:
        return {name: {"rmse": None, "mae": None, "r2": None} for name in STATES}
    for i, name in enumerate(STATES):
        ref, got = log[:, 1 + i], log[:, 7 + i]
        if name == "psi":
            err = np.remainder(ref - got + math.pi, 2.0 * math.pi) - math.pi
            ref = np.unwrap(ref)
        else:
            err = ref - got
        ss_tot = float(np.sum((ref - ref.mean()) ** 2))
        ss_res = float(np.sum(err * err))
        out[name] = {"rmse": round(float(np.sqrt(np.mean(err * err))), 5),
                     "mae": round(float(np.mean(np.abs(err))), 5),
                     "r2": round(1.0 - ss_res / ss_tot, 5) if ss_tot > 0 else None}
    return out


def reduction_pct(with_following: dict, without: dict) -> dict:
    """Per state, how much following cut RMSE and MAE against the run without it [%]."""
    out = {}
    for name in STATES:
        a, b = with_following.get(name, {}), without.get(name, {})
        out[name] = {m: (round(100.0 * (1.0 - a[m] / b[m]), 2) if a.get(m) is not None and b.get(m) else None)
                     for m in ("rmse", "mae")}
    return out
