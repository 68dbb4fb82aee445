"""Fossen's 3-DOF manoeuvring model of a surface vessel, with current, integrated by fixed-step RK4.

    eta_dot = R(psi) nu                      eta = (north, east, psi) in NED, nu = (u, v, r) in body FRD
    M nu_r_dot + C(nu_r) nu_r + D(nu_r) nu_r = tau          nu_r = nu - nu_c (velocity through the water)

M = M_RB + M_A = [[m11, 0, 0], [0, m22, m23], [0, m23, m33]] with m11 = m - X_udot, m22 = m - Y_vdot,
m33 = Iz + m x_g^2 - N_rdot and m23 = m x_g - Y_rdot (Y_rdot = N_vdot assumed): x_g is the centre of gravity
forward of the body origin (the reference point the state and the thrusters are given at); a vessel file's
diagonal model is x_g = Y_rdot = 0.
C = C_RB + C_A in skew form, so C(nu) nu = (-(m22 v + m23 r) r, m11 u r, (m22 - m11) u v + m23 u r) (Munk
moment included);
D(nu) = -[[X_u + X_u|u| |u|, 0, 0], [0, Y_v + Y_v|v| |v|, Y_r], [0, N_v, N_r + N_r|r| |r|]]: the off-diagonal
Y_r and N_v are the sway-yaw coupling real hulls have and a vessel file's diagonal model leaves out.

Current: for an irrotational current uniform in NED, with the velocity-independent parametrisation of C_RB,
M_RB nu_dot + C_RB nu = M_RB nu_r_dot + C_RB nu_r (Fossen 2011, Property 8.1), so the whole model is written
in the relative velocity nu_r, which is the integrated state; the ground velocity is nu_r plus the current
rotated into the body. A floating hull displaces its own mass, so a slow change of a uniform current carries it
along the same way, and the relative-velocity form stays valid.

Waves enter twice, as for a cork: their first-order force (hil.sim.environment) is part of tau, and their orbital
velocity is local water motion, subtracted from nu_r in C and D so that a hull carried by the orbits is not
damped by them.

tau holds everything that is not hydrodynamic (thrust, wind, waves); it is held constant over one step.
Why: docs/design-notes/simulator-and-rims.md, "The simulator".
"""
from __future__ import annotations

import math
from typing import Tuple

State = Tuple[float, float, float, float, float, float]   # (north_m, east_m, psi_rad, u_r, v_r, r)


class HullDynamics:
    """Precomputed constants of one hull and the RK4 step of its model.

    The coupling arguments (x_g_m, y_rdot, y_r, n_v) default to zero: the diagonal model of a vessel file.
    """

    def __init__(self, mass_kg: float, iz_kgm2: float, x_udot: float, y_vdot: float, n_rdot: float,
                 x_u: float, y_v: float, n_r: float, x_uu: float, y_vv: float, n_rr: float,
                 x_g_m: float = 0.0, y_rdot: float = 0.0, y_r: float = 0.0, n_v: float = 0.0):
        self.m11 = mass_kg - x_udot
        self.m22 = mass_kg - y_vdot
        self.m33 = iz_kgm2 + mass_kg * x_g_m * x_g_m - n_rdot
        self.m23 = mass_kg * x_g_m - y_rdot
        if min(self.m11, self.m22, self.m33) <= 0:
            raise ValueError("hull: mass plus added mass must be positive on every axis")
        det = self.m22 * self.m33 - self.m23 * self.m23
        if det <= 0:
            raise ValueError("hull: the sway-yaw mass matrix must be positive definite (m23^2 < m22 m33)")
        # inverse of the sway-yaw block [[m22, m23], [m23, m33]]
        self._i22, self._i23, self._i33 = self.m33 / det, -self.m23 / det, self.m22 / det
        # Damping as positive numbers: D(nu) nu = (d_u + d_uu |u|) u etc.; d_vr r in sway, d_rv v in yaw
        self.d_u, self.d_v, self.d_r = -x_u, -y_v, -n_r
        self.d_uu, self.d_vv, self.d_rr = -x_uu, -y_vv, -n_rr
        self.d_vr, self.d_rv = -y_r, -n_v

    @classmethod
    def for_vessel(cls, vessel, x_g_m: float = 0.0, y_rdot: float = 0.0, y_r: float = 0.0,
                   n_v: float = 0.0) -> "HullDynamics":
        h = vessel.hull
        return cls(h.mass_kg, h.iz_kgm2, h.x_udot, h.y_vdot, h.n_rdot, h.x_u, h.y_v, h.n_r,
                   h.x_uu, h.y_vv, h.n_rr, x_g_m=x_g_m, y_rdot=y_rdot, y_r=y_r, n_v=n_v)

    def rk4_step(self, state: State, dt_s: float, x_n: float, y_n: float, n_nm: float,
                 current_north_mps: float, current_east_mps: float,
                 water_u_mps: float = 0.0, water_v_mps: float = 0.0, water_r_rps: float = 0.0) -> State:
        """One classical Runge-Kutta step of length dt under a constant applied force and current (NED).

        (water_u, water_v, water_r) is an extra local water motion in body axes (the waves' orbital velocity,
        averaged over the hull), held over the step: the hydrodynamic terms C and D act on the state's relative
        velocity minus it, while the kinematics carry the state's relative velocity plus the current.
        """
        m11, m22, m23 = self.m11, self.m22, self.m23
        i22, i23, i33 = self._i22, self._i23, self._i33
        du, dv, dr, duu, dvv, drr = self.d_u, self.d_v, self.d_r, self.d_uu, self.d_vv, self.d_rr
        dvr, drv = self.d_vr, self.d_rv
        munk = m22 - m11
        cn, ce = current_north_mps, current_east_mps
        wu, wv, wr = water_u_mps, water_v_mps, water_r_rps
        cos, sin = math.cos, math.sin

        def f(psi, u, v, r):
            c, s = cos(psi), sin(psi)
            a, b, q = u - wu, v - wv, r - wr
            fy = y_n - m11 * a * q - (dv + dvv * abs(b)) * b - dvr * q
            fn = n_nm - munk * a * b - m23 * a * q - (dr + drr * abs(q)) * q - drv * b
            return (c * u - s * v + cn,
                    s * u + c * v + ce,
                    r,
                    (x_n + (m22 * b + m23 * q) * q - (du + duu * abs(a)) * a) / m11,
                    i22 * fy + i23 * fn,
                    i23 * fy + i33 * fn)

        n0, e0, p0, u0, v0, r0 = state
        h = 0.5 * dt_s
        a1, b1, c1, d1, e1, f1 = f(p0, u0, v0, r0)
        a2, b2, c2, d2, e2, f2 = f(p0 + h * c1, u0 + h * d1, v0 + h * e1, r0 + h * f1)
        a3, b3, c3, d3, e3, f3 = f(p0 + h * c2, u0 + h * d2, v0 + h * e2, r0 + h * f2)
        a4, b4, c4, d4, e4, f4 = f(p0 + dt_s * c3, u0 + dt_s * d3, v0 + dt_s * e3, r0 + dt_s * f3)
        k = dt_s / 6.0
        return (n0 + k * (a1 + 2.0 * (a2 + a3) + a4),
                e0 + k * (b1 + 2.0 * (b2 + b3) + b4),
                p0 + k * (c1 + 2.0 * (c2 + c3) + c4),
                u0 + k * (d1 + 2.0 * (d2 + d3) + d4),
                v0 + k * (e1 + 2.0 * (e2 + e3) + e4),
                r0 + k * (f1 + 2.0 * (f2 + f3) + f4))


def steady_surge_speed_mps(x_u: float, x_uu: float, thrust_n: float) -> float:
    """Speed through the water at which damping balances a constant surge force: T = -X_u u - X_u|u| u|u|.

    Signed like the thrust (reverse thrust gives a negative speed).
    """
    a, b, t = -x_uu, -x_u, abs(thrust_n)
    if a == 0.0:
        speed = t / b if b > 0 else math.inf
    else:
        speed = (-b + math.sqrt(b * b + 4.0 * a * t)) / (2.0 * a)
    return math.copysign(speed, thrust_n)
