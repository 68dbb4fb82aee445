"""The navigation EKF: GNSS + gyro + magnetometer fused through the vessel's 3-DOF model.

`NavigationEKF.step(t_s, batch, thrust)` implements autopilot.interfaces.NavigationFilter: an extended Kalman
filter (Joseph-form update; kalman_steps.py, filterpy's arithmetic sized for this filter) with the process model
and state of estimation/navekf/model.py; GNSS rows: gnss_rows.py, sample preparation: measurements.py, tuning:
tuning.py (all in estimation/navekf/).

- Samples are taken in time order and compared with the state extrapolated to their own stamp (first order);
  the filter is predicted to a sample only when it lies more than `predict_gap_s` ahead, then to t_s.
- IMU samples feed a roll/pitch complementary filter and are averaged per `window_s` into one gyro
  measurement of r + bias; magnetometer samples are calibrated, tilt-compensated, turned into true heading
  with the declination and averaged likewise. A heading and the gyro mean of one cycle are one 2-D update,
  GNSS position and velocity one 4-D update (each part gated on its own).
- GNSS position is gated by its Mahalanobis distance (chi-square, 2 dof); rejections are counted. Fixes
  rejected for `gps_reacquire_s` are accepted with the position covariance inflated to cover them
  (`gps_reacquisitions`). GNSS speed/course is a NED velocity; below `gps_course_min_speed_mps` its variance
  grows by sog^2.
- The model is never taken as right (estimation.navekf.model_consistency): two model-error states are
  estimated, velocity and model-error process noise grows while velocity innovations say the model
  mispredicts, and a fix failing the gate after a gradual growth (model drift, not a receiver jump) is
  accepted at once with the covariance widened (`model_drift_accepts`).
- While |yaw rate| > `turn_yaw_rate_rps` (0.05 rad/s) gyro and heading updates leave position, current and
  drag error to GNSS; on straight running the update is the full one.
- Non-finite samples are dropped and counted; a thrust of None (or non-finite) means "thrust unknown". A filter
  holding non-finite numbers restarts from scratch (`filter_resets`): the loop never sees NaN.
- The published NavState is the state plus a decaying smoothing offset (estimation/navekf/output.py): no
  step from an update or a re-acquisition reaches the boat; the filter's own state stays optimal.

Why: docs/design-notes/estimation-and-drivers.md, "The EKF".
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import GpsFix, NavState, SensorBatch, ThrustCommand
from estimation.heading.mag_calibration import MagCalibration
from estimation.navekf.gnss_rows import antenna_position_rows, antenna_velocity_rows
from estimation.navekf.health import EstimatorHealth
from estimation.navekf.kalman_steps import joseph_update, predicted_covariance
from estimation.navekf.measurements import GPS, GYRO, HEADING, HEADING_GYRO, MeasurementBuilder
from estimation.navekf.model import (
    IX_BIAS,
    IX_BR,
    IX_CE,
    IX_CN,
    IX_E,
    IX_KD,
    IX_N,
    IX_PSI,
    IX_R,
    IX_U,
    IX_V,
    N_STATES,
    VesselProcessModel,
)
from estimation.navekf.model_consistency import DriftGate, InnovationMonitor
from estimation.navekf.output import OutputOffset
from estimation.navekf.tuning import EkfTuning

CEP_TO_SIGMA = 1.0 / 1.1774   # CEP (50 %) of a circular Gaussian = 1.1774 sigma


class _VesselEKF:
    """The filter's state x (n, 1), covariance P, Jacobian F and process noise Q, with the vessel process model
    as its state propagation; predict and update are estimation/navekf/kalman_steps.py's."""

    def __init__(self, model: VesselProcessModel):
        self.model = model
        self.x = np.zeros((N_STATES, 1))
        self.P = np.eye(N_STATES)
        self.F = np.eye(N_STATES)
        self.Q = np.eye(N_STATES)
        self.dt_s = 0.0
        self.surge_n = 0.0
        self.yaw_nm = 0.0
        self.known_thrust = False

    def predict(self) -> None:
        """Propagate x over dt_s with the set thrust, and P with the Jacobian the propagation left in F."""
        self.model.propagate(self.x, self.dt_s, self.surge_n, self.yaw_nm, self.known_thrust, self.F)
        self.P = predicted_covariance(self.P, self.F, self.Q)

    def update(self, z, H, hx, R, residual=None) -> None:
        self.x, self.P = joseph_update(self.x, self.P, z, hx, H, R, residual)


def _residual_wrap_first(z, hx):
    """Measurement residual with the first component (a heading) wrapped to [-pi, pi)."""
    y = z - hx
    y[0, 0] = wrap_pi(y[0, 0])
    return y


class NavigationEKF:
    """Navigation filter for one vessel in one local frame. See the module docstring for the method.

    `mag_calibration` is applied to every MagSample; pass None when the driver already applies it (or the
    sensor is undistorted). GNSS fixes are converted to the local frame `frame`.
    """

    def __init__(self, vessel: VesselConfig, frame: LocalFrame, mag_calibration: Optional[MagCalibration] = None,
                 tuning: Optional[EkfTuning] = None):
        self.vessel = vessel
        self.frame = frame
        self.tuning = tuning or EkfTuning()
        tn = self.tuning
        sens = vessel.sensors
        self.model = VesselProcessModel(vessel)
        self.kf = _VesselEKF(self.model)
        self.kf.x = np.zeros((N_STATES, 1))
        self.kf.F = np.eye(N_STATES)
        p0 = np.zeros(N_STATES)
        p0[IX_N] = p0[IX_E] = 100.0 ** 2
        p0[IX_PSI] = math.pi ** 2
        p0[IX_U] = p0[IX_V] = tn.init_speed_std_mps ** 2
        p0[IX_R] = tn.init_yaw_rate_std_rps ** 2
        p0[IX_BIAS] = max(sens.imu.gyro_bias_rps, 1e-4) ** 2
        p0[IX_CN] = p0[IX_CE] = tn.init_current_std_mps ** 2
        p0[IX_KD] = tn.init_drag_error_std ** 2
        p0[IX_BR] = tn.init_yaw_bias_std_rps2 ** 2
        self.kf.P = np.diag(p0)
        self._x0 = self.kf.x.copy()
        self._p0 = self.kf.P.copy()
        self._q_density = np.zeros(N_STATES)
        self._q_density[IX_N] = self._q_density[IX_E] = tn.pos_noise_mps ** 2
        self._q_density[IX_PSI] = tn.heading_noise_rps ** 2
        self._q_density[IX_U] = tn.surge_accel_noise_mps2 ** 2
        self._q_density[IX_V] = tn.sway_accel_noise_mps2 ** 2
        self._q_density[IX_R] = tn.yaw_accel_noise_rps2 ** 2
        self._q_density[IX_BIAS] = tn.gyro_bias_noise_rps ** 2
        self._q_density[IX_CN] = self._q_density[IX_CE] = tn.current_noise_mps ** 2
        self._q_density[IX_KD] = 0.0                 # k_d moves only while learning (see _predict_to)
        self._q_kd_learning = tn.drag_error_noise_per_s ** 2
        self._q_density[IX_BR] = tn.yaw_bias_noise_rps2 ** 2
        self._q_density_unknown = self._q_density.copy()
        for i in (IX_U, IX_R):
            self._q_density_unknown[i] *= tn.unknown_thrust_factor ** 2
        # the states whose process noise follows the model's consistency, and the model-error states
        self._adaptive_mask = np.zeros(N_STATES)
        self._adaptive_mask[[IX_U, IX_V, IX_R, IX_BR]] = 1.0
        self.consistency = InnovationMonitor(max_scale=tn.adaptive_max_scale,
                                             learn_above_z=tn.model_error_evidence_z)
        self._drift_gate = DriftGate(jump_gate=tn.gps_gate)
        self._learning_starts_seen = 0
        self._vel_reject_run = 0
        self._q_diag_idx = np.diag_indices(N_STATES)
        self._Q = np.zeros((N_STATES, N_STATES))
        self._step_key: Optional[tuple] = None  # (dt, thrust known, noise scale) of self._Q and self._lag_a

        # sensor constants
        incl = math.radians(sens.mag.inclination_deg)
        horiz_t = max(sens.mag.field_t * math.cos(incl), 1e-7)
        self._mag_var = (sens.mag.noise_t / horiz_t) ** 2
        self._gyro_var = sens.imu.gyro_noise_rps ** 2
        self._speed_var = max(sens.gnss.speed_noise_mps, tn.speed_noise_floor_mps) ** 2
        self._gps_default_std_m = sens.gnss.cep_m * CEP_TO_SIGMA
        self._antenna_x_m = sens.gnss.antenna_x_m
        self._antenna_y_m = sens.gnss.antenna_y_m
        self._gps_stale_s = sens.gnss.stale_timeout_s

        # thrust: commanded per thruster, lagged by the thrusters' time constants
        self._n_thrusters = len(vessel.thrusters)
        # plain float lists: a couple of thrusters, updated every cycle (numpy's per-call cost would dominate)
        self._thrust_cmd = [0.0] * self._n_thrusters
        self._thrust_eff = [0.0] * self._n_thrusters
        self._angle_cmd: Optional[Tuple[float, ...]] = None    # pods' commanded angles [rad]; None for fixed thrusters
        self._lag_a: list = []                  # per-thruster lag factor exp(-dt / tau) of one predict step
        self._thrust_known = False

        # measurement work arrays
        self._H1 = np.zeros((1, N_STATES))
        self._H2 = np.zeros((2, N_STATES))
        self._z1 = np.zeros((1, 1))
        self._z2 = np.zeros((2, 1))
        self._hx1 = np.zeros((1, 1))
        self._hx2 = np.zeros((2, 1))
        self._R1 = np.zeros((1, 1))
        self._R2 = np.zeros((2, 2))
        self._H4 = np.zeros((4, N_STATES))      # GNSS: position (rows 0-1) and velocity (rows 2-3)
        self._z4 = np.zeros((4, 1))
        self._hx4 = np.zeros((4, 1))
        self._R4 = np.zeros((4, 4))

        # bookkeeping
        self.time_s: Optional[float] = None
        self._has_position = False
        self._has_heading = False
        self._heading_reinit = False        # reinit_heading(): the next magnetometer heading replaces the state's
        self._last_gps_s = -math.inf
        self._last_imu_s = -math.inf
        self._last_mag_s = -math.inf
        self._gps_reject_since_s: Optional[float] = None
        self._gps_reject_run = 0
        self._mag_reject_since_s: Optional[float] = None
        self._gps_nis = 2.0
        self._gps_vel_nis = 2.0
        self._mag_nis = 1.0
        self.counters = dict(gps_accepted=0, gps_rejected=0, gps_invalid=0, gps_reacquisitions=0,
                             mag_accepted=0, mag_rejected=0, mag_reacquisitions=0, samples_too_old=0,
                             stale_samples=0, bad_samples=0, filter_resets=0, model_drift_accepts=0,
                             gps_vel_rejected=0, gps_vel_reaccepted=0)
        self._measure = MeasurementBuilder(tn, sens.mag.field_t, math.radians(sens.mag.declination_deg),
                                           mag_calibration, self.counters)
        # kind -> handler(dt_s, n, payload); the payload is a GpsFix, a float or a tuple, by kind
        self._handlers: Dict[str, Callable[[float, int, Any], None]] = {
            GPS: self._on_gps, GYRO: self._on_gyro, HEADING: self._on_heading, HEADING_GYRO: self._on_heading_gyro}
        self._output = OutputOffset(tn)       # what the published estimate adds to the state (ekf_output.py)

    # ------------------------------------------------------------------------------------------ public
    def step(self, t_s: float, batch: SensorBatch, thrust: Optional[ThrustCommand]) -> NavState:
        """Process the batch's samples in time order, predict to t_s and return the estimate at t_s."""
        self._set_thrust(thrust)
        if self.time_s is None:
            self.time_s = min([t_s] + [s.time_s for s in batch.gps] + [s.time_s for s in batch.imu]
                              + [s.time_s for s in batch.mag])
        try:
            for t_m, kind, n, payload in self._measurements(batch):
                if t_m < self.time_s - self.tuning.max_sample_age_s:
                    self.counters["samples_too_old"] += n + (payload[1] if kind == HEADING_GYRO else 0)
                    continue
                if t_m > self.time_s + self.tuning.predict_gap_s:
                    self._predict_to(t_m)
                self._handlers[kind](t_m - self.time_s, n, payload)
            self._predict_to(t_s)
            # a NaN or an infinity anywhere makes the sum non-finite (two numpy calls instead of four)
            healthy = math.isfinite(float(self.kf.x.sum())) and math.isfinite(float(self.kf.P.sum()))
        except (ValueError, np.linalg.LinAlgError):      # scipy/numpy refusing non-finite or singular matrices
            healthy = False
        if not healthy:
            self._reset()
            self.time_s = max(self.time_s, t_s)
        return self._nav_state(t_s)

    def reinit_heading(self) -> None:
        """Take the heading afresh from the next magnetometer heading, whatever it says (no gate): after a new
        magnetometer calibration has been installed in the sensor path, the old heading is not evidence."""
        self._heading_reinit = True

    def _forget_drift(self) -> None:
        """Sway, water current and gyro bias back to their initial estimate and variance: they were learnt
        against the heading being replaced, and would pull the new one back toward it (through the GNSS
        velocity, and by drifting it off until the magnetometer's gate rejects it)."""
        x, P = self.kf.x, self.kf.P
        for i in (IX_V, IX_CN, IX_CE, IX_BIAS):
            x[i, 0] = self._x0[i, 0]
            P[i, :] = 0.0
            P[:, i] = 0.0
            P[i, i] = self._p0[i, i]

    def _reset(self) -> None:
        """Start again from no position and no heading (never expected; guards the loop against a diverged
        filter). Counted in EstimatorHealth.filter_resets."""
        x0, p0 = self._x0, self._p0
        self.kf.x = x0.copy()
        self.kf.P = p0.copy()
        self._has_position = self._has_heading = False
        self._output.reset()
        self._drift_gate.reset()
        self.counters["filter_resets"] += 1

    def health(self, t_s: float) -> EstimatorHealth:
        """Covariance, innovation statistics, update ages and counters at time t_s."""
        P = self.kf.P
        x = self.kf.x
        pos_std = self._pos_std()
        heading_std = math.sqrt(max(P[IX_PSI, IX_PSI], 0.0))
        vel_std = math.sqrt(max(_max_eig_2x2(P[IX_U, IX_U], P[IX_U, IX_V], P[IX_V, IX_V]), 0.0))
        valid = self._has_position and self._has_heading
        since_gps = t_s - self._last_gps_s
        tn = self.tuning
        converged = (valid and pos_std <= tn.converged_pos_std_m and heading_std <= tn.converged_heading_std_rad
                     and since_gps <= self._gps_stale_s)
        return EstimatorHealth(
            time_s=t_s, valid=valid, converged=converged, pos_std_m=pos_std, heading_std_rad=heading_std,
            velocity_std_mps=vel_std, gyro_bias_rps=float(x[IX_BIAS, 0]),
            current_north_mps=float(x[IX_CN, 0]), current_east_mps=float(x[IX_CE, 0]),
            since_gps_s=since_gps, since_imu_s=t_s - self._last_imu_s, since_mag_s=t_s - self._last_mag_s,
            gps_nis_avg=self._gps_nis, gps_vel_nis_avg=self._gps_vel_nis, mag_nis_avg=self._mag_nis,
            covariance_trace=float(np.trace(P)), model_consistency=self.consistency.consistency,
            model_worst_axis=self.consistency.worst_axis,
            process_noise_scale=self.consistency.process_noise_scale,
            surge_drag_error=float(x[IX_KD, 0]), yaw_model_error_rps2=float(x[IX_BR, 0]),
            current_std_mps=math.sqrt(max(_max_eig_2x2(P[IX_CN, IX_CN], P[IX_CN, IX_CE], P[IX_CE, IX_CE]), 0.0)),
            **self.counters)

    @property
    def state(self) -> np.ndarray:
        """A copy of the filter's state vector (N_STATES,), order as in estimation.navekf.model."""
        return self.kf.x[:, 0].copy()

    @property
    def covariance(self) -> np.ndarray:
        """A copy of the filter's state covariance (N_STATES, N_STATES)."""
        return self.kf.P.copy()

    @property
    def mag_calibration(self) -> Optional[MagCalibration]:
        """The calibration applied to every MagSample (None: the driver applies one), fixed at construction."""
        return self._measure.mag_calibration

    # ------------------------------------------------------------------------------------------ measurements
    def _measurements(self, batch: SensorBatch) -> list:
        """The batch's measurements in time order (estimation/navekf/measurements.py), the attitude filter fed with
        the hull's own acceleration from the state and the model."""
        accel = (0.0, 0.0)
        if batch.imu:
            u_g, v_g = self._ground_body_velocity()
            r = self.kf.x[IX_R, 0]
            accel = (self.model.u_dot - v_g * r, self.model.v_dot + u_g * r)   # surge/sway + centripetal, FRD
        return self._measure.measurements(batch, accel)

    # ------------------------------------------------------------------------------------------ predict
    def _set_thrust(self, thrust: Optional[ThrustCommand]) -> None:
        if thrust is None:
            self._thrust_known = False
            return
        if len(thrust.thrust_n) != self._n_thrusters:
            raise ValueError(f"thrust has {len(thrust.thrust_n)} values but vessel {self.vessel.name!r} has "
                             f"{self._n_thrusters} thrusters")
        if not all(map(_finite, thrust.thrust_n)):
            self._thrust_known = False            # a broken command says nothing about the real thrust
            return
        if not self._thrust_known:
            self._thrust_eff = [float(f) for f in thrust.thrust_n]    # first known command: no history to lag
        self._thrust_cmd = [float(f) for f in thrust.thrust_n]
        if thrust.angle_rad is not None and all(map(_finite, thrust.angle_rad)):
            self._angle_cmd = tuple(float(a) for a in thrust.angle_rad)     # pods hold it until told otherwise
        self._thrust_known = True

    def _predict_to(self, t_s: float) -> None:
        assert self.time_s is not None                  # step() set it
        dt_total = t_s - self.time_s
        if dt_total <= 0.0:
            return
        kf = self.kf
        n_steps = max(1, int(math.ceil(dt_total / self.model.MAX_STEP_S - 1e-9)))
        dt = dt_total / n_steps
        known = self._thrust_known
        mon = self.consistency
        if mon.learning_starts != self._learning_starts_seen:
            # the innovations say the drag model is wrong: let the drag error move again
            self._learning_starts_seen = mon.learning_starts
            P = self.kf.P
            P[IX_KD, IX_KD] = max(P[IX_KD, IX_KD], self.tuning.relearn_drag_error_std ** 2)
            # on a straight leg a drag error looks like a current along it: let the two split again
            for i in (IX_CN, IX_CE):
                P[i, i] = max(P[i, i], self.tuning.relearn_current_std_mps ** 2)
        if mon.learning:
            mon.settle(self.kf.P[IX_KD, IX_KD] < self.tuning.learned_drag_error_std ** 2)
        scale = mon.process_noise_scale if self.tuning.adaptive_noise else 1.0
        learning = mon.learning
        if self._step_key != (dt, known, scale, learning):   # nearly always the same dt, scale 1, not learning
            q = self._q_density if known else self._q_density_unknown
            if scale != 1.0 or learning:
                q = q * (1.0 + (scale - 1.0) * self._adaptive_mask)
                if learning:
                    q[IX_KD] = self._q_kd_learning
            self._Q[self._q_diag_idx] = q * dt
            self._lag_a = [math.exp(-dt / max(tau, 1e-3)) for tau in self.model.thruster_tau_s]
            self._step_key = (dt, known, scale, learning)
        kf.Q = self._Q
        kf.dt_s = dt
        kf.known_thrust = known
        for _ in range(n_steps):
            if known:
                self._thrust_eff = [a * eff + (1.0 - a) * cmd
                                    for a, eff, cmd in zip(self._lag_a, self._thrust_eff, self._thrust_cmd)]
                kf.surge_n, kf.yaw_nm = self.model.forces(self._thrust_eff, self._angle_cmd)
            kf.predict()
        self._output.decay(dt_total)
        self.time_s = t_s

    # ------------------------------------------------------------------------------------------ updates
    def _on_gyro(self, dt_s: float, n: int, rate_rps: float) -> None:
        """Mean gyro z of n samples: measures r + bias."""
        H = self._H1
        H.fill(0.0)
        H[0, IX_R] = 1.0
        H[0, IX_BIAS] = 1.0
        x = self.kf.x
        self._hx1[0, 0] = x[IX_R, 0] + x[IX_BIAS, 0]
        self._z1[0, 0] = rate_rps
        self._R1[0, 0] = self._gyro_var / n + self.tuning.gyro_floor_rps ** 2
        self._yaw_statistics(rate_rps - self._hx1[0, 0], self._R1[0, 0])
        self._update(self._z1, H, self._hx1, self._R1, None, yaw=True)
        assert self.time_s is not None                  # step() set it
        self._last_imu_s = self.time_s + dt_s

    def _on_heading(self, dt_s: float, n: int, heading_rad: float) -> None:
        """Mean tilt-compensated magnetic heading (true) of n samples, taken dt_s after the filter time."""
        R = self._heading_gate(dt_s, n, heading_rad)
        if R is None:
            return
        H = self._H1
        H.fill(0.0)
        H[0, IX_PSI] = 1.0
        H[0, IX_R] = dt_s
        x = self.kf.x
        self._hx1[0, 0] = x[IX_PSI, 0] + dt_s * x[IX_R, 0]
        self._z1[0, 0] = heading_rad
        self._R1[0, 0] = R
        self._update(self._z1, H, self._hx1, self._R1, _residual_wrap_first, yaw=True)

    def _on_heading_gyro(self, dt_s: float, n: int, payload) -> None:
        """A heading (n samples, dt_s after the filter time) and a mean gyro rate in one 2-D update."""
        heading_rad, n_gyro, rate_rps, gyro_offset_s = payload
        dt_gyro_s = dt_s + gyro_offset_s
        R = self._heading_gate(dt_s, n, heading_rad)
        if R is None:
            self._on_gyro(dt_gyro_s, n_gyro, rate_rps)
            return
        H = self._H2
        H.fill(0.0)
        H[0, IX_PSI] = 1.0
        H[0, IX_R] = dt_s
        H[1, IX_R] = 1.0
        H[1, IX_BIAS] = 1.0
        x = self.kf.x
        hx = self._hx2
        hx[0, 0] = x[IX_PSI, 0] + dt_s * x[IX_R, 0]
        hx[1, 0] = x[IX_R, 0] + x[IX_BIAS, 0]
        z = self._z2
        z[0, 0] = heading_rad
        z[1, 0] = rate_rps
        Rm = self._R2
        Rm[0, 0] = R
        Rm[1, 1] = self._gyro_var / n_gyro + self.tuning.gyro_floor_rps ** 2
        Rm[0, 1] = Rm[1, 0] = 0.0
        self._yaw_statistics(rate_rps - hx[1, 0], Rm[1, 1])
        self._update(z, H, hx, Rm, _residual_wrap_first, yaw=True)
        self._last_imu_s = self.time_s + dt_gyro_s

    def _heading_gate(self, dt_s: float, n: int, heading_rad: float) -> Optional[float]:
        """Initialise, gate and count a heading measurement; its variance if it is to be used, else None.

        A heading persistently outside the gate for mag_reacquire_s is accepted again with the heading
        variance inflated to cover it (the filter was wrong, e.g. after a long magnetic disturbance)."""
        assert self.time_s is not None                  # step() set it
        t_m = self.time_s + dt_s
        R = self._mag_var / n + self.tuning.heading_floor_rad ** 2
        if not self._has_heading or self._heading_reinit:
            if self._heading_reinit:
                self._forget_drift()
            self._init_heading(heading_rad, R)
            self._heading_reinit = False
            self._mag_reject_since_s = None
            self._last_mag_s = t_m
            return None
        x, P = self.kf.x, self.kf.P
        y = wrap_pi(heading_rad - (x[IX_PSI, 0] + dt_s * x[IX_R, 0]))
        s = P[IX_PSI, IX_PSI] + 2.0 * dt_s * P[IX_PSI, IX_R] + dt_s * dt_s * P[IX_R, IX_R] + R
        nis = y * y / s
        if nis > self.tuning.mag_gate:
            if self._mag_reject_since_s is None:
                self._mag_reject_since_s = t_m
            if t_m - self._mag_reject_since_s < self.tuning.mag_reacquire_s:
                self.counters["mag_rejected"] += 1
                return None
            P[IX_PSI, IX_PSI] += y * y
            self.counters["mag_reacquisitions"] += 1
            nis = y * y / (s + y * y)
        self._mag_reject_since_s = None
        self._mag_nis += 0.05 * (nis - self._mag_nis)
        self.counters["mag_accepted"] += 1
        self._last_mag_s = t_m
        return R

    def _on_gps(self, dt_s: float, n: int, fix: GpsFix) -> None:
        """A GNSS fix dt_s after the filter time: position (gated) and speed/course (gated), fused in one update."""
        if not fix.valid:
            # a position the driver found implausible is a glitch, like one the gate refuses; none is a loss
            self.counters["gps_rejected" if fix.refused else "gps_invalid"] += 1
            return
        assert self.time_s is not None                  # step() set it
        t_m = self.time_s + dt_s
        north, east = self.frame.to_ned(fix.lat_deg, fix.lon_deg)
        std = fix.pos_std_m if fix.pos_std_m > 0 else self._gps_default_std_m
        var = std * std
        H, hx, z, R = self._H4, self._hx4, self._z4, self._R4
        H.fill(0.0)
        R.fill(0.0)
        if not self._has_position:
            x = self.kf.x
            c, s = math.cos(x[IX_PSI, 0]), math.sin(x[IX_PSI, 0])
            ax, ay = self._antenna_x_m, self._antenna_y_m
            self._init_position(north - (ax * c - ay * s), east - (ax * s + ay * c), var)
            self._last_gps_s = t_m
            if self._gps_velocity_rows(fix, 2, dt_s):
                self._update(z[2:], H[2:], hx[2:], R[2:, 2:], None)
            return
        use_pos = self._gps_position_rows(dt_s, t_m, north, east, var)
        use_vel = self._gps_velocity_rows(fix, 2, dt_s)
        if use_pos and use_vel:
            self._update(z, H, hx, R, None, position_rows=2)
        elif use_pos:
            self._update(z[:2], H[:2], hx[:2], R[:2, :2], None, position_rows=2)
        elif use_vel:
            self._update(z[2:], H[2:], hx[2:], R[2:, 2:], None)
        if use_pos:
            self.counters["gps_accepted"] += 1
            self._last_gps_s = t_m

    def _gps_position_rows(self, dt_s: float, t_m: float, north: float, east: float, var: float) -> bool:
        """Fill rows 0-1 of the GNSS measurement with the antenna position extrapolated to the fix time;
        gate it (with re-acquisition after a persistent disagreement). True if it is to be used."""
        H, hx, z, R = self._H4, self._hx4, self._z4, self._R4
        c, s = antenna_position_rows(self.kf.x, dt_s, self._antenna_x_m, self._antenna_y_m, H, hx)
        z[0, 0] = north
        z[1, 0] = east
        R[0, 0] = R[1, 1] = var
        nis, s_nn, s_ne, s_ee = self._nis2_s(z[:2], hx[:2], H[:2], R[:2, :2])
        gated = nis > self.tuning.gps_gate
        # along the bow: does the boat keep arriving behind (or ahead of) where the model puts it?
        y_bow = c * (north - hx[0, 0]) + s * (east - hx[1, 0])
        if self.tuning.drift_gate:
            verdict = self._drift_gate.classify(t_m, north - hx[0, 0], east - hx[1, 0], s_nn, s_ee, var, gated)
        else:
            verdict = "glitch" if gated else "ok"
        if verdict in ("ok", "drift"):      # a lone outlier or a glitch is no evidence about the model
            self.consistency.add_position_surge(y_bow / math.sqrt(c * c * s_nn + 2.0 * c * s * s_ne + s * s * s_ee))
        if verdict == "drift":
            # the model walked away from fixes that agree with each other: widen the position (and velocity)
            # covariance to cover the innovation and take the fix now; not a GNSS re-acquisition
            dn, de = north - hx[0, 0], east - hx[1, 0]
            P = self.kf.P
            P[IX_N, IX_N] += max(0.0, dn * dn - s_nn)      # just enough to cover the innovation
            P[IX_E, IX_E] += max(0.0, de * de - s_ee)
            self.counters["model_drift_accepts"] += 1
            nis = self._nis2(z[:2], hx[:2], H[:2], R[:2, :2])
        elif gated:
            if self._gps_reject_since_s is None:
                self._gps_reject_since_s = t_m
                self._gps_reject_run = 0
            self._gps_reject_run += 1
            if t_m - self._gps_reject_since_s < self.tuning.gps_reacquire_s or self._gps_reject_run < 3:
                self.counters["gps_rejected"] += 1
                return False
            # fixes have disagreed with the filter for a while: widen the position covariance to cover the
            # innovation and accept. The published output takes the correction up smoothly.
            dn, de = north - hx[0, 0], east - hx[1, 0]
            P = self.kf.P
            P[IX_N, IX_N] += dn * dn + var
            P[IX_E, IX_E] += de * de + var
            self.counters["gps_reacquisitions"] += 1
            nis = self._nis2(z[:2], hx[:2], H[:2], R[:2, :2])
        self._gps_reject_since_s = None
        self._gps_reject_run = 0
        self._gps_nis += 0.05 * (nis - self._gps_nis)
        return True

    def _gps_velocity_rows(self, fix, row: int, dt_s: float) -> bool:
        """Fill rows row, row+1 with speed/course as a NED ground velocity at the fix time, dt_s after the
        filter time (negative: the fix describes the boat earlier), and gate it. True if it is to be used.

        Speed and direction through the water are taken as the filter's now, at the antenna (lever arm
        included); the heading is taken back to the fix time (psi + r dt_s): see estimation/navekf/gnss_rows.py.
        Why: docs/design-notes/estimation-and-drivers.md, "The EKF"."""
        if fix.sog_mps is None or fix.cog_rad is None:
            return False
        sog = fix.sog_mps
        if not self._has_heading:
            if sog >= 2.0 * self.tuning.gps_course_min_speed_mps:
                # no magnetometer yet: course over ground is the best heading there is
                self._init_heading(fix.cog_rad, self.tuning.init_heading_std_rad ** 2)
            else:
                return False
        H, hx, z, R = self._H4, self._hx4, self._z4, self._R4
        c, s = antenna_velocity_rows(self.kf.x, dt_s, self._antenna_x_m, self._antenna_y_m, H, hx, row)
        a, b = row, row + 1
        z[a, 0] = sog * math.cos(fix.cog_rad)
        z[b, 0] = sog * math.sin(fix.cog_rad)
        var = self._speed_var
        if sog < self.tuning.gps_course_min_speed_mps:
            var += sog * sog
        R[a, a] = R[b, b] = var
        Hv = H[a:b + 1]
        S = Hv @ self.kf.P @ Hv.T + R[a:b + 1, a:b + 1]
        yn, ye = z[a, 0] - hx[a, 0], z[b, 0] - hx[b, 0]
        det = S[0, 0] * S[1, 1] - S[0, 1] * S[0, 1]
        nis = (S[1, 1] * yn * yn - 2.0 * S[0, 1] * yn * ye + S[0, 0] * ye * ye) / det
        if nis > self.tuning.gps_vel_gate:
            self._vel_reject_run += 1
            if self._vel_reject_run < self.tuning.gps_vel_reaccept_run or not self.tuning.drift_gate:
                self.counters["gps_vel_rejected"] += 1
                return False
            # Velocities from the receiver's Doppler agree with each other and keep disagreeing with the
            # prediction: the model is wrong, not the receiver. Widen the velocity covariance and take it.
            P = self.kf.P
            P[IX_U, IX_U] += yn * yn + ye * ye
            P[IX_V, IX_V] += yn * yn + ye * ye
            self.counters["gps_vel_reaccepted"] += 1
            nis = self._nis2(z[a:b + 1], hx[a:b + 1], Hv, R[a:b + 1, a:b + 1])
        self._vel_reject_run = 0
        self._gps_vel_nis += 0.05 * (nis - self._gps_vel_nis)
        if sog >= self.tuning.gps_course_min_speed_mps:
            # along the body axes: which of surge and sway the model mispredicts. Only velocities the filter
            # takes count as evidence: a lone outlier (a forged or corrupted speed) must not start learning.
            yu, yv = c * yn + s * ye, -s * yn + c * ye
            s_uu = c * c * S[0, 0] + 2.0 * c * s * S[0, 1] + s * s * S[1, 1]
            s_vv = s * s * S[0, 0] - 2.0 * c * s * S[0, 1] + c * c * S[1, 1]
            self.consistency.add_velocity(yu / math.sqrt(s_uu), yv / math.sqrt(s_vv))
        return True

    # ------------------------------------------------------------------------------------------ helpers
    def _yaw_statistics(self, y: float, r_var: float) -> None:
        """The gyro innovation's NIS into the consistency monitor (weighted: ~50 gyro means per GNSS fix)."""
        P = self.kf.P
        s = P[IX_R, IX_R] + 2.0 * P[IX_R, IX_BIAS] + P[IX_BIAS, IX_BIAS] + r_var
        self.consistency.add_yaw(y * y / s, weight=0.02)

    def _nis2(self, z, hx, H, R) -> float:
        return self._nis2_s(z, hx, H, R)[0]

    def _nis2_s(self, z, hx, H, R) -> tuple[float, float, float, float]:
        """(NIS, S[0, 0], S[0, 1], S[1, 1]) of a 2-D measurement."""
        y0 = z[0, 0] - hx[0, 0]
        y1 = z[1, 0] - hx[1, 0]
        S = H @ self.kf.P @ H.T + R
        a, b, d = S[0, 0], S[0, 1], S[1, 1]
        det = a * d - b * b
        return (d * y0 * y0 - 2.0 * b * y0 * y1 + a * y1 * y1) / det, a, b, d

    def _update(self, z, H, hx, R, residual, position_rows: int = 0, yaw: bool = False) -> None:
        kf = self.kf
        x_before_n, x_before_e, x_before_psi = kf.x[IX_N, 0], kf.x[IX_E, 0], kf.x[IX_PSI, 0]
        if yaw and abs(kf.x[IX_R, 0]) > self.tuning.turn_yaw_rate_rps:
            # A turn is where a wrong model mispredicts most: the gyro disagrees with the model's yaw rate, one
            # sign for seconds, and each update would move the position through its covariance with the yaw
            # rate. Position, current and drag error are left to GNSS until the turn is over.
            self._update_consider(z, H, hx, R, 0, residual, _TURN_YAW_FROZEN)
        elif position_rows and self.tuning.surge_bias_from_velocity_only:
            self._update_consider(z, H, hx, R, position_rows)
        else:
            kf.update(z, H, hx, R, residual)
        P = kf.P
        kf.P = 0.5 * (P + P.T)
        x = kf.x
        x[IX_PSI, 0] = wrap_pi(x[IX_PSI, 0])
        self._output.absorb(x[IX_N, 0] - x_before_n, x[IX_E, 0] - x_before_e, wrap_pi(x[IX_PSI, 0] - x_before_psi))

    def _update_consider(self, z, H, hx, R, position_rows: int, residual=None, frozen: tuple = ()) -> None:
        """Kalman update in which the first `position_rows` measurement rows (GNSS position) do not move the
        surge model-error state, and no row moves the states in `frozen`: their gains are zeroed (a
        suboptimal gain, so the Joseph form; their covariance with the others stays right)."""
        kf = self.kf
        P = kf.P
        PHt = P @ H.T
        S = H @ PHt + R
        K = PHt @ np.linalg.inv(S)
        K[IX_KD, :position_rows] = 0.0
        for i in frozen:
            K[i, :] = 0.0
        kf.x = kf.x + K @ (residual(z, hx) if residual is not None else z - hx)
        I_KH = np.eye(N_STATES) - K @ H
        kf.P = I_KH @ P @ I_KH.T + K @ R @ K.T

    def _init_position(self, north: float, east: float, var: float) -> None:
        x, P = self.kf.x, self.kf.P
        x[IX_N, 0], x[IX_E, 0] = north, east
        for i in (IX_N, IX_E):
            P[i, :] = 0.0
            P[:, i] = 0.0
            P[i, i] = var
        self._has_position = True

    def _init_heading(self, heading_rad: float, var: float) -> None:
        x, P = self.kf.x, self.kf.P
        x[IX_PSI, 0] = wrap_pi(heading_rad)
        P[IX_PSI, :] = 0.0
        P[:, IX_PSI] = 0.0
        P[IX_PSI, IX_PSI] = max(var, self.tuning.heading_floor_rad ** 2)
        self._has_heading = True

    def _ground_body_velocity(self) -> tuple[float, float]:
        """Velocity over ground in body axes (surge, sway) [m/s]."""
        x = self.kf.x
        psi = x[IX_PSI, 0]
        c, s = math.cos(psi), math.sin(psi)
        cn, ce = x[IX_CN, 0], x[IX_CE, 0]
        return x[IX_U, 0] + cn * c + ce * s, x[IX_V, 0] - cn * s + ce * c

    def _pos_std(self) -> float:
        P = self.kf.P
        return math.sqrt(max(_max_eig_2x2(P[IX_N, IX_N], P[IX_N, IX_E], P[IX_E, IX_E]), 0.0))

    def _nav_state(self, t_s: float) -> NavState:
        x = self.kf.x
        u_g, v_g = self._ground_body_velocity()
        out = self._output
        return NavState(time_s=t_s,
                        north_m=float(x[IX_N, 0] + out.north_m),
                        east_m=float(x[IX_E, 0] + out.east_m),
                        heading_rad=wrap_pi(x[IX_PSI, 0] + out.heading_rad),
                        surge_mps=float(u_g), sway_mps=float(v_g), yaw_rate_rps=float(x[IX_R, 0]),
                        pos_std_m=self._pos_std(),
                        heading_std_rad=math.sqrt(max(self.kf.P[IX_PSI, IX_PSI], 0.0)),
                        valid=self._has_position and self._has_heading)


_TURN_YAW_FROZEN = (IX_N, IX_E, IX_CN, IX_CE, IX_KD)   # what a gyro or heading leaves to GNSS in a turn


def _max_eig_2x2(a: float, b: float, d: float) -> float:
    """Larger eigenvalue of the symmetric matrix [[a, b], [b, d]]."""
    return 0.5 * (a + d) + math.sqrt(0.25 * (a - d) ** 2 + b * b)


def _finite(v) -> bool:
    try:
        return math.isfinite(v)
    except TypeError:
        return False

