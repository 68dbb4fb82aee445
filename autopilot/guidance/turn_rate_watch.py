"""How fast the boat really turns, next to what its vessel file says: guidance slows its corners by the ratio.

Guidance plans its corners on the file's turning ability (autopilot/guidance/turning.py: the lookahead, the corner
slowdown). A hull with more yaw damping than filed (N_r x 2.5), weaker motors (thrust x 0.4) or a fouled
propeller turns slower at full moment, and at the file's corner speed it swings wide of the next leg. The
turning radius is speed over yaw rate, so a boat that turns k times as fast as its file flies the file's circle
at k times the speed.

`TurnRateWatch` measures k in steady hard turns: once the moment delivered (after the allocator's limits) has
stayed at least HARD_TURN_SHARE of the largest, one way, for SETTLE_TIME_CONSTANTS yaw time constants of the
file (m / d), each cycle compares the measured yaw rate with the file's steady yaw rate on that moment
(turning.steady_yaw_rate_rps). `scale` is an exponential average of that ratio over TAU_S of hard turning,
each sample clipped to [0, 1], and never below MIN_SCALE: a boat that turns faster than its file flies as
before, one that turns slower slows its corners. Until the first hard turn it is 1.
Why: docs/design-notes/core.md, "Guidance".
"""
from __future__ import annotations

import math
from typing import Optional

from autopilot.guidance.turning import steady_yaw_rate_rps

HARD_TURN_SHARE = 0.5          # a delivered moment at least this share of the largest is a hard turn
SETTLE_TIME_CONSTANTS = 3.0    # the yaw rate is steady this many of the file's yaw time constants into it
SETTLE_MIN_S, SETTLE_MAX_S = 0.5, 6.0
TAU_S = 5.0                    # memory of the average, in seconds of steady hard turning
MIN_SCALE = 0.25               # never plan on a boat turning slower than this share of its file
WARN_SCALE = 0.8               # a boat turning slower than this share of its file is reported


class TurnRateWatch:
    """Ratio of the measured to the file's steady yaw rate in hard turns (see the module docstring).

    m_kgm2 = Iz - N_rdot, d_nms = -N_r, drr_nms2 = -N_r|r| (the file's yaw model, Fossen's signs flipped so all
    are >= 0), max_yaw_nm: the allocator's largest yaw moment [N*m]."""

    def __init__(self, m_kgm2: float, d_nms: float, drr_nms2: float, max_yaw_nm: float):
        if not (m_kgm2 > 0.0 and d_nms >= 0.0 and drr_nms2 >= 0.0 and max_yaw_nm > 0.0):
            raise ValueError("TurnRateWatch: need m > 0, d >= 0, drr >= 0, max_yaw_nm > 0")
        self.d_nms, self.drr_nms2, self.max_yaw_nm = float(d_nms), float(drr_nms2), float(max_yaw_nm)
        tc_s = m_kgm2 / d_nms if d_nms > 0.0 else SETTLE_MAX_S
        self.settle_s = min(SETTLE_MAX_S, max(SETTLE_MIN_S, SETTLE_TIME_CONSTANTS * tc_s))
        self.scale = 1.0            # measured / file steady yaw rate in hard turns, in [MIN_SCALE, 1]
        self.samples = 0            # cycles that have fed the average
        self._sign = 0
        self._since_s: Optional[float] = None
        self._t_prev: Optional[float] = None

    @classmethod
    def for_hull(cls, hull, max_yaw_nm: float) -> "TurnRateWatch":
        """The watch for a vessel file's hull (config.HullConfig) on the allocator's largest yaw moment [N*m]."""
        return cls(hull.iz_kgm2 - hull.n_rdot, -hull.n_r, -hull.n_rr, max_yaw_nm)

    def update(self, t_s: float, yaw_rate_rps: float, delivered_yaw_nm: float) -> None:
        """One control cycle: the estimated yaw rate [rad/s, + to starboard] and the yaw moment [N*m] the
        thrusters were given for it. Non-finite input is ignored."""
        if not (math.isfinite(t_s) and math.isfinite(yaw_rate_rps) and math.isfinite(delivered_yaw_nm)):
            return
        dt = 0.0 if self._t_prev is None else min(max(t_s - self._t_prev, 0.0), 1.0)
        self._t_prev = t_s
        hard = abs(delivered_yaw_nm) >= HARD_TURN_SHARE * self.max_yaw_nm
        sign = (1 if delivered_yaw_nm > 0.0 else -1) if hard else 0
        if sign != self._sign:
            self._sign, self._since_s = sign, t_s
            return
        if not sign:
            return
        assert self._since_s is not None      # set when the sign last changed (to this non-zero one)
        if t_s - self._since_s < self.settle_s or dt <= 0.0:
            return
        file_rate = steady_yaw_rate_rps(self.d_nms, self.drr_nms2, delivered_yaw_nm)
        if not (0.0 < file_rate < math.inf):
            return
        ratio = min(1.0, max(0.0, sign * yaw_rate_rps / file_rate))
        self.scale = max(MIN_SCALE, self.scale + (dt / TAU_S) * (ratio - self.scale))
        self.samples += 1

    def diagnostic(self) -> tuple:
        """(level "OK"|"WARN", one-line message, values) for a diagnostics display (ROS /diagnostics)."""
        values = {"turn_rate_scale": round(self.scale, 3), "hard_turn_samples": self.samples,
                  "warn_scale": WARN_SCALE}
        if not self.samples:
            return "OK", "no steady hard turn yet", values
        if self.scale < WARN_SCALE:
            return "WARN", (f"turns at {self.scale:.2f} x the vessel file's yaw rate: corners flown slower "
                            f"and begun earlier"), values
        return "OK", f"turns at {self.scale:.2f} x the vessel file's yaw rate", values
