"""Pre-arm checks: what must hold before the autopilot drives the thrusters in a navigating mode.

`prearm_failures(inputs, cfg)` returns one line per failed check, each naming the check and why (an empty list
means: go). Arming in a navigating mode (one that steers on the estimate: `navigating(mode)`) needs all of them:

- GNSS: a fix in the last `gnss.loss_timeout_s` that the receiver marks valid, of at least `arming.min_fix_quality`
  with HDOP <= `arming.max_hdop` and >= `arming.min_sats` satellites;
- EKF: a position and heading estimate, converged (its covariance under its limits, GNSS not stale);
- IMU: gyro and magnetometer data reaching the filter (within the IMU failsafe's time-outs);
- magnetometer calibration: present and readable (`sensors.mag.calibration_file`, or given by the backend),
  in every mode that steers on the estimate except CALIBRATE_ON_WATER, which makes it
  (`modes_refused_without_mag_calibration()`);
- ESC output: an actuator is attached, reports itself connected and, when it can say so (`ready(t_s)`), has
  finished the ESCs' arming sequence;
- config: the mission passes autopilot.files.check (speeds, leg lengths, waypoints inside the geofence) and
  the vessel's own fence polygon is valid and contains the waypoints;
- launch point: the present estimate lies inside every geofence;
- operator link: a heartbeat within the link time-out, when the link is configured as `always` expected;
- battery: a measured pack voltage [V] not below the low-battery failsafe's threshold (in every mode: the
  failsafe would turn the boat back at once); an unknown voltage (no monitor, or a stale one) is not refused.

Arming in HOLD or MANUAL needs only the ESC output, the battery (and the link when `always`): the boat can be driven by
hand or left neutral without a navigation solution. A navigating mode entered later is held at neutral until
the same navigation checks pass (see Autopilot.set_mode).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

from autopilot.vocab.failsafe_config import FailsafeConfig
from autopilot.vocab.modes import ModeName, modes_that

if TYPE_CHECKING:
    from autopilot.vocab.types import GpsFix, NavState
    from estimation.navekf.health import EstimatorHealth


@dataclass(frozen=True)
class ArmResult:
    """What `Autopilot.arm(t_s)` did: `armed`, and when refused, one reason per failed check. Truthy when armed."""

    armed: bool
    reasons: tuple = ()

    def __bool__(self) -> bool:
        return self.armed

    @property
    def message(self) -> str:
        return "armed" if self.armed else "arming refused: " + "; ".join(self.reasons)


@dataclass
class PrearmInputs:
    """A snapshot of everything the checks look at (the vehicle fills it in)."""

    t_s: float
    navigating: bool                       # the mode to arm in needs a position estimate
    nav: Optional[NavState] = None
    health: Optional[EstimatorHealth] = None   # None if the estimator has none
    last_fix: Optional[GpsFix] = None      # the newest fix seen, or None
    mag_calibration_problem: Optional[str] = None
    actuator_connected: Optional[bool] = None   # None: no actuator attached
    actuator_ready: bool = True            # False while the ESCs run their arming sequence (neutral only)
    config_problems: Sequence[str] = field(default_factory=tuple)
    fences: Sequence = field(default_factory=tuple)   # autopilot.safety.geofence.Geofence
    last_heartbeat_s: Optional[float] = None
    skip_gnss: bool = False                # a GNSS failsafe already manages a degraded estimate
    battery_v: Optional[float] = None      # the measured pack [V]; None: unknown
    low_voltage_v: float = 0.0             # the low-battery failsafe's threshold [V]; 0: disabled


MAKES_THE_MAG_CALIBRATION = ModeName.CALIBRATE_ON_WATER   # the one navigating mode that arms without one


def navigating(mode) -> bool:
    """Whether arming in `mode` (a ModeName or its name) runs the navigation checks: it steers on the estimate.
    ValueError for an unknown mode name."""
    return ModeName.parse(mode).needs.estimate


def modes_refused_without_mag_calibration() -> tuple:
    """The modes an operator may choose whose arming a missing or unreadable magnetometer calibration refuses
    (a navigating one chosen while armed waits at neutral): every selectable navigating mode but
    CALIBRATE_ON_WATER, in ModeName order."""
    chosen = modes_that(estimate=True, selectable=True) - {MAKES_THE_MAG_CALIBRATION}
    return tuple(m for m in ModeName if m in chosen)


def prearm_failures(inp: PrearmInputs, cfg: FailsafeConfig) -> list:
    """One `CHECK: reason` line per failed check (empty: all passed). See the module docstring."""
    out = []
    if inp.actuator_connected is None:
        out.append("ESC output: no actuator attached to the autopilot (Autopilot.set_actuator)")
    elif not inp.actuator_connected:
        out.append("ESC output: not connected (pigpiod not reachable, or the deadman guardian tripped)")
    elif not inp.actuator_ready:
        out.append("ESC output: the ESCs are still in their arming sequence (neutral only); thrust commanded now "
                   "would not happen and the estimator, which models it, would be misled")
    if cfg.link.expect == "always":
        hb = inp.last_heartbeat_s
        if hb is None or inp.t_s - hb > cfg.link.timeout_s:
            out.append("operator link: no heartbeat from the operator's station "
                       f"(failsafe.link.expect is 'always', time-out {cfg.link.timeout_s:g} s)")
    if inp.battery_v is not None and inp.low_voltage_v > 0 and inp.battery_v < inp.low_voltage_v:
        out.append(f"battery: {inp.battery_v:.2f} V, below the low-battery threshold {inp.low_voltage_v:g} V: "
                   f"charge or change the pack")
    if not inp.navigating:
        return out
    if not inp.skip_gnss:
        out.extend(_gnss_failures(inp, cfg))
    out.extend(_estimator_failures(inp, cfg))
    if inp.mag_calibration_problem:
        out.append(inp.mag_calibration_problem)
    for problem in inp.config_problems:
        out.append(f"config: {problem}")
    nav = inp.nav
    if inp.fences and nav is not None and getattr(nav, "valid", False):
        for fence in inp.fences:
            if not fence.contains(nav.north_m, nav.east_m):
                out.append(
                    f"launch point: outside the geofence by {-fence.signed_distance_m(nav.north_m, nav.east_m):.1f} m"
                )
                break
    return out


def _gnss_failures(inp: PrearmInputs, cfg: FailsafeConfig) -> list:
    fix, a = inp.last_fix, cfg.arming
    if fix is None:
        return ["GNSS: no fix received yet"]
    age = inp.t_s - fix.time_s
    if age > cfg.gnss.loss_timeout_s:
        return [f"GNSS: no fix for {age:.1f} s"]
    if not fix.valid or fix.fix_quality <= 0:
        return ["GNSS: the receiver reports no position fix"]
    out = []
    if fix.fix_quality < a.min_fix_quality:
        out.append(f"GNSS: fix quality {fix.fix_quality} is below the required {a.min_fix_quality}")
    if not fix.hdop <= a.max_hdop:
        out.append(f"GNSS: HDOP {fix.hdop:g} is above the allowed {a.max_hdop:g}")
    if fix.sats < a.min_sats:
        out.append(f"GNSS: {fix.sats} satellites, {a.min_sats} required")
    return out


def _estimator_failures(inp: PrearmInputs, cfg: FailsafeConfig) -> list:
    h = inp.health
    if h is None:
        return ["EKF: the estimator reports no health (cannot vouch for the estimate)"]
    out = []
    if not h.valid:
        out.append("EKF: no position and heading estimate yet")
    elif not h.converged and not inp.skip_gnss:
        out.append(f"EKF: not converged (position std {h.pos_std_m:.1f} m, heading std "
                   f"{math.degrees(h.heading_std_rad):.1f} deg, last GNSS update {_ago(h.since_gps_s)})")
    if h.since_imu_s > cfg.imu.imu_timeout_s:
        out.append(f"IMU: no gyro data reaching the filter {_for(h.since_imu_s)}")
    if h.since_mag_s > cfg.imu.mag_timeout_s:
        out.append(f"magnetometer: no accepted heading {_for(h.since_mag_s)}")
    return out


def _for(s: float) -> str:
    return "yet" if math.isinf(s) else f"for {s:.1f} s"


def _ago(s: float) -> str:
    return "never" if math.isinf(s) else f"{s:.1f} s ago"
