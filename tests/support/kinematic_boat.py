"""A boat that moves as told (no hydrodynamics) and the loop that feeds its samples to the EKF."""
from __future__ import annotations

import math
import random

import numpy as np

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import GpsFix, ImuSample, MagSample, SensorBatch

FRAME = LocalFrame(51.11, 17.06)


G = 9.80665


class KinematicBoat:
    """Truth for the tests: constant speed over ground, heading following a yaw-rate schedule.

    Sensors: GNSS with white noise (sigma per axis) at gps_rate_hz, gyro (bias + noise) and accelerometer at
    50 Hz, an undistorted magnetometer at 25 Hz. All samples carry their own times.
    """

    def __init__(self, vessel, seed=1, speed_mps=1.0, heading_rad=0.0, gps_rate_hz=1.0, gps_sigma_m=1.7,
                 yaw_rate=lambda t: 0.0, gyro_bias_rps=0.004):
        self.v = vessel
        self.rng = random.Random(seed)
        self.speed = speed_mps
        self.psi = heading_rad
        self.n = self.e = 0.0
        self.t = 0.0
        self.r = 0.0
        self.yaw_rate = yaw_rate
        self.gps_period = 1.0 / gps_rate_hz
        self.gps_sigma = gps_sigma_m
        self.gyro_bias = gyro_bias_rps
        self.next_gps = 0.0
        self.next_imu = 0.0
        self.next_mag = 0.0
        mag = vessel.sensors.mag
        inc, dec = math.radians(mag.inclination_deg), math.radians(mag.declination_deg)
        self.field_ned = (mag.field_t * math.cos(inc) * math.cos(dec), mag.field_t * math.cos(inc) * math.sin(dec),
                          mag.field_t * math.sin(inc))
        self.gps_offset = (0.0, 0.0)      # added to fixes (a jump or a shift)

    def advance(self, t_end: float) -> SensorBatch:
        batch = SensorBatch()
        dt = 0.005
        while self.t + dt <= t_end + 1e-9:
            self.t += dt
            self.r = self.yaw_rate(self.t)
            self.psi = wrap_pi(self.psi + self.r * dt)
            self.n += self.speed * math.cos(self.psi) * dt
            self.e += self.speed * math.sin(self.psi) * dt
            if self.t >= self.next_imu - 1e-9:
                self.next_imu += 0.02
                g = self.rng.gauss
                batch.imu.append(ImuSample(self.t, (g(0, 0.05), self.speed * self.r + g(0, 0.05), -G + g(0, 0.05)),
                                           (g(0, 0.002), g(0, 0.002), self.r + self.gyro_bias + g(0, 0.002))))
            if self.t >= self.next_mag - 1e-9:
                self.next_mag += 0.04
                bn, be, bd = self.field_ned
                c, s = math.cos(self.psi), math.sin(self.psi)
                g = self.rng.gauss
                batch.mag.append(MagSample(self.t, (c * bn + s * be + g(0, 3e-7), -s * bn + c * be + g(0, 3e-7),
                                                    bd + g(0, 3e-7))))
            if self.t >= self.next_gps - 1e-9:
                self.next_gps += self.gps_period
                batch.gps.append(self.fix())
        return batch

    def fix(self) -> GpsFix:
        g = self.rng.gauss
        lat, lon = FRAME.to_wgs84(self.n + g(0, self.gps_sigma) + self.gps_offset[0],
                                  self.e + g(0, self.gps_sigma) + self.gps_offset[1])
        vn = self.speed * math.cos(self.psi) + g(0, 0.1)
        ve = self.speed * math.sin(self.psi) + g(0, 0.1)
        return GpsFix(self.t, lat, lon, sog_mps=math.hypot(vn, ve), cog_rad=math.atan2(ve, vn),
                      pos_std_m=self.gps_sigma)


def run(boat, ekf, duration_s, loop_hz=50.0, on_cycle=None, batch_hook=None, thrust=None):
    """Drive the filter at loop_hz; returns arrays t, position error (n, e), heading error, nav states."""
    out = []
    k0 = int(round(boat.t * loop_hz))
    for k in range(k0 + 1, k0 + int(round(duration_s * loop_hz)) + 1):
        t = k / loop_hz
        batch = boat.advance(t)
        if batch_hook is not None:
            batch = batch_hook(t, batch)
        nav = ekf.step(t, batch, thrust)
        out.append((t, nav.north_m - boat.n, nav.east_m - boat.e, wrap_pi(nav.heading_rad - boat.psi),
                    nav.north_m, nav.east_m, nav.valid, nav.pos_std_m))
        if on_cycle is not None:
            on_cycle(t, nav)
    return np.array(out, dtype=float)
