"""How tightly a boat turns, from its vessel file, and the LOS lookahead guidance flies because of it.

A line-of-sight law cannot be followed by a boat whose turning radius exceeds its lookahead, so guidance raises
the lookahead [m] to the largest of:
- `guidance.lookahead_min_turn_radii` turning radii, each the steady radius at the mission's fastest speed with
  TURN_MOMENT_SHARE of the largest yaw moment (the rest is left for the speed loop and a boat that turns slower
  than its file). The radius balances the file's yaw damping, -N_r r - N_r|r| r|r|, against the moment; sway and
  the Munk moment are left out, so it is a rough figure;
- LOS_LOOP_SEPARATION U / omega_n (U the mission's fastest speed [m/s], omega_n the heading loop's bandwidth
  [rad/s]), so that the heading loop follows the LOS loop's U / lookahead several times faster;
- that separation scaled by RESONANCE_FREE_ZETA over the heading loop's damping at speed when the Munk moment
  leaves it below 1/sqrt(2) (heading_zeta_at_speed), so the LOS loop stays off the heading loop's resonance.

Why, with the runs that showed it: docs/design-notes/guidance.md.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

from autopilot.control.heading_speed import heading_pd_gains
from autopilot.vocab.config import HullConfig, MissionConfig, VesselConfig, default_lookahead_m

TURN_MOMENT_SHARE = 0.5   # share of the largest yaw moment a planned turn may use
LOS_LOOP_SEPARATION = 4.5  # heading loop bandwidth omega_n over the LOS loop's U / lookahead, at least
RESONANCE_FREE_ZETA = 1.0 / math.sqrt(2.0)  # a second-order loop damped less peaks in its reference response
LEAST_ZETA = 0.2           # the lookahead grows with 1 / zeta down to this damping ratio, no further


def steady_yaw_rate_rps(damping_nm_s: float, quadratic_nm_s2: float, yaw_nm: float) -> float:
    """Yaw rate r [rad/s, >= 0] at which the yaw damping d r + d2 r^2 balances a yaw moment |yaw_nm| [N*m]; the
    dampings are positive (-N_r and -N_r|r| in Fossen's signs, z8 and z9 of the identified model); inf when
    both are 0."""
    moment, a, b = abs(yaw_nm), quadratic_nm_s2, damping_nm_s
    if a > 1e-9:
        return (-b + math.sqrt(b * b + 4.0 * a * moment)) / (2.0 * a)
    return moment / b if b > 0.0 else math.inf


def sway_time_constant_s(hull: HullConfig) -> float:
    """The file's sway time constant [s]: (m - Y_vdot) / -Y_v, how long a sideways slide takes to die away
    (linear damping only); inf when the file has no linear sway damping."""
    return (hull.mass_kg - hull.y_vdot) / -hull.y_v if hull.y_v < 0.0 else math.inf


def yaw_time_constant_s(hull: HullConfig) -> float:
    """The file's yaw time constant [s]: (Iz - N_rdot) / -N_r, how long the yaw rate takes to settle on a new
    moment (linear damping only); inf when the file has no linear yaw damping."""
    return (hull.iz_kgm2 - hull.n_rdot) / -hull.n_r if hull.n_r < 0.0 else math.inf


def turning_radius_m(hull: HullConfig, speed_mps: float, yaw_nm: float) -> float:
    """Radius [m] of a steady turn at `speed_mps` on the yaw moment `yaw_nm` [N*m] against the file's yaw damping;
    0 when the file has no yaw damping (nothing limits the rate), inf when the moment is 0."""
    rate = steady_yaw_rate_rps(-hull.n_r, -hull.n_rr, yaw_nm)
    return abs(speed_mps) / rate if rate > 0.0 else math.inf


def mission_speed_mps(vessel: VesselConfig, mission: MissionConfig) -> float:
    """The fastest speed [m/s] the mission asks for on any leg, within the hull's max_speed_mps."""
    speeds = [mission.cruise_speed_mps] + [p.speed_mps for p in mission.waypoints if p.speed_mps]
    return min(max(speeds), vessel.hull.max_speed_mps)


def munk_yaw_undamping_nm_s(hull: HullConfig, speed_mps: float) -> float:
    """Yaw damping [N*m*s, >= 0] the Munk moment takes from the file's hull at `speed_mps` [m/s].

    Turning at yaw rate r the hull sways at v = -(m - X_udot) u r / -Y_v (steady sway), and the Munk moment
    -(X_udot - Y_vdot) u v then pushes the turn on with (X_udot - Y_vdot)(m - X_udot) u^2 / -Y_v per unit r.
    0 when that is negative (the hull's sway added mass is below its surge's: the moment damps) or the file has
    no linear sway damping to set a steady sway. Quasi-steady: the sway lags the yaw rate, so this is an upper
    figure for yaw motions faster than the sway's time constant."""
    if not hull.y_v < 0.0:
        return 0.0
    munk = (hull.x_udot - hull.y_vdot) * (hull.mass_kg - hull.x_udot) * speed_mps * speed_mps / -hull.y_v
    return max(0.0, munk)


def heading_zeta_at_speed(vessel: VesselConfig, speed_mps: float) -> float:
    """The heading loop's damping ratio on the file's hull at `speed_mps` [m/s]: the damping its gains give
    (control.heading_pd_gains: Kd + d) less what the Munk moment takes; may be <= 0 (the loop is then unstable
    at that speed as designed)."""
    hull, cfg = vessel.hull, vessel.control.heading
    m, d, w = hull.iz_kgm2 - hull.n_rdot, -hull.n_r, cfg.omega_n_rps
    _, kd = heading_pd_gains(m, d, w, cfg.zeta)
    return (kd + d - munk_yaw_undamping_nm_s(hull, speed_mps)) / (2.0 * w * m)


def heading_loop_lookahead_m(vessel: VesselConfig, mission: MissionConfig) -> float:
    """Shortest lookahead [m] whose LOS loop (about U / lookahead [rad/s], U the mission's fastest speed) is
    LOS_LOOP_SEPARATION times slower than the heading loop's omega_n [rad/s], and further by
    RESONANCE_FREE_ZETA / zeta when the loop's damping ratio at U (heading_zeta_at_speed) is below that."""
    speed = mission_speed_mps(vessel, mission)
    zeta = heading_zeta_at_speed(vessel, speed)
    spread = RESONANCE_FREE_ZETA / max(zeta, LEAST_ZETA) if zeta < RESONANCE_FREE_ZETA else 1.0
    return LOS_LOOP_SEPARATION * speed / vessel.control.heading.omega_n_rps * spread


def lookahead_floor_m(vessel: VesselConfig, mission: MissionConfig, max_yaw_nm: Optional[float]) -> float:
    """Shortest lookahead [m] the boat can follow on this mission: `lookahead_min_turn_radii` turning radii at
    the mission's fastest speed on TURN_MOMENT_SHARE of `max_yaw_nm` (the allocator's largest yaw moment,
    N*m; left out when None, not known), and at least heading_loop_lookahead_m; 0 when the mission sets
    lookahead_min_turn_radii to 0."""
    k = mission.guidance.lookahead_min_turn_radii
    if k <= 0.0:
        return 0.0
    loop_m = heading_loop_lookahead_m(vessel, mission)
    if max_yaw_nm is None or not max_yaw_nm > 0.0:
        return loop_m
    return max(loop_m, k * turning_radius_m(vessel.hull, mission_speed_mps(vessel, mission),
                                            TURN_MOMENT_SHARE * max_yaw_nm))


def lookahead_floor_reason(vessel: VesselConfig, mission: MissionConfig, max_yaw_nm: Optional[float]) -> str:
    """Which floor sets lookahead_floor_m, in words for a log line: the turning radius or the heading loop."""
    if lookahead_floor_m(vessel, mission, max_yaw_nm) > heading_loop_lookahead_m(vessel, mission) + 1e-9:
        return (f"{vessel.name}'s turning radius at {mission_speed_mps(vessel, mission):g} m/s on half its yaw "
                f"moment")
    speed = mission_speed_mps(vessel, mission)
    why = (f"{LOS_LOOP_SEPARATION:g} x {speed:g} m/s over the heading loop's omega_n "
           f"{vessel.control.heading.omega_n_rps:g} rad/s (the LOS loop slower than the heading loop")
    zeta = heading_zeta_at_speed(vessel, speed)
    if zeta < RESONANCE_FREE_ZETA:
        why += f", and further as the Munk moment leaves the loop a damping ratio of {zeta:.2f} at that speed"
    return why + ")"


def guidance_lookahead_m(vessel: VesselConfig, mission: MissionConfig, max_yaw_nm: Optional[float]) -> float:
    """The lookahead [m] guidance flies: the mission's (else the vessel's lookahead_hull_lengths), raised to
    lookahead_floor_m."""
    return max(default_lookahead_m(vessel, mission), lookahead_floor_m(vessel, mission, max_yaw_nm))


def raised_lookahead_m(vessel: VesselConfig, mission: MissionConfig,
                       max_yaw_nm: Optional[float]) -> Optional[Tuple[float, float]]:
    """(as filed, as flown) lookahead [m] when guidance flies a longer one than the mission's (a LOS law, not an
    identification mission); None otherwise."""
    if mission.guidance.law not in ("los", "ilos") or mission.identification is not None:
        return None
    filed = default_lookahead_m(vessel, mission)
    flown = guidance_lookahead_m(vessel, mission, max_yaw_nm)
    return (filed, flown) if flown > filed + 1e-9 else None


def max_yaw_moment_nm(vessel: VesselConfig) -> float:
    """The allocator's largest yaw moment either way [N*m] at the battery's nominal voltage."""
    from autopilot.control.azimuth_allocation import make_allocator
    from drivers.thrust_map import make_thrust_maps
    return make_allocator(vessel, make_thrust_maps(vessel)).max_yaw_nm
