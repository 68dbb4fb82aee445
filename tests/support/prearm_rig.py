"""A vehicle whose estimate, health, fixes and ESC output the test sets: the pre-arm and mode tests' rig."""
from __future__ import annotations

import dataclasses

from autopilot.vocab.types import GpsFix, NavState
from estimation.navekf.health import EstimatorHealth

MISSION = """name: arm-test
anchor: {lat_deg: 51.11, lon_deg: 17.06}
waypoints:
  - {north_m: 40.0, east_m: 0.0}
  - {north_m: 40.0, east_m: 30.0}
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
"""


class FakeEstimator:
    """A navigation filter whose estimate and health the test sets."""

    def __init__(self):
        self.nav = NavState(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, pos_std_m=0.6)
        values = {f.name: 0 for f in dataclasses.fields(EstimatorHealth)}
        values.update(time_s=0.0, valid=True, converged=True, pos_std_m=0.6, heading_std_rad=0.01,
                      velocity_std_mps=0.05, current_north_mps=0.0, current_east_mps=0.0, since_gps_s=0.3,
                      since_imu_s=0.01, since_mag_s=0.05, gps_nis_avg=2.0, gps_vel_nis_avg=2.0, mag_nis_avg=1.0,
                      covariance_trace=1.0)
        self.h = EstimatorHealth(**values)
        self.state = [0.0] * 9

    def step(self, t_s, batch, thrust):
        self.nav = dataclasses.replace(self.nav, time_s=t_s)
        return self.nav

    def health(self, t_s):
        return dataclasses.replace(self.h, time_s=t_s)


class Esc:
    def __init__(self, connected=True, ready=True):
        self.connected = connected
        self._ready = ready

    def ready(self, t_s):
        return self._ready


def fix(t, **kw):
    values = dict(time_s=t, lat_deg=51.11, lon_deg=17.06, fix_quality=1, sats=12, hdop=0.9)
    values.update(kw)
    return GpsFix(**values)
