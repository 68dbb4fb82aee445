"""What a boat run needs besides the control loop: systemd readiness and watchdog, and the crash-safe run log.

`FieldServices.on_cycle()` is called by the loop after every real cycle, so the watchdog is pinged only while
the loop really ticks (a hung loop lets systemd's WatchdogSec fire and restart the service). Logging failures
(full disk) stop the log, never the loop; they are reported once.
"""
from __future__ import annotations

import math
import os
import time
from typing import Callable, Optional

from autopilot.runlog import RunLogger
from autopilot.runlog.cycle_row import cycle_row
from autopilot.sd_notify import Notifier, Watchdog, watchdog_interval_s


class FieldServices:
    def __init__(self, vessel, mission, frame, *, log_dir: Optional[str], log_rate_hz: float = 10.0,
                 keep_runs: int = 50, max_total_mb: float = 2000.0, extra_files=(), env=os.environ,
                 warn: Callable[[str], None] = print, wall_clock: Callable[[], float] = time.monotonic):
        self.frame = frame
        self.notifier = Notifier(env)
        self.watchdog = Watchdog(self.notifier, watchdog_interval_s(env))
        self._warn = warn
        self._wall = wall_clock
        self._last_fix = None
        self._log_failure_reported = False
        self.log: Optional[RunLogger] = None
        if log_dir:
            self.log = RunLogger(log_dir, vessel.source_file or None, mission.source_file or None,
                                 rate_hz=log_rate_hz, keep_runs=keep_runs, max_total_mb=max_total_mb,
                                 mission_name=mission.name, extra_files=extra_files,
                                 thruster_names=[t.name for t in vessel.thrusters])

    def ready(self, status: str) -> None:
        """The sensors are up and the loop is about to run: READY=1 (no-op outside systemd)."""
        self.notifier.ready(status)

    def on_cycle(self, t_s: float, batch, result) -> None:
        self.watchdog.tick(self._wall())
        log = self.log
        if log is None:
            return
        for fix in batch.gps:
            self._last_fix = fix
            log.log_gnss(t_s, fix)
        if not log.healthy:
            if not self._log_failure_reported:
                self._log_failure_reported = True
                self._warn(f"run log stopped, driving goes on: {log.error}")
            return
        if not log.due(t_s):
            return
        fix = self._last_fix
        log.log_cycle(t_s, cycle_row(result, self.frame,
                                     gps_age_s=math.nan if fix is None else t_s - fix.time_s,
                                     fix_quality=0 if fix is None else fix.fix_quality,
                                     battery_v=batch.battery_v))

    def on_event(self, event) -> None:
        if self.log is not None:
            self.log.event(event.time_s, event.kind, event.message)

    def close(self, status: str = "stopping") -> None:
        self.notifier.stopping(status)
        if self.log is not None:
            self.log.close()
        self.notifier.close()
