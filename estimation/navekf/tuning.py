"""Noise densities, gates and timings of the navigation filter (estimation/navekf/ekf.py): its tuning, apart from the
filter so that a tuning file (autopilot/files/ekf_tuning_file.py), a replay or a campaign can name the fields without
the filter's machinery."""
from __future__ import annotations

import math
from dataclasses import dataclass

CHI2_1DOF_999 = 10.828
CHI2_2DOF_999 = 13.816


@dataclass(frozen=True)
class EkfTuning:
    """Noise densities, gates and timings of the navigation filter (SI units; defaults suit 1-5 m boats)."""

    # process noise, continuous white-noise densities
    pos_noise_mps: float = 0.005         # unmodelled motion of the position [m/s/sqrt(Hz)]
    heading_noise_rps: float = 0.002     # [rad/s/sqrt(Hz)]
    surge_accel_noise_mps2: float = 0.05   # unmodelled surge force / mass [m/s^2/sqrt(Hz)]
    sway_accel_noise_mps2: float = 0.05
    yaw_accel_noise_rps2: float = 0.05
    unknown_thrust_factor: float = 3.0   # velocity noise multiplier when thrust is unknown (None)
    gyro_bias_noise_rps: float = 2e-5    # bias random walk [rad/s/sqrt(s)]
    current_noise_mps: float = 0.001     # current random walk [m/s/sqrt(s)]
    drag_error_noise_per_s: float = 0.01  # random walk of the surge-drag error k_d [1/sqrt(s)] while the
    #                                       innovations show model error (model_consistency); else k_d holds
    yaw_bias_noise_rps2: float = 0.01    # model-error yaw acceleration random walk [rad/s^2/sqrt(s)]
    # model consistency (estimation.navekf.model_consistency)
    surge_bias_from_velocity_only: bool = False  # GNSS positions do not move the drag-error state
    adaptive_noise: bool = True          # scale velocity/model-error process noise by the innovation statistics
    adaptive_max_scale: float = 100.0
    gps_vel_reaccept_run: int = 2        # this many GNSS velocities in a row outside the gate: the model is wrong
    drift_gate: bool = True              # accept a gradual run of gate failures as model drift
    turn_yaw_rate_rps: float = 0.05      # while |yaw rate| is above this, gyro and heading updates leave
    #                                      position, current and drag error to GNSS (ekf.py, _update)
    # measurement noise floors
    heading_floor_rad: float = math.radians(1.0)    # calibration residual, tilt errors
    gyro_floor_rps: float = 0.002
    speed_noise_floor_mps: float = 0.15   # GNSS velocity also carries wave motion the model cannot follow
    gps_course_min_speed_mps: float = 0.5
    # gates
    gps_gate: float = CHI2_2DOF_999
    gps_vel_gate: float = CHI2_2DOF_999
    mag_gate: float = CHI2_1DOF_999
    gps_reacquire_s: float = 3.0         # reject this long (and >= 3 fixes) before forcing re-acquisition
    mag_reacquire_s: float = 5.0
    mag_field_tolerance: float = 0.25    # calibrated |B| off the expected field by more: disturbed, ignored
    # timing
    window_s: float = 0.05               # gyro / mag samples within this span are averaged into one update
    predict_gap_s: float = 0.03          # predict to a sample only when it is this far ahead of the filter
    max_sample_age_s: float = 1.0        # older samples than this behind the filter are dropped
    attitude_time_constant_s: float = 2.0
    # Tilt reference for the magnetic heading. "absolute": the accelerometer's roll/pitch (right after a 3-D
    # bench calibration, with an accelerometer whose bias is small). "dynamic": roll/pitch about their
    # 60 s mean, i.e. the mean attitude is taken as level: insensitive to accelerometer bias (LSM9DS1: up to
    # ~5 degrees of apparent tilt), and right after a 2-D on-water calibration, which already absorbed the
    # hull's static trim into its offset. "auto": absolute with a 3-D calibration, else dynamic.
    tilt_reference: str = "auto"
    trim_time_constant_s: float = 60.0
    # initial uncertainty
    init_heading_std_rad: float = math.radians(10.0)
    init_speed_std_mps: float = 0.5
    init_yaw_rate_std_rps: float = 0.1
    init_current_std_mps: float = 0.3
    init_drag_error_std: float = 0.5      # k_d: the drag is (1 + k_d) times the file's; unknown at first (a
    #                                       constant: it moves with process noise only while learning)
    relearn_drag_error_std: float = 0.5   # widened to this when the innovations show the model is wrong
    relearn_current_std_mps: float = 0.2
    model_error_evidence_z: float = 4.0   # standard errors of one-signed bow innovations that start learning
    learned_drag_error_std: float = 0.05  # learning stops once k_d is known this well (and the evidence is gone)
    init_yaw_bias_std_rps2: float = 0.1
    # published output
    output_smoothing_s: float = 1.0
    heading_smoothing_s: float = 0.5
    output_max_rate_mps: float = 3.0
    output_max_rate_rps: float = 0.5
    # convergence limits for EstimatorHealth.converged
    converged_pos_std_m: float = 1.5
    converged_heading_std_rad: float = math.radians(5.0)
