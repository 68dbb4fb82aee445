"""Flying the EKF on the simulated plant: the frame, a square course, the thrust that follows it, a jumped fix."""
from __future__ import annotations

import math

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import GpsFix

FRAME = LocalFrame(51.11, 17.06)


def _thrust(vessel, truth, psi_d, u_d):
    h = vessel.hull
    m33, m11 = h.iz_kgm2 - h.n_rdot, h.mass_kg - h.x_udot
    wn = 0.8 if h.length_m < 2 else 0.5
    r = truth.yaw_rate_rps
    yaw = m33 * (wn * wn * wrap_pi(psi_d - truth.heading_rad) - 2 * wn * r) - h.n_r * r
    surge = -h.x_u * u_d - h.x_uu * u_d * abs(u_d) + m11 * 0.5 * (u_d - truth.surge_mps)
    ys = [t.y_m for t in vessel.thrusters]
    arm = sum(abs(y) for y in ys)
    return tuple(surge / len(ys) - yaw * math.copysign(1.0, y) / arm for y in ys)


def jumped_fix(fix: GpsFix, north_m: float) -> GpsFix:
    """The same fix moved north_m metres north: a receiver glitch."""
    n, e = FRAME.to_ned(fix.lat_deg, fix.lon_deg)
    lat, lon = FRAME.to_wgs84(n + north_m, e)
    return GpsFix(**{**fix.__dict__, "lat_deg": lat, "lon_deg": lon})


SQUARE = [(0, 30), (90, 30), (180, 30), (270, 30)]
