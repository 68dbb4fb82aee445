"""The run log of a simulated run: the boat's crash-safe run log (autopilot/runlog/logger.py) with the
simulation's truth columns added."""
from __future__ import annotations


class SimRunLog:
    """The same crash-safe run log as on the boat, with the simulation's truth columns added: pass its
    `on_result` as hil.sim.runner.SimOptions.on_result, and close() it after the run. Rate at most 50 Hz."""

    def __init__(self, vessel, mission, log_dir, rate_hz: float):
        from autopilot.guidance.path_following import mission_frame
        from autopilot.runlog import RunLogger
        from autopilot.runlog.cycle_row import cycle_row
        self._cycle_row = cycle_row               # imported once, not on every 50 Hz cycle
        self.frame = mission_frame(mission)
        self.log = RunLogger(log_dir, vessel.source_file or None, mission.source_file or None,
                             rate_hz=min(rate_hz, 50.0), keep_runs=None, max_total_mb=None,
                             mission_name=mission.name, thruster_names=[t.name for t in vessel.thrusters],
                             realtime=False, vessel=vessel)
        self._path_logged = None
        self._fix = None
        self._unlogged_fix = None     # a valid fix not yet in a state.csv row
        self._events_seen = 0

    def on_result(self, t_s, autopilot, batch, result, truth) -> None:
        self.log.log_estimator_step(t_s, batch, result, autopilot.estimator)
        events = autopilot.events
        for ev in events[self._events_seen:]:
            self.log.event(ev.time_s, ev.kind, ev.message, **event_fields(ev))
        self._events_seen = len(events)
        for fix in batch.gps:
            self._fix = fix
            if fix.valid:
                self._unlogged_fix = fix
            self.log.log_gnss(t_s, fix)
        if self.log.due(t_s):
            g = getattr(autopilot, "guidance", None)
            wps = getattr(g, "waypoints_ned", None)
            if wps is not None and wps is not self._path_logged:       # a new mission is a new list
                self._path_logged = wps
                start = getattr(autopilot, "start_point_ned", None)
                self.log.log_path(t_s, wps, start() if start is not None else None)
            fix = self._fix
            if self.log.log_cycle(t_s, self._cycle_row(
                    result, self.frame, gps_age_s=float("nan") if fix is None else t_s - fix.time_s,
                    fix_quality=0 if fix is None else fix.fix_quality, battery_v=batch.battery_v,
                    battery_a=batch.battery_a, battery_mah=batch.battery_mah, truth=truth,
                    imu=batch.imu[-1] if batch.imu else None, new_fix=self._unlogged_fix)):
                self._unlogged_fix = None

    def close(self) -> None:
        self.log.close()


def event_fields(ev) -> dict:
    """What an Event carries beyond its message, for events.jsonl (a calibration update's before/after)."""
    return {"figures": ev.figures} if getattr(ev, "figures", None) else {}
