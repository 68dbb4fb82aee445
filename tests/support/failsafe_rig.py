"""Scripted estimator health and a stepping loop for the failsafe policy tests."""
from __future__ import annotations

import dataclasses

from autopilot.vocab.failsafe_config import FailsafeConfig
from autopilot.vocab.types import NavState
from estimation.navekf.health import EstimatorHealth


def nav(n=0.0, e=0.0, psi=0.0, u=0.0):
    return NavState(0.0, n, e, psi, u, 0.0, 0.0)

CFG = FailsafeConfig()


def health(t, since_gps=0.5, since_imu=0.01, since_mag=0.05, rejected=0, invalid=0, accepted=100,
           reacq=0, pos_std=0.5, resets=0):
    """A healthy filter's report with the given figures (counters not named here are 0)."""
    values = {f.name: 0 for f in dataclasses.fields(EstimatorHealth)}
    values.update(time_s=t, valid=True, converged=since_gps < 2, pos_std_m=pos_std, heading_std_rad=0.01,
                  velocity_std_mps=0.05, current_north_mps=0.0, current_east_mps=0.0, since_gps_s=since_gps,
                  since_imu_s=since_imu, since_mag_s=since_mag, gps_nis_avg=2.0, gps_vel_nis_avg=2.0,
                  mag_nis_avg=1.0, gps_accepted=accepted, gps_rejected=rejected, gps_invalid=invalid,
                  gps_reacquisitions=reacq, mag_accepted=100, covariance_trace=1.0)
    if "filter_resets" in values:
        values["filter_resets"] = resets
    return EstimatorHealth(**values)


def run(fm, t0, t1, mode, hfn, dt=0.1, **kw):
    """Step the manager from t0 to t1; returns [(t, trigger)]. `mode` may be a callable of the triggers so far."""
    out, t = [], t0
    while t < t1 - 1e-9:
        m = mode(out) if callable(mode) else mode
        for trig in fm.update(t, kw.get("nav", nav()), m, health_fn=lambda tt: hfn(tt),
                              raw_offset_fn=kw.get("offset", lambda: 0.0), battery_v=kw.get("battery"),
                              actuator_connected=kw.get("connected", True)):
            out.append((round(t, 3), trig))
        t += dt
    return out
