"""Crash-safe run logs: a directory per run with state.csv, events.jsonl, run.mcap (ROS 2) and the files used.

    from autopilot.runlog import RunLogger, read_run, STATE_COLUMNS

    log = RunLogger("runs", vessel_file, mission_file, rate_hz=10, keep_runs=50, max_total_mb=2000)
    ...every cycle:   log.log_cycle(t_s, {"time_s": t_s, "mode": "AUTO", "armed": True, "north_m": ..., ...})
    ...on a fix:      log.log_gnss(t_s, fix)
    ...every cycle:   log.log_estimator_step(t_s, batch, result, autopilot.estimator)   # for `autopilot log replay`
    ...on an event:   log.event(t_s, "mode", "AUTO -> RTL", reason="link lost")
    ...if not log.healthy: report log.error (disk full); the boat keeps driving
    log.close()

    run = read_run(log.run_dir); run["xte_m"], run.events
"""
from autopilot.runlog.columns import STATE_COLUMNS, THRUSTER_COLUMNS, TRUTH_COLUMNS, state_columns
from autopilot.runlog.logger import MAX_RATE_HZ, RunLogger
from autopilot.runlog.reader import RunData, read_run

__all__ = ["RunLogger", "read_run", "RunData", "STATE_COLUMNS", "THRUSTER_COLUMNS", "TRUTH_COLUMNS",
           "state_columns", "MAX_RATE_HZ"]
