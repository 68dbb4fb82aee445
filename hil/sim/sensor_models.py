"""Typed-level sensor models: what the GNSS, IMU and magnetometer drivers would deliver, from the plant's truth.

The autopilot sees the world only through these samples (GpsFix, ImuSample, MagSample in autopilot.vocab.types).
Noise parameters come from the vessel's `sensors:` block; every random stream is seeded and independent of
the others, so changing one sensor's rate does not change another sensor's noise.

GNSS (Quectel L76K): position error per axis = white noise of sigma = CEP / 1.1774 (a circular normal has
50 % of its mass inside 1.1774 sigma), and with `gps_noise="realistic"` a first-order Gauss-Markov bias per axis,
  s = s_hat + n + w,  n_dot = -n / tau + w_b,
discretised exactly between fixes (n_{k+1} = a n_k + sigma_b sqrt(1 - a^2) w, a = exp(-dt/tau)) and started from
its stationary distribution N(0, sigma_b^2). Velocity over ground gets white noise of `speed_noise_mps` per NED
axis in both modes; SOG and COG are computed from that noisy velocity (so COG is noise when stopped, as on a
real receiver). Position and velocity are those of the antenna (antenna_x_m, antenna_y_m in body FRD).
`pos_std_m` reports sigma; hdop 0.9-1.2 and 10-14 satellites wander slowly.

IMU: gyro = true rate + turn-on bias (drawn once, N(0, gyro_bias_rps) per axis) + white noise; accelerometer =
specific force in FRD, f = a - g: level and still reads (0, 0, -9.81); in motion
(du/dt - r v, dv/dt + r u, -g) (surge/sway acceleration plus the centripetal terms), + turn-on bias + white noise.
Roll and pitch are zero (3-DOF); the IMU sits at the CG.

Magnetometer: Earth field in NED from field_t, inclination (down positive) and declination (true = magnetic +
declination): B = F (cos I cos D, cos I sin D, sin I); rotated into the body by the true heading; then distorted
as m = S b + h (soft iron S, hard iron h from the sim-only config keys) plus white noise `noise_t` per axis.

Timing: a sensor of rate f has samples due at k / f. `sample(truth)` returns every sample due since the previous
call up to truth.time_s, each stamped with its due time. Positions and headings are moved back to the due time
with the true velocity and yaw rate; other quantities take the values of `truth`.
"""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.config import VesselConfig
from autopilot.vocab.geodesy import LocalFrame
from autopilot.vocab.types import GpsFix, ImuSample, MagSample, SensorBatch
from hil.sim.environment import GRAVITY_MPS2
from hil.sim.plant import Truth

CEP_PER_SIGMA = 1.1774   # CEP of a circular normal distribution, in units of its per-axis sigma


class NormalStream:
    """Standard normal numbers from a seeded numpy generator, drawn in blocks (much cheaper than one by one)."""

    def __init__(self, rng: np.random.Generator, block: int = 2048):
        self._rng, self._block = rng, block
        self._buf: list = []
        self._i = 0

    def __call__(self) -> float:
        i = self._i
        if i >= len(self._buf):
            self._buf = self._rng.standard_normal(self._block).tolist()
            i = 0
        self._i = i + 1
        return self._buf[i]


def gauss_markov_coefficients(dt_s: float, sigma: float, tau_s: float) -> Tuple[float, float]:
    """(a, b) with n_{k+1} = a n_k + b w_k, w ~ N(0, 1): the exact discretisation of n_dot = -n/tau + w_b whose
    stationary standard deviation is sigma."""
    a = math.exp(-dt_s / tau_s)
    return a, sigma * math.sqrt(1.0 - a * a)


class _Schedule:
    """Due times k / rate_hz; `due(t)` returns those not yet emitted with k / rate <= t (to within 1 us)."""

    def __init__(self, rate_hz: float):
        self.rate_hz = rate_hz
        self._k: Optional[int] = None
        self._next_s = -math.inf          # due time of sample k, less the tolerance

    def due(self, t_s: float) -> List[float]:
        if t_s < self._next_s:
            return []
        if self._k is None:
            self._k = math.ceil(t_s * self.rate_hz - 1e-6)
        last = math.floor(t_s * self.rate_hz + 1e-6)
        out = [k / self.rate_hz for k in range(self._k, last + 1)]
        self._k = max(self._k, last + 1)
        self._next_s = self._k / self.rate_hz - 1e-6
        return out


class GnssModel:
    """L76K position/velocity fixes with white noise and (realistic) Gauss-Markov bias. See module docstring."""

    def __init__(self, gnss_cfg, frame: LocalFrame, rate_hz: float, realistic: bool, seed: int):
        self.sigma_m = gnss_cfg.cep_m / CEP_PER_SIGMA
        self.speed_sigma_mps = gnss_cfg.speed_noise_mps
        self.realistic = realistic
        self.frame = frame
        self.antenna = (gnss_cfg.antenna_x_m, gnss_cfg.antenna_y_m)
        self._white = NormalStream(np.random.default_rng([seed, 11]))
        self._bias_w = NormalStream(np.random.default_rng([seed, 12]))
        self._vel = NormalStream(np.random.default_rng([seed, 13]))
        self._misc = np.random.default_rng([seed, 14])
        self._a, self._b = gauss_markov_coefficients(1.0 / rate_hz, gnss_cfg.bias_sigma_m, gnss_cfg.bias_tau_s)
        if realistic:
            self.bias_m = [gnss_cfg.bias_sigma_m * self._bias_w(), gnss_cfg.bias_sigma_m * self._bias_w()]
        else:
            self.bias_m = [0.0, 0.0]
        self._sats = 12
        self._started = False

    def fix(self, t_s: float, north_m: float, east_m: float, heading_rad: float,
            surge_mps: float, sway_mps: float, yaw_rate_rps: float) -> Tuple[GpsFix, Tuple[float, float]]:
        """One fix at t_s for the CG state given; returns the fix and its (north, east) error vs the antenna."""
        if self.realistic:
            if self._started:
                self.bias_m[0] = self._a * self.bias_m[0] + self._b * self._bias_w()
                self.bias_m[1] = self._a * self.bias_m[1] + self._b * self._bias_w()
        self._started = True
        c, s = math.cos(heading_rad), math.sin(heading_rad)
        ax, ay = self.antenna
        n_ant = north_m + c * ax - s * ay
        e_ant = east_m + s * ax + c * ay
        u_ant, v_ant = surge_mps - yaw_rate_rps * ay, sway_mps + yaw_rate_rps * ax
        err_n = self.sigma_m * self._white() + self.bias_m[0]
        err_e = self.sigma_m * self._white() + self.bias_m[1]
        lat, lon = self.frame.to_wgs84(n_ant + err_n, e_ant + err_e)
        vn = c * u_ant - s * v_ant + self.speed_sigma_mps * self._vel()
        ve = s * u_ant + c * v_ant + self.speed_sigma_mps * self._vel()
        r = self._misc.random()
        if r < 0.05 and self._sats > 10:
            self._sats -= 1
        elif r > 0.95 and self._sats < 14:
            self._sats += 1
        hdop = 0.9 + 0.06 * (14 - self._sats) + 0.06 * self._misc.random()
        fix = GpsFix(time_s=t_s, lat_deg=lat, lon_deg=lon, alt_m=0.0, fix_quality=1, sats=self._sats,
                     hdop=round(hdop, 2), sog_mps=math.hypot(vn, ve), cog_rad=wrap_pi(math.atan2(ve, vn)),
                     pos_std_m=self.sigma_m, valid=True)
        return fix, (err_n, err_e)


class ImuModel:
    """Gyro and accelerometer in body FRD with turn-on bias and white noise. See module docstring."""

    def __init__(self, imu_cfg, seed: int):
        bias_rng = np.random.default_rng([seed, 21])
        self.gyro_bias_rps = tuple((imu_cfg.gyro_bias_rps * bias_rng.standard_normal(3)).tolist())
        self.accel_bias_mps2 = tuple((imu_cfg.accel_bias_mps2 * bias_rng.standard_normal(3)).tolist())
        self._gyro_sigma = imu_cfg.gyro_noise_rps
        self._accel_sigma = imu_cfg.accel_noise_mps2
        self._w = NormalStream(np.random.default_rng([seed, 22]))

    def sample(self, t_s: float, surge_mps: float, sway_mps: float, yaw_rate_rps: float,
               surge_accel_mps2: float, sway_accel_mps2: float) -> ImuSample:
        w, sg, sa = self._w, self._gyro_sigma, self._accel_sigma
        gb, ab = self.gyro_bias_rps, self.accel_bias_mps2
        r = yaw_rate_rps
        return ImuSample(
            t_s,
            (surge_accel_mps2 - r * sway_mps + ab[0] + sa * w(),
             sway_accel_mps2 + r * surge_mps + ab[1] + sa * w(),
             -GRAVITY_MPS2 + ab[2] + sa * w()),
            (gb[0] + sg * w(), gb[1] + sg * w(), r + gb[2] + sg * w()))


class MagModel:
    """Earth field rotated into the body, then hard/soft iron and white noise. See module docstring."""

    def __init__(self, mag_cfg, seed: int):
        inc, dec = math.radians(mag_cfg.inclination_deg), math.radians(mag_cfg.declination_deg)
        self.field_ned_t = (mag_cfg.field_t * math.cos(inc) * math.cos(dec),
                            mag_cfg.field_t * math.cos(inc) * math.sin(dec),
                            mag_cfg.field_t * math.sin(inc))
        self.soft_iron = tuple(float(x) for x in mag_cfg.soft_iron)
        self.hard_iron_t = tuple(float(x) for x in mag_cfg.hard_iron_t)
        self._sigma = mag_cfg.noise_t
        self._w = NormalStream(np.random.default_rng([seed, 31]))

    def body_field_t(self, heading_rad: float) -> Tuple[float, float, float]:
        """The undistorted, noise-free field in body FRD for a level hull at this heading [T]."""
        bn, be, bd = self.field_ned_t
        c, s = math.cos(heading_rad), math.sin(heading_rad)
        return c * bn + s * be, -s * bn + c * be, bd

    def sample(self, t_s: float, heading_rad: float) -> MagSample:
        bx, by, bz = self.body_field_t(heading_rad)
        S, h, sig, w = self.soft_iron, self.hard_iron_t, self._sigma, self._w
        return MagSample(t_s, (S[0] * bx + S[1] * by + S[2] * bz + h[0] + sig * w(),
                               S[3] * bx + S[4] * by + S[5] * bz + h[1] + sig * w(),
                               S[6] * bx + S[7] * by + S[8] * bz + h[2] + sig * w()))


class TypedSensorSuite:
    """GNSS, IMU and magnetometer of one vessel, sampled from the plant's Truth.

    `sample(truth)` -> SensorBatch of every sample due since the previous call (see module docstring).
    After each call, `gps_truth_errors_m` lists, for each fix in that batch (same order), the horizontal
    distance [m] between the reported position and the true antenna position at the fix time (the pure receiver
    error, white noise plus bias); `last_gps_truth_error_m` is the latest such value over all calls (None before
    the first fix) and `last_gps_truth_error_ned_m` its (north, east) components. With the antenna at the CG
    (the presets), that is raw GNSS minus true position.
    """

    def __init__(self, vessel: VesselConfig, frame: LocalFrame, seed: int, gps_noise: str = "realistic",
                 gps_rate_hz: Optional[float] = None, imu_rate_hz: float = 50.0, mag_rate_hz: float = 10.0):
        if gps_noise not in ("white", "realistic"):
            raise ValueError(f"gps_noise: must be 'white' or 'realistic', got {gps_noise!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {seed!r}")
        gnss = vessel.sensors.gnss
        gps_rate = gnss.rate_hz if gps_rate_hz is None else gps_rate_hz
        for name, rate, hi in (("gps_rate_hz", gps_rate, 10.0), ("imu_rate_hz", imu_rate_hz, 1000.0),
                               ("mag_rate_hz", mag_rate_hz, 1000.0)):
            if not (isinstance(rate, (int, float)) and 0.0 < rate <= hi):
                raise ValueError(f"{name}: must be in (0, {hi}] Hz, got {rate!r}")
        seed = int(seed)
        self.gps_noise = gps_noise
        self.gnss = GnssModel(gnss, frame, gps_rate, gps_noise == "realistic", seed)
        self.imu = ImuModel(vessel.sensors.imu, seed)
        self.mag = MagModel(vessel.sensors.mag, seed)
        self._gps_due, self._imu_due, self._mag_due = _Schedule(gps_rate), _Schedule(imu_rate_hz), \
            _Schedule(mag_rate_hz)
        self.gps_truth_errors_m: List[float] = []
        self.last_gps_truth_error_m: Optional[float] = None
        self.last_gps_truth_error_ned_m: Optional[Tuple[float, float]] = None

    @property
    def gps_rate_hz(self) -> float:
        return self._gps_due.rate_hz

    def sample(self, truth: Truth) -> SensorBatch:
        t = truth.time_s
        psi, u, v, r = truth.heading_rad, truth.surge_mps, truth.sway_mps, truth.yaw_rate_rps
        batch = SensorBatch()
        imu = self.imu
        for td in self._imu_due.due(t):
            batch.imu.append(imu.sample(td, u, v, r, truth.surge_accel_mps2, truth.sway_accel_mps2))
        for td in self._mag_due.due(t):
            batch.mag.append(self.mag.sample(td, psi - r * (t - td)))
        errors = []
        for td in self._gps_due.due(t):
            back = t - td
            c, s = math.cos(psi), math.sin(psi)
            n = truth.north_m - back * (c * u - s * v)
            e = truth.east_m - back * (s * u + c * v)
            fix, err = self.gnss.fix(td, n, e, psi - r * back, u, v, r)
            batch.gps.append(fix)
            errors.append(math.hypot(*err))
            self.last_gps_truth_error_ned_m = err
        self.gps_truth_errors_m = errors
        if errors:
            self.last_gps_truth_error_m = errors[-1]
        return batch
