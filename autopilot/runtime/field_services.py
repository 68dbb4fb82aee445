"""What a boat run needs besides the control loop: systemd readiness and watchdog, and the crash-safe run log.

`FieldServices.on_cycle()` is called by the loop after every real cycle, so the watchdog is pinged only while
the loop really ticks (a hung loop lets systemd's WatchdogSec fire and restart the service). Logging failures
(full disk) stop the log, never the loop; they are reported once.
"""
from __future__ import annotations

import collections
import math
import os
import time
from typing import Callable, Optional

from autopilot.runlog import RunLogger
from autopilot.runlog.cycle_row import cycle_row
from autopilot.runtime.sd_notify import Notifier, Watchdog, watchdog_interval_s

EARLY_STEPS = 3000      # estimator steps kept until the log opens (60 s of a 50 Hz loop)


class FieldServices:
    """Made before the devices open (the loop's callbacks need it); the run log starts with `start_log()` once
    they did, so a boat that cannot start (and systemd restarts) leaves no empty run directories behind.
    Events before that are kept and written first."""

    def __init__(self, vessel, mission, frame, *, log_dir: Optional[str], log_rate_hz: float = 10.0,
                 keep_runs: int = 50, max_total_mb: float = 2000.0, extra_files=(), ros=None, env=os.environ,
                 warn: Callable[[str], object] = print, wall_clock: Callable[[], float] = time.monotonic):
        self.frame = frame
        self.notifier = Notifier(env)
        self.watchdog = Watchdog(self.notifier, watchdog_interval_s(env))
        self._warn = warn
        self._wall = wall_clock
        self._last_fix = None
        self._unlogged_fix = None     # a valid fix not yet in a state.csv row
        self.applied_thrust_fn: Optional[Callable[[], Optional[tuple]]] = None   # ESC-output thrust, for the log
        self.estimator = None               # the autopilot's estimator: its inputs are logged for replay
        self.path_fn: Optional[Callable[[], tuple]] = None   # (waypoints NED, start NED): run.mcap's path
        self.time_offset_ns: Optional[int] = None   # ROS time of loop time 0 (wall clock): the log's stamps
        self._path_logged = None
        # steps before the log opened (the loop starts first): kept, so a replay starts at the filter's birth
        self._early_steps: collections.deque = collections.deque(maxlen=EARLY_STEPS)
        self._log_failure_reported = False
        self._early_events: list = []
        self._ready = False                 # no watchdog pings before READY=1
        self.log: Optional[RunLogger] = None
        self._log_args = None
        if log_dir:
            self._log_args = dict(base_dir=log_dir, vessel_file=vessel.source_file or None,
                                  mission_file=mission.source_file or None, rate_hz=log_rate_hz,
                                  keep_runs=keep_runs, max_total_mb=max_total_mb, mission_name=mission.name,
                                  extra_files=extra_files, thruster_names=[t.name for t in vessel.thrusters],
                                  ros=ros, vessel=vessel)

    def start_log(self) -> None:
        """Open the run directory (when logging is configured) and write the events seen so far."""
        if self._log_args is None or self.log is not None:
            return
        self.log = RunLogger(**self._log_args, time_offset_ns=self.time_offset_ns)
        for ev in self._early_events:
            self.log.event(ev.time_s, ev.kind, ev.message, **_event_fields(ev))
        self._early_events.clear()
        for t_s, batch, result in self._early_steps:
            self.log.log_estimator_step(t_s, batch, result, self.estimator)
        self._early_steps.clear()

    def ready(self, status: str) -> None:
        """The sensors are up and the loop runs: READY=1 (no-op outside systemd), then watchdog pings."""
        self.notifier.ready(status)
        self._ready = True

    def on_cycle(self, t_s: float, batch, result) -> None:
        if self._ready:
            self.watchdog.tick(self._wall())
        log = self.log
        if log is None:
            if self._log_args is not None and self.estimator is not None:
                self._early_steps.append((t_s, batch, result))
            return
        if self.estimator is not None:
            log.log_estimator_step(t_s, batch, result, self.estimator)
        for fix in batch.gps:
            self._last_fix = fix
            if fix.valid:
                self._unlogged_fix = fix
            log.log_gnss(t_s, fix)
        if not log.healthy:
            if not self._log_failure_reported:
                self._log_failure_reported = True
                self._warn(f"run log stopped, driving goes on: {log.error}")
            return
        if not log.due(t_s):
            return
        if self.path_fn is not None:
            wps, start = self.path_fn()
            if wps is not self._path_logged:        # a new mission is a new list
                self._path_logged = wps
                log.log_path(t_s, wps, start)
        fix = self._last_fix
        if log.log_cycle(t_s, cycle_row(result, self.frame,
                                        gps_age_s=math.nan if fix is None else t_s - fix.time_s,
                                        fix_quality=0 if fix is None else fix.fix_quality,
                                        battery_v=batch.battery_v, battery_a=batch.battery_a,
                                        battery_mah=batch.battery_mah, imu=batch.imu[-1] if batch.imu else None,
                                        new_fix=self._unlogged_fix,
                                        applied_thrust_n=self.applied_thrust_fn() if self.applied_thrust_fn
                                        else None)):
            self._unlogged_fix = None

    def on_event(self, event) -> None:
        if self.log is not None:
            self.log.event(event.time_s, event.kind, event.message, **_event_fields(event))
        elif self._log_args is not None:
            self._early_events.append(event)

    def close(self, status: str = "stopping") -> None:
        self.notifier.stopping(status)
        if self.log is not None:
            self.log.close()
        self.notifier.close()


def _event_fields(ev) -> dict:
    """What an Event carries beyond its message, for events.jsonl (a calibration update's before/after)."""
    return {"figures": ev.figures} if getattr(ev, "figures", None) else {}
