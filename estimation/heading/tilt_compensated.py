"""Tilt-compensated magnetic heading, and the roll/pitch it needs from the accelerometer and gyro.

Frames: body FRD, NED. Angles in radians. Heading is clockwise from north, wrapped to [-pi, pi).
Roll phi is positive starboard side down, pitch theta positive bow up (Fossen's zyx Euler angles).

A level accelerometer at rest reads specific force (0, 0, -g) in FRD; with roll phi and pitch theta it reads
g * (sin theta, -sin phi cos theta, -cos phi cos theta).
"""
from __future__ import annotations

import math

from autopilot.vocab.angles import wrap_pi

GRAVITY_MPS2 = 9.80665


def roll_pitch_from_accel(fx: float, fy: float, fz: float) -> tuple[float, float]:
    """(roll_rad, pitch_rad) from a specific-force vector in FRD [m/s^2] (any magnitude, not all zero)."""
    roll = math.atan2(-fy, -fz)
    pitch = math.atan2(fx, math.hypot(fy, fz))
    return roll, pitch


def tilt_compensated_heading_rad(mx: float, my: float, mz: float, roll_rad: float, pitch_rad: float,
                                 declination_rad: float = 0.0) -> float:
    """True heading from a (calibrated) magnetic field vector in FRD, de-rotated by roll and pitch.

    The field is rotated into the level frame (x toward the bow's horizontal projection), its horizontal
    components give the magnetic heading, and the declination (east positive: true = magnetic + declination)
    turns it into a true heading. Units of the field do not matter; only its direction is used.
    """
    cr, sr = math.cos(roll_rad), math.sin(roll_rad)
    cp, sp = math.cos(pitch_rad), math.sin(pitch_rad)
    xh = mx * cp + (my * sr + mz * cr) * sp
    yh = my * cr - mz * sr
    return wrap_pi(math.atan2(-yh, xh) + declination_rad)


def heading_from_vectors_rad(accel_mps2: tuple[float, float, float], field: tuple[float, float, float],
                             declination_rad: float = 0.0) -> float:
    """Tilt-compensated true heading from one specific-force vector and one field vector, both FRD
    (roll and pitch from the accelerometer: valid when the hull is not accelerating much)."""
    roll, pitch = roll_pitch_from_accel(*accel_mps2)
    return tilt_compensated_heading_rad(*field, roll, pitch, declination_rad)


def level_field_horizontal_t(mx: float, my: float, mz: float, roll_rad: float, pitch_rad: float) -> float:
    """Magnitude of the field's horizontal component after de-rotation (same unit as the input)."""
    cr, sr = math.cos(roll_rad), math.sin(roll_rad)
    cp, sp = math.cos(pitch_rad), math.sin(pitch_rad)
    return math.hypot(mx * cp + (my * sr + mz * cr) * sp, my * cr - mz * sr)


class AttitudeFilter:
    """Roll and pitch by a complementary filter with gyro-bias estimation (Mahony-style PI).

    Gyro x/y rates (minus their estimated biases) are integrated and pulled toward the accelerometer's tilt
    with gain 1/time_constant_s; the integral of the disagreement estimates the gyro x/y biases (which would
    otherwise leave a steady tilt error of bias * time_constant_s). The accelerometer is first cleared of the
    vessel's own acceleration in body axes (surge acceleration and centripetal u*r in a turn, which would read
    as pitch and roll), passed in as `accel_body_*`. Wave-induced accelerations are filtered by the time
    constant. Samples whose magnitude is far from g (shocks) do not correct the estimate.
    A constant accelerometer bias reads as a tilt and is not observable here (nor is the hull's trim).

    `mean_roll_rad` / `mean_pitch_rad` follow the attitude with `mean_time_constant_s` (the hull's trim plus
    the accelerometer's bias); `dynamic_roll_rad` / `dynamic_pitch_rad` are the attitude about that mean (the
    rolling and pitching in waves and turns).
    """

    def __init__(self, time_constant_s: float = 2.0, mean_time_constant_s: float = 60.0):
        if time_constant_s <= 0:
            raise ValueError(f"time_constant_s must be > 0, got {time_constant_s}")
        if mean_time_constant_s <= 0:
            raise ValueError(f"mean_time_constant_s must be > 0, got {mean_time_constant_s}")
        self.mean_time_constant_s = mean_time_constant_s
        self._mean_age_s = 0.0
        self.mean_roll_rad = 0.0
        self.mean_pitch_rad = 0.0
        self.time_constant_s = time_constant_s
        self._kp = 1.0 / time_constant_s
        self._ki = 0.25 * self._kp * self._kp        # critically damped error dynamics
        self.roll_rad = 0.0
        self.pitch_rad = 0.0
        self.gyro_bias_x_rps = 0.0
        self.gyro_bias_y_rps = 0.0
        self.time_s: float | None = None

    def update(self, time_s: float, accel_mps2, gyro_rps, accel_body_x_mps2: float = 0.0,
               accel_body_y_mps2: float = 0.0) -> None:
        """Advance to time_s with one IMU sample (FRD specific force [m/s^2], FRD rate [rad/s])."""
        fx = accel_mps2[0] - accel_body_x_mps2
        fy = accel_mps2[1] - accel_body_y_mps2
        fz = accel_mps2[2]
        norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        if self.time_s is None:
            if norm > 0.0:
                self.roll_rad, self.pitch_rad = roll_pitch_from_accel(fx, fy, fz)
                self.mean_roll_rad, self.mean_pitch_rad = self.roll_rad, self.pitch_rad
            self.time_s = time_s
            return
        dt = time_s - self.time_s
        if dt <= 0.0:
            return              # an old or repeated sample: the newer state already includes its information
        dt = min(dt, 1.0)
        self.time_s = time_s
        # Euler-angle rates for small angles (r's contribution is second order and dropped)
        roll = self.roll_rad + (gyro_rps[0] - self.gyro_bias_x_rps) * dt
        pitch = self.pitch_rad + (gyro_rps[1] - self.gyro_bias_y_rps) * dt
        if 0.5 * GRAVITY_MPS2 < norm < 1.5 * GRAVITY_MPS2:
            ar, ap = roll_pitch_from_accel(fx, fy, fz)
            e_roll = wrap_pi(ar - roll)
            e_pitch = ap - pitch
            w = min(1.0, self._kp * dt)
            roll += w * e_roll
            pitch += w * e_pitch
            self.gyro_bias_x_rps -= self._ki * e_roll * dt
            self.gyro_bias_y_rps -= self._ki * e_pitch * dt
        self.roll_rad = wrap_pi(roll)
        self.pitch_rad = pitch
        # a running mean at first (start-up transients average out), an exponential one after one time constant
        self._mean_age_s = min(self._mean_age_s + dt, self.mean_time_constant_s)
        a = dt / self._mean_age_s
        self.mean_roll_rad += a * wrap_pi(self.roll_rad - self.mean_roll_rad)
        self.mean_pitch_rad += a * (pitch - self.mean_pitch_rad)

    @property
    def dynamic_roll_rad(self) -> float:
        return wrap_pi(self.roll_rad - self.mean_roll_rad)

    @property
    def dynamic_pitch_rad(self) -> float:
        return self.pitch_rad - self.mean_pitch_rad
