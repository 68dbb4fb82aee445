"""The compass watch takes no reference heading from a hull still sliding out of a turn.

A hull slides sideways in a turn, and one whose sway is slow (the IAcquaBot's time constant (m - Y_vdot) / -Y_v
is 3.2 s) goes on sliding for seconds after its yaw rate has died: its course over ground is then off its bow
by the slide, which the watch's drift (low-passed over 30 s) does not hold. Taken as references, those courses
made a right compass read as 10 degrees off on a zigzag and raised the magnetic-disturbance warning.
"""
from __future__ import annotations

import math

from autopilot.calibration.mag_watch import MagCalibrationWatch
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import GpsFix, MagSample, NavState, SensorBatch
from tests.support.mag_field import _field_t

SPEED_MPS = 0.8
TURN_RPS = 0.15
TURN_S, STRAIGHT_S = 12.0, 25.0


def _zigzag(compass_error_deg: float, seconds: float = 400.0) -> tuple[float, list]:
    """The IAcquaBot zigzagging (103-degree turns each way, then 25 s straight) with its linear sway model, no
    current; the compass reads compass_error_deg more than the true heading. Returns the watch's largest
    mag_consistency_deg and its warning messages."""
    vessel = load_vessel("iacquabot")
    h = vessel.hull
    m11, m22 = h.mass_kg - h.x_udot, h.mass_kg - h.y_vdot
    warnings = []
    watch = MagCalibrationWatch(vessel, None, None,
                                emit=lambda t, kind, msg, *a, **k: warnings.append(msg) if kind == "warning" else None)
    psi, v, sign, worst, dt = 0.3, 0.0, 1, 0.0, 0.1
    for i in range(int(seconds / dt)):
        t = dt * i
        phase = t % (TURN_S + STRAIGHT_S)
        if i and phase < dt / 2:
            sign = -sign
        r = sign * TURN_RPS if phase < TURN_S else 0.0
        v += (m11 * SPEED_MPS * r / h.y_v - v) * dt * -h.y_v / m22     # sway to port in a starboard turn
        psi = math.remainder(psi + r * dt, 2.0 * math.pi)
        nav = NavState(time_s=t, north_m=0.0, east_m=0.0, heading_rad=psi, surge_mps=SPEED_MPS, sway_mps=v,
                       yaw_rate_rps=r)
        fixes = []
        if i % 10 == 0:
            vn = SPEED_MPS * math.cos(psi) - v * math.sin(psi)
            ve = SPEED_MPS * math.sin(psi) + v * math.cos(psi)
            fixes.append(GpsFix(time_s=t, lat_deg=0.0, lon_deg=0.0, sog_mps=math.hypot(vn, ve),
                                cog_rad=math.atan2(ve, vn)))
        field = _field_t(vessel, psi + math.radians(compass_error_deg))
        batch = SensorBatch(gps=fixes, mag=[MagSample(time_s=t, field_t=field)])
        watch.before_estimator(batch, None)
        watch.after_estimator(t, batch, nav)
        if watch.consistency_deg is not None:
            worst = max(worst, watch.consistency_deg)
    return worst, warnings


def test_a_right_compass_is_not_taken_for_disturbed_on_a_zigzag():
    worst, warnings = _zigzag(0.0)
    assert worst < 8.0          # sensors.mag.online.warn_consistency_deg
    assert not [w for w in warnings if "disagrees" in w]


def test_a_compass_off_by_15_degrees_is_still_caught_on_the_same_zigzag():
    worst, warnings = _zigzag(15.0)
    assert worst > 12.0
    assert any("magnetic heading disagrees" in w for w in warnings)


def test_a_non_finite_yaw_rate_leaves_the_predicted_slide_finite():
    watch = MagCalibrationWatch(load_vessel("iacquabot"), None, None, emit=lambda *a, **k: None)
    for t, rate in ((0.0, 0.1), (0.1, math.nan), (0.2, math.inf), (0.3, 0.0)):
        nav = NavState(time_s=t, north_m=0.0, east_m=0.0, heading_rad=0.0, surge_mps=0.8, sway_mps=0.0,
                       yaw_rate_rps=rate)
        watch._follow_slide(t, nav)
        assert math.isfinite(watch._slide_mps)
