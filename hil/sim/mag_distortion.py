"""The simulated magnetometer's distortion (hard and soft iron) and the readings it gives, as `autopilot calibrate
mag --sim` and the simulator's distorted-compass runs use them."""
from __future__ import annotations

import math

import numpy as np

from autopilot.vocab.angles import rotation_rpy, wrap_pi

SIM_HARD_IRON_DIR = (0.62, -0.48, 0.62)       # direction of the simulated hard-iron offset (normalised below)


# ------------------------------------------------------------------------------------------------ simulation
def sim_distortion(vessel, hard_iron_ut: float, soft_iron_pct: float) -> tuple[np.ndarray, np.ndarray]:
    """(hard iron h [T] (3,), soft iron S (3, 3)) for the simulation.

    The vessel config's sensors.mag.hard_iron_t / soft_iron are used when they are not the defaults;
    otherwise h has magnitude hard_iron_ut along a fixed oblique direction and S = R diag(1 + p, 1 - p, 1) R^T
    (p = soft_iron_pct / 100, R a fixed oblique rotation): symmetric, scaling some direction by p.
    """
    mag = vessel.sensors.mag
    h = np.array(mag.hard_iron_t, dtype=float)
    S = np.array(mag.soft_iron, dtype=float).reshape(3, 3)
    if not np.any(h):
        d = np.array(SIM_HARD_IRON_DIR)
        h = d / np.linalg.norm(d) * hard_iron_ut * 1e-6
    if np.allclose(S, np.eye(3)):
        p = soft_iron_pct / 100.0
        a, b = math.radians(35), math.radians(25)
        rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        rx = np.array([[1, 0, 0], [0, math.cos(b), -math.sin(b)], [0, math.sin(b), math.cos(b)]])
        R = rz @ rx
        S = R @ np.diag([1 + p, 1 - p, 1.0]) @ R.T
    return h, S


def simulate_readings(vessel, h, S, noise_t: float, method: str, rng: np.random.Generator):
    """Distorted readings m = S b + h + noise as the sim's magnetometer makes them (hil/sensor_models).

    3d: 600 uniformly random orientations (bench). 2d: two slow full turns of a boat rolling and pitching
    +-2 degrees in small waves (720 readings). Returns (readings (n, 3) [T], true headings (n,) [rad])."""
    mag = vessel.sensors.mag
    inc, dec = math.radians(mag.inclination_deg), math.radians(mag.declination_deg)
    b_ned = mag.field_t * np.array([math.cos(inc) * math.cos(dec), math.cos(inc) * math.sin(dec), math.sin(inc)])
    out, headings = [], []
    if method == "3d":
        q = rng.standard_normal((600, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        for w, x, y, z in q:
            R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                          [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                          [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
            out.append(R.T @ b_ned)
            headings.append(math.atan2(R[1, 0], R[0, 0]))
    else:
        for k in range(720):
            psi = wrap_pi(2 * 2 * math.pi * k / 720)
            roll = math.radians(2.0) * math.sin(2 * math.pi * k / 7.0)
            pitch = math.radians(2.0) * math.sin(2 * math.pi * k / 11.0)
            out.append(rotation_rpy(roll, pitch, psi).T @ b_ned)
            headings.append(psi)
    body = np.array(out)
    readings = body @ S.T + h + noise_t * rng.standard_normal(body.shape)
    return readings, np.array(headings)


def heading_errors_deg(vessel, h, S, noise_t, calibration, rng) -> tuple[float, float, float]:
    """(RMS heading error before, after, noise) [deg] over a level full turn in 1-degree steps.

    Before/after compare the heading of the distorted and of the corrected noise-free field with the truth:
    the error the calibration leaves, which no amount of averaging removes. `noise` is the RMS heading
    scatter that one noisy reading adds after correction (the EKF averages it away)."""
    from estimation.heading.tilt_compensated import tilt_compensated_heading_rad

    mag = vessel.sensors.mag
    inc, dec = math.radians(mag.inclination_deg), math.radians(mag.declination_deg)
    b_ned = mag.field_t * np.array([math.cos(inc) * math.cos(dec), math.cos(inc) * math.sin(dec), math.sin(inc)])
    before, after, scatter = [], [], []
    for k in range(360):
        psi = wrap_pi(math.radians(k))
        raw = S @ (rotation_rpy(0.0, 0.0, psi).T @ b_ned) + h
        cor = calibration.apply(raw)
        noisy = calibration.apply(raw + noise_t * rng.standard_normal(3))
        # the ignores: mypy cannot count a star-unpacked array (3 components), so it sees too many arguments
        before.append(wrap_pi(tilt_compensated_heading_rad(*raw, 0.0, 0.0, dec) - psi))  # type: ignore[call-arg]  # 3
        heading = tilt_compensated_heading_rad(*cor, 0.0, 0.0, dec)  # type: ignore[call-arg]  # 3 components
        after.append(wrap_pi(heading - psi))
        scatter.append(wrap_pi(tilt_compensated_heading_rad(*noisy, 0.0, 0.0, dec)  # type: ignore[call-arg]  # 3
                               - heading))
    rms = lambda e: math.degrees(math.sqrt(float(np.mean(np.square(e)))))   # noqa: E731
    return rms(before), rms(after), rms(scatter)
