"""Failsafe monitors: watch the estimator, the sensors, the fence, the operator link, the battery, the loop and
the ESC output while armed, and say what to do about each problem. Thresholds and actions come from
autopilot/vocab/failsafe_config.py's FailsafeConfig (the vessel's `failsafe:` section).

`FailsafeManager.update(...)` returns the `Trigger`s of this cycle; the vehicle logs each as an Event (kind
"failsafe") and carries out its action:

  dead-reckon   GNSS lost or rejected: the mode carries on, on the estimate (reported only)
  slow          hold the present heading at the configured slow speed (mode HEADING_HOLD)
  loiter        station keeping around the present estimate (LOITER)
  rtl           return to the launch point, then LOITER (RTL)
  brake-rtl, brake-hold   stop on the present heading (BRAKE), then RTL or HOLD
  hold          thrusters neutral (HOLD)           disarm   thrusters neutral and disarmed
  report        nothing to change, but worth knowing
  none          the condition holds but the present mode is left alone (e.g. HOLD already, or MANUAL for GNSS)
  recovered     the condition cleared; the mode is NOT changed back (the operator decides)

Kinds: gps-loss, gps-glitch, ekf-unhealthy (the filter restarted), imu-loss, mag-loss, geofence, link-loss,
low-battery, overrun, esc-disconnect, thruster-dead (a thruster delivers almost none of its thrust:
`thruster_dead`, from autopilot/safety/thruster_health.py), clock-jump (simulated time jumped over a gap the
autopilot did not see: `clock_jump`; the sensors' ages count from its end, so the gap is reported once, as
clock-jump). A sensor that has never delivered (GNSS before the first fix, after the filter restarted) is not
"lost": the pre-arm checks and the navigation checks a navigating mode waits for cover that case.

Precedence: an action never undoes a more restrictive active failsafe. While the IMU or magnetometer is lost no
navigating mode is allowed (any action becomes HOLD); once dead reckoning has run out, AUTO and RTL are not
allowed (an RTL becomes the GNSS fallback, LOITER or HOLD); past `gnss.max_pos_std_m` LOITER is not allowed
either. `blocked(mode)` answers the same question for the operator's mode requests. The monitors that read the
estimator's health run every `check_period_s` (0.1 s), not every cycle.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from autopilot.safety.actions import Action
from autopilot.vocab.failsafe_config import FailsafeConfig
from autopilot.vocab.modes import ModeName, modes_that

if TYPE_CHECKING:
    from autopilot.vocab.types import NavState
    from estimation.navekf.health import EstimatorHealth

# what each mode needs (autopilot/vocab/modes.py) decides which failsafes act in it
NAVIGATING = modes_that(position=True)       # the GNSS and position failsafes act
ESTIMATED = modes_that(estimate=True)        # control feeds back the estimate: the IMU failsafes act too
DRIVEN = modes_that(drives=True)             # the thrusters are driven: link, battery and overrun act
MOVING = frozenset({ModeName.AUTO, ModeName.RTL, ModeName.GUIDED})   # modes that follow a track (the GNSS 'slow'
#                                                                        stage applies)
SLOW_MOVING_MPS = 0.15                       # below this speed over ground the boat has no course to speak of

# the actions that steer on a heading, which an IMU or magnetometer loss turns into HOLD
_STEERED_ACTIONS = frozenset({Action.RTL, Action.LOITER, Action.SLOW, Action.BRAKE_RTL, Action.BRAKE_HOLD})

# GNSS stages after the loss was detected
_DR, _SLOW, _FALLBACK, _UNUSABLE = 0, 1, 2, 3


@dataclass(frozen=True)
class Trigger:
    kind: str        # what happened (see the module docstring)
    action: Action   # what the vehicle does about it (a str is converted; ValueError for an unknown one)
    detail: str      # human-readable, with the figures that led to it
    pending: bool = False   # reported between cycles: the action is resolved against the mode of the next one

    def __post_init__(self):
        object.__setattr__(self, "action", Action(self.action))

    @property
    def message(self) -> str:
        return f"{self.kind}: {self.detail}; action: {self.action}"


class FailsafeManager:
    """See the module docstring. Call `reset(t_s)` on arming, `update(...)` every control cycle while armed."""

    _overrun_reported: bool              # set by reset()

    def __init__(self, cfg: FailsafeConfig, *, low_voltage_v: float = 0.0, stop_decel_mps2: float = 0.5):
        self.cfg = cfg
        self.low_voltage_v = low_voltage_v
        self.stop_decel_mps2 = stop_decel_mps2
        self.fences: Sequence = ()
        self.last_heartbeat_s: Optional[float] = None
        self._overruns: deque = deque()
        self._pending: list = []
        self._ages_from_s = -math.inf        # sensor ages count from here (the end of a clock jump)
        self.reset(0.0)

    # ------------------------------------------------------------------ inputs between cycles
    def operator_heartbeat(self, t_s: float) -> None:
        if self.last_heartbeat_s is None or t_s > self.last_heartbeat_s:
            self.last_heartbeat_s = t_s

    def report_overrun(self, t_s: float, late_s: float) -> None:
        """The runner missed a cycle's deadline by late_s seconds."""
        c = self.cfg.overrun
        if not late_s >= c.late_s:
            return
        self._overruns.append(t_s)
        while self._overruns and self._overruns[0] < t_s - c.window_s:
            self._overruns.popleft()
        if not self._overrun_reported:
            self._overrun_reported = True
            self._pending.append(Trigger("overrun", Action.REPORT, f"control cycle {1e3 * late_s:.0f} ms late"))
        if len(self._overruns) >= c.count and "overrun" not in self.active:
            self.active["overrun"] = c.action
            self._pending.append(Trigger("overrun", Action(c.action), pending=True, detail=
                                         f"{len(self._overruns)} missed deadlines within {c.window_s:g} s"))

    def clock_jump(self, t_from_s: float, t_to_s: float, limit_s: float) -> None:
        """Simulated time went from t_from_s to t_to_s [s] with no cycle between (the simulator ran on while its
        clock did not reach us). A gap over limit_s [s] is what a boat would have run without its sensors for that
        long: the IMU-loss action (failsafe.imu.action) while the thrusters are driven; a shorter one is taken as
        the simulation having held (the caller reports it). Either way the sensors' ages restart at t_to_s."""
        gap = t_to_s - t_from_s
        self._ages_from_s = max(self._ages_from_s, t_to_s)
        if gap > limit_s:
            self._pending.append(Trigger("clock-jump", Action(self.cfg.imu.action), pending=True, detail=
                                         f"simulated time jumped {gap:.2f} s (from {t_from_s:.2f} s to "
                                         f"{t_to_s:.2f} s) while its clock was lost: the boat ran that long "
                                         f"without the autopilot"))

    def thruster_dead(self, detail: str, can_steer: bool) -> None:
        """A thruster gives (almost) no thrust. `can_steer`: the others were given its share (the allocator left
        it out): RTL; otherwise the boat cannot steer: HOLD, and no mode that steers is allowed until re-armed."""
        action = Action.RTL if can_steer else Action.HOLD
        if self.active.get("thruster-dead") is not Action.HOLD:
            self.active["thruster-dead"] = action
        self._pending.append(Trigger("thruster-dead", action, detail, pending=True))

    # ------------------------------------------------------------------ state
    def reset(self, t_s: float) -> None:
        """Forget every condition (on arming)."""
        self.active: dict = {}                 # kind -> action in force
        self._armed_t = t_s
        self._next_check = -math.inf
        self._gnss_stage: Optional[int] = None
        self._gnss_kind = "gps-loss"
        self._gnss_t0 = t_s
        self._acc_seen: Optional[int] = None
        self._rej_base: Optional[int] = None
        self._inv_base: Optional[int] = None
        self._reacq_seen: Optional[int] = None
        self._resets_seen: Optional[int] = None
        self._low_since: Optional[float] = None
        self._fence_braking = False
        self._fence_breach = False
        self._overruns.clear()
        self._overrun_reported = False
        self._pending = []

    @property
    def gnss_degraded(self) -> bool:
        """Dead reckoning has run its time (or the estimate is unusable): no AUTO or RTL."""
        return self._gnss_stage is not None and self._gnss_stage >= _SLOW

    @property
    def gnss_active(self) -> bool:
        return self._gnss_stage is not None

    def blocked(self, mode: ModeName) -> Optional[str]:
        """Why an active failsafe forbids `mode` (None: allowed)."""
        if mode in NAVIGATING:
            for kind in ("imu-loss", "mag-loss"):
                if kind in self.active:
                    return f"{kind} failsafe active (no heading to navigate on)"
        elif mode in ESTIMATED and "imu-loss" in self.active:
            return "imu-loss failsafe active (no yaw rate to control)"
        if mode in NAVIGATING and self.active.get("thruster-dead") is Action.HOLD:
            return "thruster-dead failsafe active (a thruster is dead: cannot steer)"
        if mode in MOVING and self.gnss_degraded:
            return f"{self._gnss_kind} failsafe active (dead reckoning ran out; position not trusted for a track)"
        if mode == ModeName.LOITER and self._gnss_stage == _UNUSABLE:
            return f"{self._gnss_kind} failsafe active (position estimate unusable)"
        return None

    def resolve(self, action: str, home_known: bool = True) -> Action:
        """The action actually taken for `action`, given what is active (see Precedence)."""
        action = Action(action)
        if ("imu-loss" in self.active or "mag-loss" in self.active or
                self.active.get("thruster-dead") is Action.HOLD) and action in _STEERED_ACTIONS:
            return Action.HOLD
        if action in (Action.RTL, Action.BRAKE_RTL) and (not home_known or self.gnss_degraded):
            fallback = Action(self.cfg.gnss.then) if self.gnss_degraded else Action.HOLD
            return Action.brake_then(fallback) if action is Action.BRAKE_RTL else fallback
        if action is Action.LOITER and self._gnss_stage == _UNUSABLE:
            return Action.HOLD
        return action

    # ------------------------------------------------------------------ the cycle
    def update(self, t_s: float, nav: Optional[NavState], mode: ModeName, *,
               health_fn: Callable[[float], Optional[EstimatorHealth]],
               raw_offset_fn: Callable[[], float] = lambda: 0.0, battery_v: Optional[float] = None,
               actuator_connected: Optional[bool] = True, home_known: bool = True) -> list:
        """Triggers of this cycle. `health_fn(t_s)` -> EstimatorHealth (called at most every check_period_s);
        `raw_offset_fn()` -> distance between the published estimate and the filter's own state [m]."""
        out = []
        if self._pending:
            for p in self._pending:
                if p.pending:
                    p = Trigger(p.kind, self.resolve(p.action, home_known) if mode in DRIVEN else Action.NONE,
                                p.detail)
                out.append(p)
            self._pending = []
        if t_s < self._next_check:
            return out
        self._next_check = t_s + self.cfg.check_period_s
        if actuator_connected is False and "esc-disconnect" not in self.active:
            self.active["esc-disconnect"] = Action.DISARM
            out.append(Trigger("esc-disconnect", Action.DISARM,
                               "ESC output not connected, or lost since the last check (pigpiod, the PWM chip "
                               "or the I2C board gone, or the deadman tripped)"))
            return out
        if actuator_connected and "esc-disconnect" in self.active:
            del self.active["esc-disconnect"]
        h = health_fn(t_s)
        if h is not None:
            self._filter(h, mode, out)
            self._sensors(t_s, h, mode, out)
            self._gnss(t_s, h, mode, raw_offset_fn, home_known, out)
        self._geofence(t_s, nav, mode, home_known, out)
        self._link(t_s, mode, home_known, out)
        self._battery(t_s, battery_v, mode, home_known, out)
        self._overrun_clear(t_s, out)
        return out

    # ------------------------------------------------------------------ monitors
    def _age(self, t_s: float, since_s: float) -> float:
        """A sensor's age [s] counted from the end of the latest clock jump at most (inf stays inf: never seen)."""
        return since_s if since_s == math.inf else min(since_s, t_s - self._ages_from_s)

    def _filter(self, h, mode, out) -> None:
        resets = getattr(h, "filter_resets", 0)
        if self._resets_seen is None or resets < self._resets_seen:
            self._resets_seen = resets
        elif resets > self._resets_seen:
            self._resets_seen = resets
            act = Action.HOLD if mode in ESTIMATED else Action.NONE
            out.append(Trigger("ekf-unhealthy", act, "the navigation filter restarted (its state went non-finite); "
                                                     "the estimate starts again from the next fixes"))

    def _sensors(self, t_s, h, mode, out) -> None:
        c = self.cfg.imu
        for kind, since, limit, what in (("imu-loss", self._age(t_s, h.since_imu_s), c.imu_timeout_s, "gyro data"),
                                         ("mag-loss", self._age(t_s, h.since_mag_s), c.mag_timeout_s,
                                          "accepted magnetometer heading")):
            lost = limit < since < math.inf          # never seen yet is not a loss (the pre-arm checks cover it)
            if lost and kind not in self.active:
                self.active[kind] = c.action
                act = (Action(c.action) if mode in NAVIGATING or c.action == Action.DISARM or
                       (mode in ESTIMATED and kind == "imu-loss") else Action.NONE)
                out.append(Trigger(kind, act, f"no {what} for {since:.1f} s"))
            elif not lost and kind in self.active:
                del self.active[kind]
                out.append(Trigger(kind, Action.RECOVERED, f"{what} again"))

    def _gnss(self, t_s, h, mode, raw_offset_fn, home_known, out) -> None:
        g = self.cfg.gnss
        # a re-acquisition that moves the estimate far: one of GNSS and the estimate is wrong
        if self._reacq_seen is None or h.gps_reacquisitions < self._reacq_seen:
            self._reacq_seen = h.gps_reacquisitions
        elif h.gps_reacquisitions > self._reacq_seen:
            self._reacq_seen = h.gps_reacquisitions
            jump = raw_offset_fn()
            if jump > g.max_jump_m:
                act = Action.HOLD if mode in NAVIGATING else Action.NONE
                out.append(Trigger("gps-glitch", act, f"the EKF trusted GNSS again after rejecting it for "
                                                      f"{g.glitch_reject_s:g} s and its position moved {jump:.0f} m"))
            else:
                out.append(
                    Trigger("gps-glitch", Action.REPORT, f"the EKF trusted GNSS again (position moved {jump:.1f} m)")
                )
        if h.gps_accepted != self._acc_seen:       # counters as of the latest accepted fix: what came after
            self._acc_seen = h.gps_accepted         # tells a loss (invalid fixes) from a glitch (rejected ones)
            self._rej_base, self._inv_base = h.gps_rejected, h.gps_invalid
        since_gps = self._age(t_s, h.since_gps_s)
        lost = g.loss_timeout_s < since_gps < math.inf      # never accepted yet is not a loss
        if not lost:
            if self._gnss_stage is not None:
                out.append(Trigger(self._gnss_kind, Action.RECOVERED,
                                   f"GNSS positions accepted again after {t_s - self._gnss_t0:.1f} s without"))
                self.active.pop(self._gnss_kind, None)
                self._gnss_stage = None
            return
        if self._gnss_stage is None:
            rejected = h.gps_rejected - (self._rej_base if self._rej_base is not None else h.gps_rejected)
            invalid = h.gps_invalid - (self._inv_base if self._inv_base is not None else h.gps_invalid)
            self._gnss_kind = "gps-glitch" if rejected > invalid else "gps-loss"
            why = ("fixes rejected by the EKF's innovation gate" if rejected > invalid else
                   "the receiver reports no position" if invalid else "no fixes arriving")
            self._gnss_t0 = t_s - since_gps
            self._gnss_stage = _DR
            self.active[self._gnss_kind] = Action.DEAD_RECKON
            act = Action.DEAD_RECKON if mode in NAVIGATING else Action.NONE
            out.append(Trigger(self._gnss_kind, act, f"no accepted GNSS position for {since_gps:.1f} s ({why}); "
                                                    f"dead-reckoning for up to {g.dead_reckon_s:g} s"))
        kind, since = self._gnss_kind, t_s - self._gnss_t0
        if self._gnss_stage == _DR and since >= g.dead_reckon_s:
            self._gnss_stage = _SLOW
            self.active[kind] = Action.SLOW
            if mode in MOVING and g.slow_s > 0:
                out.append(Trigger(kind, Action.SLOW, f"dead-reckoned {g.dead_reckon_s:g} s: holding the heading at "
                                                 f"{g.slow_speed_mps:g} m/s for {g.slow_s:g} s"))
        if self._gnss_stage == _SLOW and since >= g.dead_reckon_s + g.slow_s:
            self._gnss_stage = _FALLBACK
            self.active[kind] = g.then
            act = Action(g.then) if mode in NAVIGATING else Action.NONE
            out.append(Trigger(kind, act, f"{since:.0f} s without an accepted GNSS position"))
        if self._gnss_stage != _UNUSABLE and h.pos_std_m > g.max_pos_std_m:
            self._gnss_stage = _UNUSABLE
            self.active[kind] = Action.HOLD
            act = Action.HOLD if mode in NAVIGATING else Action.NONE
            out.append(Trigger(kind, act, f"estimated position error {h.pos_std_m:.1f} m exceeds "
                                          f"{g.max_pos_std_m:g} m"))

    def _geofence(self, t_s, nav, mode, home_known, out) -> None:
        c = self.cfg.geofence
        if not self.fences or not c.enabled or nav is None or not nav.valid or mode not in DRIVEN:
            self._fence_braking = self._fence_braking and mode == ModeName.BRAKE
            return
        n, e = nav.north_m, nav.east_m
        margin = min(f.signed_distance_m(n, e) for f in self.fences)
        if margin < 0.0:
            if not self._fence_breach:
                self._fence_breach = True
                act = self.resolve(c.action, home_known) if mode != ModeName.RTL else Action.NONE
                out.append(Trigger("geofence", act, f"outside the geofence by {-margin:.1f} m"))
            return
        self._fence_breach = False
        if mode == ModeName.BRAKE or (mode == ModeName.RTL and c.action == Action.RTL):
            return
        psi = nav.heading_rad
        cs, sn = math.cos(psi), math.sin(psi)
        vn = cs * nav.surge_mps - sn * nav.sway_mps
        ve = sn * nav.surge_mps + cs * nav.sway_mps
        speed = math.hypot(vn, ve)
        if speed < SLOW_MOVING_MPS:
            self._fence_braking = False
            return
        course = math.atan2(ve, vn)
        stop_m = speed * speed / (2.0 * self.stop_decel_mps2) + speed * (c.reaction_s + self.cfg.check_period_s) \
            + c.margin_m
        ahead = min(f.distance_ahead_m(n, e, course) for f in self.fences)
        if ahead < stop_m:
            if not self._fence_braking:
                self._fence_braking = True
                act = self.resolve(Action.brake_then(c.action), home_known)
                out.append(Trigger("geofence", act, f"{ahead:.1f} m to the fence on course "
                                                    f"{math.degrees(course) % 360:.0f} deg at {speed:.2f} m/s "
                                                    f"(stopping distance plus margin {stop_m:.1f} m)"))
        else:
            self._fence_braking = False

    def _link(self, t_s, mode, home_known, out) -> None:
        c = self.cfg.link
        if c.expect == "off":
            return
        ref = self.last_heartbeat_s
        if ref is None:
            if c.expect != "always":
                return
            ref = self._armed_t
        quiet = t_s - ref
        if quiet > c.timeout_s and "link-loss" not in self.active:
            self.active["link-loss"] = c.action
            act = self.resolve(c.action, home_known) if mode in DRIVEN else Action.NONE
            out.append(Trigger("link-loss", act, f"no operator heartbeat for {quiet:.1f} s"))
        elif quiet <= c.timeout_s and "link-loss" in self.active:
            del self.active["link-loss"]
            out.append(Trigger("link-loss", Action.RECOVERED, "operator heartbeats again"))

    def _battery(self, t_s, battery_v, mode, home_known, out) -> None:
        if self.low_voltage_v <= 0.0 or battery_v is None or "low-battery" in self.active:
            return
        if battery_v >= self.low_voltage_v:
            self._low_since = None
            return
        if self._low_since is None:
            self._low_since = t_s
        if t_s - self._low_since >= self.cfg.battery.delay_s:
            self.active["low-battery"] = self.cfg.battery.action
            act = self.resolve(self.cfg.battery.action, home_known) if mode in DRIVEN else Action.NONE
            out.append(Trigger("low-battery", act, f"battery {battery_v:.2f} V below {self.low_voltage_v:g} V for "
                                                   f"{t_s - self._low_since:.1f} s"))

    def _overrun_clear(self, t_s, out) -> None:
        c = self.cfg.overrun
        while self._overruns and self._overruns[0] < t_s - c.window_s:
            self._overruns.popleft()
        if not self._overruns and self._overrun_reported:
            self._overrun_reported = False
            if "overrun" in self.active:
                del self.active["overrun"]
                out.append(Trigger("overrun", Action.RECOVERED, f"no missed deadline for {c.window_s:g} s"))

