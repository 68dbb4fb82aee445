"""The navigation EKF's process model: the vessel's 3-DOF Fossen model with a constant water current.

State vector x (column, shape (N_STATES, 1) = (11, 1)), NED/FRD, SI units:

    0, 1 north_m, east_m   position of the centre of gravity
    2 heading_rad  clockwise from true north (kept wrapped to [-pi, pi))
    3 u_mps        surge speed relative to the water
    4 v_mps        sway speed relative to the water (+ to starboard)
    5 r_rps        yaw rate (+ turning to starboard)
    6 gyro_bias_rps  gyro z bias: gyro reads r + bias
    7, 8 current_n_mps, current_e_mps   water current, NED
    9 surge_drag_error       model error: the surge damping is (1 + this) times the vessel file's
   10 yaw_accel_bias_rps2    model error: the yaw acceleration the vessel file does not explain

Kinematics: north_dot = u cos(psi) - v sin(psi) + c_n, east_dot = u sin(psi) + v cos(psi) + c_e, psi_dot = r.
Kinetics (Fossen, irrotational constant current, so the whole model is written in relative velocity):
    m11 u_dot = X + m22 v r + (1 + k_d) (X_u u + X_uu |u| u)
    m22 v_dot = -m11 u r + Y_v v + Y_vv |v| v
    m33 r_dot = N - (m22 - m11) u v + N_r r + N_rr |r| r  + m33 b_r
with m11 = m - X_udot, m22 = m - Y_vdot, m33 = Iz - N_rdot, X = sum T_i, N = -sum y_i T_i.
k_d and b_r are slow random walks the filter estimates: k_d scales the surge damping (it absorbs a wrong drag
and, at steady speed, a wrong thrust table alike), b_r is the yaw moment per unit inertia the file does not
explain. Their process noise grows only while the innovations show the model is wrong
(estimation.navekf.model_consistency).
When the thrust is unknown, surge speed and yaw rate are held constant (no damping, no forcing) with raised
process noise, so GNSS velocity and the gyro carry them; sway keeps its hull dynamics.

Why: docs/design-notes/estimation-and-drivers.md, "The EKF".
"""
from __future__ import annotations

import math

import numpy as np

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import VesselConfig

N_STATES = 11
IX_N, IX_E, IX_PSI, IX_U, IX_V, IX_R, IX_BIAS, IX_CN, IX_CE, IX_KD, IX_BR = range(N_STATES)


class VesselProcessModel:
    """Euler-discretised process model and its Jacobian, with preallocated work arrays.

    `propagate(x, dt_s, surge_n, yaw_nm, known_thrust, F)` advances x in place by dt_s and writes the
    state-transition Jacobian (evaluated before the step) into F. Call with dt_s <= MAX_STEP_S for accuracy;
    NavigationEKF sub-steps longer intervals.
    """

    MAX_STEP_S = 0.05

    def __init__(self, vessel: VesselConfig):
        h = vessel.hull
        self.m11 = h.mass_kg - h.x_udot
        self.m22 = h.mass_kg - h.y_vdot
        self.m33 = h.iz_kgm2 - h.n_rdot
        self.x_u, self.x_uu = h.x_u, h.x_uu
        self.y_v, self.y_vv = h.y_v, h.y_vv
        self.n_r, self.n_rr = h.n_r, h.n_rr
        self.thruster_y_m = [float(t.y_m) for t in vessel.thrusters]
        self.thruster_x_m = [float(t.x_m) for t in vessel.thrusters]
        self.thruster_tau_s = [float(t.time_constant_s) for t in vessel.thrusters]
        self.u_dot = 0.0          # relative-velocity accelerations of the last propagate [m/s^2]
        self.v_dot = 0.0

    def propagate(self, x: np.ndarray, dt_s: float, surge_n: float, yaw_nm: float, known_thrust: bool,
                  F: np.ndarray) -> None:
        psi = x[IX_PSI, 0]
        u = x[IX_U, 0]
        v = x[IX_V, 0]
        r = x[IX_R, 0]
        c = math.cos(psi)
        s = math.sin(psi)
        m11, m22, m33 = self.m11, self.m22, self.m33

        # Jacobian F = I + A dt (entries that are never touched stay at their identity values)
        F[IX_N, IX_PSI] = (-u * s - v * c) * dt_s
        F[IX_N, IX_U] = c * dt_s
        F[IX_N, IX_V] = -s * dt_s
        F[IX_N, IX_CN] = dt_s
        F[IX_E, IX_PSI] = (u * c - v * s) * dt_s
        F[IX_E, IX_U] = s * dt_s
        F[IX_E, IX_V] = c * dt_s
        F[IX_E, IX_CE] = dt_s
        F[IX_PSI, IX_R] = dt_s

        av = abs(v)
        # sway is never driven by the thrusters: its dynamics hold whether the thrust is known or not
        v_dot = (-m11 * u * r + self.y_v * v + self.y_vv * av * v) / m22
        F[IX_V, IX_U] = -m11 * r / m22 * dt_s
        F[IX_V, IX_V] = 1.0 + (self.y_v + 2.0 * self.y_vv * av) / m22 * dt_s
        F[IX_V, IX_R] = -m11 * u / m22 * dt_s
        if known_thrust:
            au, ar = abs(u), abs(r)
            kd = max(0.2, 1.0 + x[IX_KD, 0])     # a drag cannot vanish or turn into thrust
            damping = self.x_u * u + self.x_uu * au * u
            u_dot = (surge_n + m22 * v * r + kd * damping) / m11
            r_dot = (yaw_nm - (m22 - m11) * u * v + self.n_r * r + self.n_rr * ar * r) / m33 + x[IX_BR, 0]
            F[IX_U, IX_U] = 1.0 + kd * (self.x_u + 2.0 * self.x_uu * au) / m11 * dt_s
            F[IX_U, IX_V] = m22 * r / m11 * dt_s
            F[IX_U, IX_R] = m22 * v / m11 * dt_s
            F[IX_R, IX_U] = -(m22 - m11) * v / m33 * dt_s
            F[IX_R, IX_V] = -(m22 - m11) * u / m33 * dt_s
            F[IX_R, IX_R] = 1.0 + (self.n_r + 2.0 * self.n_rr * ar) / m33 * dt_s
            F[IX_U, IX_KD] = damping / m11 * dt_s
            F[IX_R, IX_BR] = dt_s
        else:
            # unknown surge force and yaw moment: surge speed and yaw rate held (random walks)
            u_dot = r_dot = 0.0
            F[IX_U, IX_U] = F[IX_R, IX_R] = 1.0
            F[IX_U, IX_V] = F[IX_U, IX_R] = F[IX_R, IX_U] = F[IX_R, IX_V] = 0.0
            F[IX_U, IX_KD] = F[IX_R, IX_BR] = 0.0

        self.u_dot, self.v_dot = u_dot, v_dot
        x[IX_N, 0] += (u * c - v * s + x[IX_CN, 0]) * dt_s
        x[IX_E, 0] += (u * s + v * c + x[IX_CE, 0]) * dt_s
        psi += r * dt_s
        x[IX_PSI, 0] = wrap_pi(psi)
        x[IX_U, 0] = u + u_dot * dt_s
        x[IX_V, 0] = v + v_dot * dt_s
        x[IX_R, 0] = r + r_dot * dt_s

    def forces(self, thrust_n, angle_rad=None) -> tuple[float, float]:
        """(surge force X [N], yaw moment N [N*m]) of per-thruster thrust [N] (a sequence in the vessel's
        thruster order) along +x body, N = -sum y_i T_i; or, for pods at angles angle_rad [rad, + = thrust
        toward starboard], X = sum T_i cos a_i, N = sum T_i (x_i sin a_i - y_i cos a_i). The pods' side force
        is left out (the filter's model has none)."""
        if angle_rad is None:
            return float(sum(thrust_n)), -float(sum(y * f for y, f in zip(self.thruster_y_m, thrust_n)))
        x_n = n_nm = 0.0
        for x, y, f, a in zip(self.thruster_x_m, self.thruster_y_m, thrust_n, angle_rad):
            c, s = math.cos(a), math.sin(a)
            x_n += f * c
            n_nm += f * (x * s - y * c)
        return float(x_n), float(n_nm)


def ground_velocity_ned(x: np.ndarray) -> tuple[float, float]:
    """(north_mps, east_mps) velocity over ground of the state x."""
    psi = x[IX_PSI, 0]
    c, s = math.cos(psi), math.sin(psi)
    u, v = x[IX_U, 0], x[IX_V, 0]
    return u * c - v * s + x[IX_CN, 0], u * s + v * c + x[IX_CE, 0]
