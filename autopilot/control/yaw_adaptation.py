"""What the boat's yaw really does, learned while it steers: the heading controller's gains follow it.

The heading controller is designed on the vessel file's yaw model m r_dot = -d r + tau (m = Iz - N_rdot
[kg m^2], d = -N_r [N m s], tau the yaw moment [N m]). A real hull differs: a weaker motor pair scales tau
(thrust x 0.4: the loop's gain falls to 0.4 and the boat weaves in slow arcs), more yaw damping than filed
(N_r x 2.5) makes the fed-forward turn moment 2.5 times too small. `YawModelEstimator` fits

    r_dot = a r + a2 r|r| + b tau_lag + c
                                     (a = -d/m, a2 = N_rr/m, b = 1/m, c: a steady moment the file misses, per m)

by recursive least squares with exponential forgetting on the measured yaw rate and the moment commanded,
and gives the model the controller should be designed on: m_hat = 1/b, d_hat = -a/b, each held within
x/÷ LIMIT of the file's so that no estimate can make the loop wild.

tau_lag is the commanded moment through the thrusters' first-order lag (their time constant from the
file): the moment the hull feels. Samples: every SAMPLE_S the mean yaw rate and mean lagged moment of the
window make one regression row with the next window's rate, r_dot taken as the difference of the means. A
window in which the commanded moment reached its limit is not used (a saturated allocation delivers less
than was asked). The estimate is reported as `trusted` once the information gathered pins b to TRUST_REL
(relative standard error). Until then the file's model stands, and after it each fitted parameter replaces
the file's only where it differs from it by more than SIGNIFICANT standard errors: a boat that matches its
file keeps the file's gains.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

SAMPLE_S = 0.2            # regression row period [s]
FORGET_S = 60.0           # memory of the fit (exponential forgetting time constant) [s]
LIMIT = 3.0               # m_hat, d_hat within x/÷ LIMIT of the file's
TRUST_REL = 0.15          # relative standard error of b below which the estimate is used
SAT_FRAC = 0.95           # moments beyond this share of the limit are not used (saturated)
SIGNIFICANT = 3.0         # a fitted parameter replaces the file's only this many standard errors away from it


class YawModelEstimator:
    """Recursive least squares on r_dot = a r + a2 r|r| + b tau_lag + c (see module docstring). Units: rad/s,
    N m, s."""

    def __init__(self, m_kgm2: float, d_nms: float, max_yaw_nm: float, rate_noise_rps: float = 0.004,
                 drr_nms2: float = 0.0, thrust_lag_s: float = 0.0):
        if not (m_kgm2 > 0.0 and d_nms >= 0.0 and max_yaw_nm > 0.0 and drr_nms2 >= 0.0 and thrust_lag_s >= 0.0):
            raise ValueError("YawModelEstimator: need m > 0, d >= 0, drr >= 0, lag >= 0, max_yaw_nm > 0")
        self.m_file = float(m_kgm2)
        self.d_file = float(d_nms)
        self.drr_file = float(drr_nms2)
        self.lag_s = float(thrust_lag_s)
        self.max_yaw_nm = float(max_yaw_nm)
        self._r_var = (math.sqrt(2.0) * rate_noise_rps / SAMPLE_S) ** 2    # a differenced mean rate's noise
        self.reset()

    def reset(self) -> None:
        """Back to the file's model (a new boat, or a mode that will not steer)."""
        # theta = (a [1/s], a2 [1/rad], b m_file [-], c [rad/s^2]); regressor (r, r|r|, tau_lag / m_file, 1)
        self._theta = np.array([-self.d_file / self.m_file, -self.drr_file / self.m_file, 1.0, 0.0])
        self._P = np.diag([0.25, 0.25, 0.36, 1e-4])     # prior: a, a2 within ~0.5, b within x/÷ ~1.8, c small
        self._tau_lag = 0.0
        self._t_last: Optional[float] = None
        self._t0: Optional[float] = None
        self._r_sum = self._tau_sum = 0.0
        self._n = 0
        self._sat = False
        self._prev_r: Optional[float] = None
        self._prev_tau: Optional[float] = None
        self.rows = 0

    def update(self, t_s: float, yaw_rate_rps: float, yaw_moment_nm: float) -> None:
        """One control cycle: the measured yaw rate [rad/s] and the moment [N m] acting over the cycle before."""
        if not (math.isfinite(t_s) and math.isfinite(yaw_rate_rps) and math.isfinite(yaw_moment_nm)):
            return
        if self._t_last is not None and t_s > self._t_last and self.lag_s > 0.0:
            k = 1.0 - math.exp(-(t_s - self._t_last) / self.lag_s)
            self._tau_lag += k * (yaw_moment_nm - self._tau_lag)
        elif self.lag_s <= 0.0:
            self._tau_lag = yaw_moment_nm
        self._t_last = t_s
        saturated = abs(yaw_moment_nm) > SAT_FRAC * self.max_yaw_nm     # as commanded: then maybe not delivered
        yaw_moment_nm = self._tau_lag
        if self._t0 is None:
            self._t0 = t_s
        if t_s - self._t0 < SAMPLE_S:
            self._r_sum += yaw_rate_rps
            self._tau_sum += yaw_moment_nm
            self._n += 1
            self._sat |= saturated
            return
        if self._n:
            r_mean, tau_mean = self._r_sum / self._n, self._tau_sum / self._n
            if self._prev_r is not None and self._prev_tau is not None:
                self._row((r_mean - self._prev_r) / SAMPLE_S, self._prev_r, self._prev_tau)
            self._prev_r, self._prev_tau = r_mean, (None if self._sat else tau_mean)
        self._t0, self._r_sum, self._tau_sum, self._n = t_s, yaw_rate_rps, yaw_moment_nm, 1
        self._sat = saturated

    def _row(self, r_dot: float, r: float, tau: float) -> None:
        phi = np.array([r, r * abs(r), tau / self.m_file, 1.0])
        lam = math.exp(-SAMPLE_S / FORGET_S)
        P = self._P
        Pphi = P @ phi
        k = Pphi / (phi @ Pphi + self._r_var)
        self._theta = self._theta + k * (r_dot - phi @ self._theta)
        self._P = (P - np.outer(k, Pphi)) / lam
        self.rows += 1

    @property
    def trusted(self) -> bool:
        """The fit pins b (1/m) to TRUST_REL; before that the file's model stands."""
        b = self._theta[2]
        return b > 0.0 and math.sqrt(max(self._P[2, 2], 0.0)) < TRUST_REL * b

    def _used(self) -> tuple:
        """(a, b) the loop is designed on: each the fit's only where the data contradict the file's value by more
        than SIGNIFICANT standard errors (a file within the fit's noise is kept, so a boat that matches its file
        flies on its file's gains), the file's otherwise."""
        th, P = self._theta, self._P
        a0 = -self.d_file / self.m_file
        a = th[0] if abs(th[0] - a0) > SIGNIFICANT * math.sqrt(max(P[0, 0], 0.0)) else a0
        b = th[2] if abs(th[2] - 1.0) > SIGNIFICANT * math.sqrt(max(P[2, 2], 0.0)) else 1.0
        return a, b

    @property
    def m_hat(self) -> float:
        """Yaw inertia per unit of commanded moment the loop should be designed on [kg m^2]."""
        if not self.trusted:
            return self.m_file
        return min(max(self.m_file / self._used()[1], self.m_file / LIMIT), self.m_file * LIMIT)

    @property
    def d_hat(self) -> float:
        """Linear yaw damping [N m s] the loop should feed forward (file's until trusted)."""
        if not self.trusted:
            return self.d_file
        d = -self._used()[0] * self.m_hat
        return min(max(d, self.d_file / LIMIT), self.d_file * LIMIT)

    @property
    def drr_hat(self) -> float:
        """Quadratic yaw damping [N m s^2] the loop should feed forward (file's until trusted), >= 0."""
        if not self.trusted:
            return self.drr_file
        th, P = self._theta, self._P
        a2_0 = -self.drr_file / self.m_file
        a2 = th[1] if abs(th[1] - a2_0) > SIGNIFICANT * math.sqrt(max(P[1, 1], 0.0)) else a2_0
        return max(0.0, -a2 * self.m_hat)
