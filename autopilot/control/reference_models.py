"""Reference models: smooth a commanded value into a reference and its derivatives a controller can follow.

Linear low-pass prefilters with unit static gain (Fossen; paper 002 Table 3, zeta = 1 there):
    second order (surge speed, yaw rate):  x_d / x_c = w^2 / (s^2 + 2 z w s + w^2)
    third order (heading):                 x_d / x_c = w^3 / ((s + w)(s^2 + 2 z w s + w^2))
Each step returns the reference and its first derivative (what a feed-forward needs); the second derivative is
available as an attribute. The heading model works on the wrapped error, so a command across north turns the
short way. Time is passed in; the first call only sets the state (to the measured value, with zero rates), a
step that does not advance time leaves the state as it is, and a gap longer than MAX_DT_S is integrated as
MAX_DT_S. Integration: semi-implicit Euler in sub-steps of at most SUBSTEP_S, far below 1/w for any w a boat
uses (w <= 10 rad/s).
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.vocab.angles import wrap_pi

MAX_DT_S = 0.5
SUBSTEP_S = 0.005


def _steps(dt_s: float) -> tuple[int, float]:
    dt_s = min(dt_s, MAX_DT_S)
    n = max(1, math.ceil(dt_s / SUBSTEP_S))
    return n, dt_s / n


class SecondOrderReference:
    """x_d'' = w^2 (x_c - x_d) - 2 z w x_d'.  `omega_rps` > 0 [rad/s], `zeta` > 0."""

    def __init__(self, omega_rps: float, zeta: float = 1.0):
        if not (omega_rps > 0.0 and zeta > 0.0):
            raise ValueError(f"reference model: need omega > 0 and zeta > 0, got {omega_rps!r}, {zeta!r}")
        self.omega_rps, self.zeta = float(omega_rps), float(zeta)
        self.reset()

    def reset(self, value: Optional[float] = None) -> None:
        """Forget the state; the next update starts from `value` (or from the value it is given then)."""
        self.value = value
        self.rate = 0.0
        self.accel = 0.0
        self._t_prev: Optional[float] = None

    def update(self, t_s: float, command: float, measured: float) -> tuple[float, float]:
        """(x_d, x_d_dot) at t_s for the command x_c; `measured` seeds the state on the first call."""
        if self._t_prev is None or self.value is None:
            self.value = measured if self.value is None else self.value
            self._t_prev = t_s
            return self.value, self.rate
        dt = t_s - self._t_prev
        if dt <= 0.0:
            return self.value, self.rate
        self._t_prev = t_s
        w, z = self.omega_rps, self.zeta
        n, h = _steps(dt)
        x, v = self.value, self.rate
        for _ in range(n):
            a = w * w * (command - x) - 2.0 * z * w * v
            v += h * a
            x += h * v
        self.value, self.rate, self.accel = x, v, w * w * (command - x) - 2.0 * z * w * v
        return x, v


class HeadingReference:
    """Third-order heading prefilter psi_d''' = w^3 e - (2z+1) w^2 psi_d' - (2z+1) w psi_d'',  e = wrap(psi_c -
    psi_d). Headings in radians (any consistent convention; wrapped to [-pi, pi)); rates in rad/s."""

    def __init__(self, omega_rps: float, zeta: float = 1.0):
        if not (omega_rps > 0.0 and zeta > 0.0):
            raise ValueError(f"heading reference: need omega > 0 and zeta > 0, got {omega_rps!r}, {zeta!r}")
        self.omega_rps, self.zeta = float(omega_rps), float(zeta)
        self.reset()

    def reset(self) -> None:
        self.heading_rad: Optional[float] = None
        self.rate_rps = 0.0
        self.accel_rps2 = 0.0
        self._t_prev: Optional[float] = None

    def update(self, t_s: float, command_rad: float, measured_rad: float) -> tuple[float, float]:
        """(psi_d, r_d) at t_s for the commanded heading; the first call starts at the measured heading."""
        if self._t_prev is None or self.heading_rad is None:
            self.heading_rad = wrap_pi(measured_rad)
            self._t_prev = t_s
            return self.heading_rad, self.rate_rps
        dt = t_s - self._t_prev
        if dt <= 0.0:
            return self.heading_rad, self.rate_rps
        self._t_prev = t_s
        w, z = self.omega_rps, self.zeta
        k1, k2, k3 = w ** 3, (2.0 * z + 1.0) * w * w, (2.0 * z + 1.0) * w
        n, h = _steps(dt)
        psi, r, a = self.heading_rad, self.rate_rps, self.accel_rps2
        for _ in range(n):
            j = k1 * wrap_pi(command_rad - psi) - k2 * r - k3 * a
            a += h * j
            r += h * a
            psi = wrap_pi(psi + h * r)
        self.heading_rad, self.rate_rps, self.accel_rps2 = psi, r, a
        return psi, r
