"""What the navigation EKF publishes (estimation/navekf/ekf.py): its state plus a smoothing offset.

Every correction an update makes to position and heading is taken up by the offset, so the published estimate
keeps its value; the offset then decays with `output_smoothing_s` (heading: `heading_smoothing_s`), at most
`output_max_rate_mps` (`output_max_rate_rps`) per second (estimation/navekf/tuning.py). The boat never sees a step
from a GNSS update or a re-acquisition, and the filter's own state stays optimal.
"""
from __future__ import annotations

import math

from autopilot.vocab.angles import wrap_pi
from estimation.navekf.tuning import EkfTuning


class OutputOffset:
    """The offset [m, m, rad] added to the filter's north, east and heading when they are published."""

    def __init__(self, tuning: EkfTuning):
        self.tuning = tuning
        self.north_m = 0.0
        self.east_m = 0.0
        self.heading_rad = 0.0

    def reset(self) -> None:
        self.north_m = self.east_m = self.heading_rad = 0.0

    def absorb(self, d_north_m: float, d_east_m: float, d_heading_rad: float) -> None:
        """An update moved the filter's state by these [m, m, rad, heading wrapped to (-pi, pi]]: the
        published estimate keeps its value."""
        self.north_m -= d_north_m
        self.east_m -= d_east_m
        self.heading_rad = wrap_pi(self.heading_rad - d_heading_rad)

    def decay(self, dt_s: float) -> None:
        """Let dt_s [s] of the offset go: exponentially, within the rate limits."""
        tn = self.tuning
        if self.north_m or self.east_m:
            k = 1.0 - math.exp(-dt_s / tn.output_smoothing_s)
            dn, de = self.north_m * k, self.east_m * k
            mag = math.hypot(dn, de)
            limit = tn.output_max_rate_mps * dt_s
            if mag > limit:
                dn, de = dn * limit / mag, de * limit / mag
            self.north_m -= dn
            self.east_m -= de
        if self.heading_rad:
            d = self.heading_rad * (1.0 - math.exp(-dt_s / tn.heading_smoothing_s))
            limit = tn.output_max_rate_rps * dt_s
            self.heading_rad -= max(-limit, min(limit, d))
