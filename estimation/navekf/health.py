"""What the navigation filter says about itself, for failsafes, logs and the operator."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class EstimatorHealth:
    """A snapshot of the navigation filter's health at `time_s`.

    Times since an update are math.inf when that sensor never updated the filter. NIS (normalised
    innovation squared) averages are exponential moving averages over roughly the last 20 updates; a
    consistent filter shows about the measurement's dimension (GNSS position 2, GNSS velocity 2, heading 1,
    gyro 1). Much larger means the filter is overconfident or the sensor misbehaves.
    """

    time_s: float
    valid: bool                       # a position and a heading exist (same as NavState.valid)
    converged: bool                   # valid, covariance below the convergence limits, GNSS not stale
    pos_std_m: float                  # sqrt of the larger eigenvalue of the position covariance [m]
    heading_std_rad: float
    velocity_std_mps: float           # sqrt of the larger eigenvalue of the (u, v) covariance [m/s]
    gyro_bias_rps: float              # estimated gyro z bias [rad/s]
    current_north_mps: float          # estimated water current, NED [m/s]
    current_east_mps: float
    since_gps_s: float                # since the last accepted GNSS position update [s]
    since_imu_s: float                # since the last gyro update [s]
    since_mag_s: float                # since the last accepted magnetometer heading update [s]
    gps_nis_avg: float                # moving average NIS of accepted GNSS position updates (dof 2)
    gps_vel_nis_avg: float            # moving average NIS of GNSS velocity updates (dof 2)
    mag_nis_avg: float                # moving average NIS of magnetometer heading updates (dof 1)
    gps_accepted: int                 # GNSS position updates applied
    gps_rejected: int                 # GNSS fixes refused by the innovation gate or as implausible by the driver
    gps_invalid: int                  # fixes flagged invalid by the receiver (no position)
    gps_reacquisitions: int           # times a persistent GNSS shift was accepted after covariance inflation
    mag_accepted: int
    mag_rejected: int                 # headings refused by the gate or for a disturbed field strength
    mag_reacquisitions: int
    samples_too_old: int              # samples older than the filter's look-back window, dropped
    stale_samples: int                # IMU/mag samples flagged stale by their driver, ignored
    bad_samples: int                  # samples with non-finite values (or an all-zero field), ignored
    filter_resets: int                # times the filter restarted after holding non-finite numbers
    covariance_trace: float           # trace of the full state covariance (mixed units; for trending)
    gps_vel_rejected: int = 0         # GNSS velocities refused by their innovation gate
    gps_vel_reaccepted: int = 0       # ... taken after all, with the velocity covariance widened (model drift)
    model_drift_accepts: int = 0      # fixes outside the gate taken as model drift (covariance widened)
    model_consistency: float = 1.0    # GNSS velocity NIS per dof over ~10 fixes: ~1 the vessel model predicts
    #                                   well, much more it mispredicts (estimation.navekf.model_consistency)
    model_worst_axis: str = ""        # "surge", "sway" or "yaw": the axis with the largest normalised innovation
    process_noise_scale: float = 1.0  # the adaptive factor on the velocity/model-error process noise (>= 1)
    surge_drag_error: float = 0.0     # estimated k_d: the surge drag is (1 + k_d) times the vessel file's
    yaw_model_error_rps2: float = 0.0     # the same in yaw [rad/s^2]
    current_std_mps: float = 0.0      # sqrt of the larger eigenvalue of the current's covariance [m/s]: how well
    #                                   the drift is known (0.3 at start, about 0.1 after 15 s of 1 Hz GNSS)
    mag_consistency_deg: Optional[float] = None  # RMS of magnetic minus GNSS-course heading (after crab) at
    #                                   speed over the last minute [deg]; None without enough fixes or when the
    #                                   continuous calibration is off (filled in by the autopilot, not the filter)

    def as_dict(self) -> dict:
        """Plain dict for JSON/CSV (infinities become None)."""
        out = {}
        for k, v in self.__dict__.items():
            out[k] = None if isinstance(v, float) and math.isinf(v) else v
        return out
