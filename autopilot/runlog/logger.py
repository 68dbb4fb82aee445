"""RunLogger: the crash-safe log of one run (state.csv, events.jsonl, run.mcap, the files used).

The control loop calls `log_cycle(t_s, row)` every cycle; rows are taken at `rate_hz` (decimated by the row
time) and handed to a writer thread through a bounded queue, so the loop never formats, encodes or waits on the
SD card. The writer thread drains the queue every 0.1 s and flushes + fsyncs every file every `flush_period_s`
(0.5 s): a SIGKILL or a power cut loses at most the last ~0.6 s, and every file stays readable (CSV and JSONL
line by line; run.mcap front to back, see autopilot.runlog.mcap_log).

A logging failure (ENOSPC on a full disk, EIO, anything) stops logging, never driving: `healthy` turns False,
`error` says why, the failure is logged once through `logging` (journald under systemd), an event is appended
to events.jsonl if the disk still takes a line, and every later call is a cheap no-op.

Run directory (runs/<UTC start>_<mission>):
    state.csv       header line + one row per logged cycle (columns: autopilot.runlog.columns)
    events.jsonl    one JSON object per line: time_s, kind, message, level, and any extra fields
    run.mcap        the same run as the ROS 2 messages the boat publishes (autopilot.runlog.mcap_log)
    metadata.yaml   written at a clean close (or by `autopilot log recover`): the run directory is then a
                    rosbag2 bag (`ros2 bag info RUN_DIR`, rosbags)
    estimator_inputs.bin   every estimator step's inputs and output, for `autopilot log replay`
                    (autopilot.runlog.estimator_inputs; written when log_estimator_step is called)
    meta.json       start time, files, columns, rate, the clock offset to UTC; updated on a clean close
    <copies>        the vessel, mission and any extra config files used, under their own names

Old runs are rotated when a logger starts (and once a minute while it runs): oldest first, until at most
`keep_runs` remain and all together take at most `max_total_mb`. The running run is never deleted.
"""
from __future__ import annotations

import collections
import json
import logging
import os
import shutil
import struct
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Deque, Dict, Iterable, Optional, Sequence, Tuple

from autopilot.runlog.columns import columns_for_row, format_row, formatter
from autopilot.runlog.rundir import create_run_dir, rotate_runs

log = logging.getLogger("autopilot.runlog")

MAX_RATE_HZ = 50.0
_DRAIN_PERIOD_S = 0.1
_ROTATE_PERIOD_S = 60.0
_WARN_KINDS = ("failsafe", "warn", "fault", "lost", "disarm")
_INPUT_RATE_HZ = 100.0      # control loop rate the estimator-step queue is sized for (queue_s of it)


class RunLogger:
    """One run's log. See the module docstring for the files and the guarantees.

    base_dir: folder holding the runs; vessel_file / mission_file: copied into the run (None: not copied);
    rate_hz: state.csv rate, 0 < rate <= 50 (default 10); keep_runs / max_total_mb: rotation limits (None: no
    limit). Keyword-only extras: mission_name (default: the mission file's stem, else "manual"); extra_files
    (e.g. the boat config, the magnetometer calibration); thruster_names (the per-thruster topics); ros (the
    boat config's RosConfig: topic names, namespace, frame ids, QoS depths of run.mcap; None: defaults);
    vessel (the loaded vessel: sensor placement for /tf_static, sensor noise for the covariances);
    time_offset_ns (UTC [ns] of row time 0, e.g. the ROS node's TimeBase origin, so run.mcap's header stamps
    equal the live messages'; None: taken from utc_now at the first entry);
    flush_period_s; queue_s and realtime: when the writer falls more than queue_s of rows behind, a realtime
    logger (the boat) drops rows and says so once in an event, a non-realtime one (a faster-than-real-time
    simulation) makes log_cycle wait for the writer; meta_extra: more keys for meta.json (a replay names its
    source run); and injectable `utc_now`, `clock` (monotonic, for the writer thread's schedule) and
    `open_file` (tests use it to inject I/O errors).
    """

    def __init__(self, base_dir, vessel_file=None, mission_file=None, rate_hz: float = 10.0,
                 keep_runs: Optional[int] = 50, max_total_mb: Optional[float] = 2000.0, *,
                 mission_name: Optional[str] = None, extra_files: Iterable = (),
                 thruster_names: Sequence[str] = (), write_mcap: bool = True, flush_period_s: float = 0.5,
                 ros=None, vessel=None, time_offset_ns: Optional[int] = None,
                 queue_s: float = 10.0, realtime: bool = True, meta_extra: Optional[dict] = None,
                 utc_now: Optional[Callable[[], datetime]] = None,
                 clock: Callable[[], float] = time.monotonic, open_file: Callable = open):
        if not 0 < rate_hz <= MAX_RATE_HZ:
            raise ValueError(f"rate_hz must be in (0, {MAX_RATE_HZ:g}] Hz, got {rate_hz}")
        if keep_runs is not None and keep_runs < 1:
            raise ValueError(f"keep_runs must be >= 1 (or None for no limit), got {keep_runs}")
        if max_total_mb is not None and not max_total_mb > 0:
            raise ValueError(f"max_total_mb must be > 0 (or None for no limit), got {max_total_mb}")
        if not 0 < flush_period_s <= 1.0:
            raise ValueError(f"flush_period_s must be in (0, 1] s, got {flush_period_s}")
        self.rate_hz = float(rate_hz)
        self.healthy = True
        self.error: Optional[str] = None
        self.failure_event: Optional[dict] = None
        self.rows_logged = 0          # rows accepted by log_cycle
        self.rows_dropped = 0         # rows dropped because the writer fell > queue_s behind
        self.steps_logged = 0         # estimator steps accepted by log_estimator_step
        self.steps_dropped = 0        # ... dropped because the writer fell > queue_s behind (realtime only)
        self.sync_count = 0
        self.sync_total_s = 0.0
        self.sync_max_s = 0.0
        self._period = 1.0 / self.rate_hz
        self._next_t: Optional[float] = None
        self._columns: Optional[Tuple[str, ...]] = None
        self._formatters: Dict[str, Callable] = {}
        self._offset_s: Optional[float] = None
        self._offset_ns = 0
        if time_offset_ns is not None:          # the ROS node's time base: run.mcap's stamps are the live ones
            self._offset_ns = int(time_offset_ns)
            self._offset_s = self._offset_ns * 1e-9
        self._queue: Deque[tuple] = collections.deque()
        self._queue_cap = int(queue_s * self.rate_hz) + 100
        self._inputs: Deque[tuple] = collections.deque()   # estimator steps: every cycle, not decimated
        self._inputs_cap = int(queue_s * _INPUT_RATE_HZ) + 100
        self._inputs_header = False
        self._encode_failed = False
        self._realtime = realtime
        self._stop = threading.Event()
        self._closed = False
        self._clock = clock
        self._utc_now = utc_now or (lambda: datetime.now(timezone.utc))
        self._open = open_file
        self._flush_period_s = flush_period_s
        self._thruster_names = tuple(thruster_names)
        self._keep_runs = keep_runs
        self._max_bytes = None if max_total_mb is None else int(max_total_mb * 1e6)
        self._files = {}
        self._mcap = None
        self._thread: Optional[threading.Thread] = None
        self._dir_synced = False
        self.removed_runs = []

        self.base_dir = Path(base_dir)
        self.start_utc = self._utc_now()
        name = mission_name or (Path(mission_file).stem if mission_file else "manual")
        self.run_dir = self.base_dir / "unstarted"
        self.meta = {"format": 1, "start_utc": self.start_utc.isoformat(), "mission_name": name,
                     "rate_hz": self.rate_hz, "files": {}, "columns": None, "time_offset_s": None,
                     **(meta_extra or {})}
        try:
            self.removed_runs = rotate_runs(self.base_dir, keep_runs, self._max_bytes, reserve_runs=1)
            self.run_dir = create_run_dir(self.base_dir, self.start_utc, name)
            for role, src in (("vessel", vessel_file), ("mission", mission_file),
                              *(("extra", f) for f in extra_files)):
                if src is not None:
                    self._copy_in(role, Path(src))
            self._files["csv"] = self._open(self.run_dir / "state.csv", "w", encoding="utf-8", newline="")
            self._files["events"] = self._open(self.run_dir / "events.jsonl", "w", encoding="utf-8")
            if write_mcap:
                from autopilot.runlog.mcap_log import McapRunWriter
                self._files["mcap"] = self._open(self.run_dir / "run.mcap", "wb")
                self._mcap = McapRunWriter(self._files["mcap"], ros, self._thruster_names, vessel)
            self._write_meta()
        except Exception as e:     # noqa: BLE001 -- no log must not mean no run
            self._fail(f"cannot start the run log in {self.run_dir}: {_why(e)}")
            return
        self._thread = threading.Thread(target=self._writer, name="runlog-writer", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------------------------- loop side
    def due(self, t_s: float) -> bool:
        """True when a row offered at t_s would be taken (lets the caller skip building rows that are not)."""
        nxt = self._next_t
        return self.healthy and not self._closed and (nxt is None or t_s >= nxt - 1e-3 * self._period)

    def log_cycle(self, t_s: float, row: dict) -> bool:
        """Offer this cycle's row; it is logged when due at rate_hz. Returns True when taken.

        Costs a comparison on cycles that are not due and a dict copy on those that are. The first row fixes
        the columns (thrusters and truth columns present) and raises ValueError on keys that are not columns.
        """
        if not self.healthy or self._closed:
            return False
        nxt = self._next_t
        if nxt is not None and t_s < nxt - 1e-3 * self._period:
            return False
        self._next_t = nxt + self._period if nxt is not None and t_s - nxt < self._period else t_s + self._period
        if self._columns is None:
            self._columns = columns_for_row(row)
            self._formatters = {c: formatter(c) for c in self._columns}
        if len(self._queue) >= self._queue_cap and not self._wait_for_room():
            if self.rows_dropped == 0:
                self.event(t_s, "log_overrun", f"run log more than {self._queue_cap} rows behind the loop: "
                                               f"dropping rows (slow storage?)", level="warn")
            self.rows_dropped += 1
            return False
        self._note_time(t_s)
        self._queue.append(("row", t_s, dict(row)))
        self.rows_logged += 1
        return True

    def _wait_for_room(self) -> bool:
        """Non-realtime loggers wait for the writer thread to catch up; True when there is room."""
        if self._realtime:
            return False
        assert self._thread is not None     # healthy (log_cycle's check): __init__ started the writer
        while len(self._queue) >= self._queue_cap // 2 and self.healthy and self._thread.is_alive():
            time.sleep(0.005)
        return self.healthy

    def log_gnss(self, t_s: float, fix) -> None:
        """A raw GNSS fix (autopilot.vocab.types.GpsFix) for run.mcap (gnss/fix and gnss/vel, not decimated)."""
        if self.healthy and not self._closed and self._mcap is not None and len(self._queue) < self._queue_cap:
            self._note_time(t_s)
            self._queue.append(("gnss", t_s, fix))

    def log_path(self, t_s: float, waypoints_ned, start_ned=None) -> None:
        """The mission's waypoints (local NED [m]) for run.mcap's guidance/path: call it at start and whenever
        the mission changes. `start_ned` is where the first leg starts (the boat's position when it began)."""
        if self.healthy and not self._closed and self._mcap is not None and len(self._queue) < self._queue_cap:
            self._note_time(t_s)
            self._queue.append(("path", t_s, ([tuple(p[:2]) for p in waypoints_ned],
                                              None if start_ned is None else tuple(start_ned[:2]))))

    def log_estimator_step(self, t_s: float, batch, result, estimator) -> bool:
        """Record what the estimator consumed this cycle (for `autopilot log replay`): call it every cycle,
        after `Autopilot.step(t_s, batch)` returned `result`, with the autopilot's estimator (its tuning, frame
        and vessel go into the file's header on the first call). Costs a deque append; the writer thread encodes.

        Not decimated: every step is kept, or the replay is not exact. A realtime logger whose writer is more
        than queue_s behind drops steps and says so once in an event; the replay reports the gap. Returns True
        when the step was taken.
        """
        if not self.healthy or self._closed or getattr(result, "estimator_step", -1) < 0:
            return False
        if len(self._inputs) >= self._inputs_cap and not self._wait_for_inputs_room():
            if self.steps_dropped == 0:
                self.event(t_s, "log_overrun", f"estimator inputs more than {self._inputs_cap} steps behind the "
                                               f"loop: dropping steps (a replay will not be exact after "
                                               f"t={t_s:.1f} s)", level="warn")
            self.steps_dropped += 1
            return False
        if not self._inputs_header:
            from autopilot.runlog.estimator_inputs import describe_estimator
            self._inputs.append(("header", t_s, describe_estimator(estimator)))
            self._inputs_header = True
        self._note_time(t_s)
        given = getattr(result, "estimator_batch", None)     # what the estimator really got, when corrected
        self._inputs.append(("step", t_s, (batch if given is None else given, result, batch)))
        self.steps_logged += 1
        return True

    def _wait_for_inputs_room(self) -> bool:
        if self._realtime:
            return False
        assert self._thread is not None     # healthy (log_estimator_step's check): __init__ started the writer
        while len(self._inputs) >= self._inputs_cap // 2 and self.healthy and self._thread.is_alive():
            time.sleep(0.005)
        return self.healthy

    def event(self, t_s: float, kind: str, message: str, **fields) -> None:
        """Append an event (mode change, failsafe, warning) with its reason. `level` may be given in fields
        (info, warn, error); otherwise kinds naming a failsafe, fault, warning, loss or disarm are 'warn'."""
        if not self.healthy or self._closed:
            return
        level = fields.pop("level", None) or ("warn" if any(w in kind.lower() for w in _WARN_KINDS) else "info")
        ev = {"time_s": float(t_s), "kind": str(kind), "message": str(message), "level": str(level), **fields}
        self._note_time(t_s)
        self._queue.append(("event", t_s, ev))

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, finish run.mcap (summary + footer), fsync and close. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def columns(self):
        """The state.csv header, fixed by the first row (None before it)."""
        return self._columns

    def _note_time(self, t_s: float) -> None:
        if self._offset_s is None:
            self._offset_s = self._utc_now().timestamp() - float(t_s)
            self._offset_ns = int(round(self._offset_s * 1e9))

    # ---------------------------------------------------------------------------------- writer thread
    def _writer(self) -> None:
        next_sync = self._clock() + self._flush_period_s
        next_rotate = self._clock() + _ROTATE_PERIOD_S
        while True:
            stopping = self._stop.wait(_DRAIN_PERIOD_S)
            try:
                self._drain()
                now = self._clock()
                if stopping:
                    self._finish()
                    return
                if now >= next_sync:
                    self._sync()
                    next_sync = now + self._flush_period_s
                if now >= next_rotate:
                    next_rotate = now + _ROTATE_PERIOD_S
                    rotate_runs(self.base_dir, self._keep_runs, self._max_bytes, protect=[self.run_dir])
            except Exception as e:     # noqa: BLE001 -- ENOSPC, EIO, a bad value: stop logging, not driving
                self._fail(f"run log stopped: {_why(e)}")
                return

    def _drain(self) -> None:
        """Write what is queued, rows/events/fixes and estimator steps merged by time (run.mcap's log times then
        stay in order); an event a step raises is queued and written in the same pass."""
        q, inputs = self._queue, self._inputs
        while q or inputs:
            if inputs and (not q or inputs[0][1] <= q[0][1]):
                self._write_input(*inputs.popleft())
            else:
                self._write_item(*q.popleft())

    def _ns(self, t_s: float) -> int:
        return int(round(t_s * 1e9)) + self._offset_ns

    def _write_item(self, kind: str, t_s: float, item) -> None:
        csv_f, ev_f, mcap = self._files["csv"], self._files["events"], self._mcap
        t_ns = self._ns(t_s)
        if kind == "row":
            assert self._columns is not None    # log_cycle fixed the columns before it queued the first row
            if self.meta["columns"] is None:
                csv_f.write(",".join(self._columns) + "\n")
                self.meta["columns"] = list(self._columns)
                self.meta["time_offset_s"] = self._offset_s
                self._write_meta()
                if mcap is not None:
                    mcap.add_metadata("autopilot_run", {"time_offset_s": repr(self._offset_s),
                                                        "start_utc": self.meta["start_utc"],
                                                        "mission_name": self.meta["mission_name"]})
            csv_f.write(format_row(self._formatters, self._columns, item))
            if mcap is not None:
                mcap.write_row(t_ns, item, self._thruster_names)
        elif kind == "event":
            ev_f.write(json.dumps(item, default=_json_default) + "\n")
            if mcap is not None:
                mcap.write_event(t_ns, item)
        elif kind == "gnss":
            assert mcap is not None             # log_gnss queues fixes only for run.mcap
            mcap.write_gnss(t_ns, item)
        elif kind == "path":
            assert mcap is not None             # log_path queues paths only for run.mcap
            mcap.write_path(t_ns, *item)

    def _write_input(self, kind: str, t_s: float, item) -> None:
        from autopilot.runlog import estimator_inputs as ei
        f = self._files.get("inputs")
        if f is None:
            f = self._files["inputs"] = self._open(self.run_dir / ei.FILE_NAME, "wb")
            f.write(ei.file_head())
            self._dir_synced = False            # the new name reaches the disk with the next sync
        if kind == "header":
            f.write(ei.header_record(item))
            self.meta["estimator_inputs"] = {"file": ei.FILE_NAME, "version": ei.FORMAT_VERSION}
            self._write_meta()
            return
        given, result, raw = item
        mcap = self._mcap
        if mcap is not None:               # the samples as the live imu node publishes them (uncorrected)
            for s in getattr(raw, "imu", ()):
                mcap.write_imu(self._ns(s.time_s), s)
            for m in getattr(raw, "mag", ()):
                mcap.write_mag(self._ns(m.time_s), m)
        try:
            record = ei.step_record(t_s, given, result)
        except (TypeError, ValueError, AttributeError, struct.error) as e:
            # one step that does not encode (a driver's odd sample) costs that step, not the log
            self.steps_logged -= 1
            self.steps_dropped += 1
            if not self._encode_failed:
                self._encode_failed = True
                # queued directly: event() refuses once close() began, and this may be the last drain
                self._queue.append(("event", t_s, {
                    "time_s": float(t_s), "kind": "log_fault", "level": "warn",
                    "message": f"an estimator step could not be recorded ({_why(e)}); a replay will "
                               f"not be exact after t={t_s:.1f} s"}))
            return
        f.write(record)

    def _sync(self) -> None:
        t0 = time.perf_counter()
        for f in self._files.values():
            f.flush()
            os.fsync(f.fileno())
        if not self._dir_synced:
            _fsync_dir(self.run_dir)
            self._dir_synced = True
        dt = time.perf_counter() - t0
        self.sync_count += 1
        self.sync_total_s += dt
        self.sync_max_s = max(self.sync_max_s, dt)

    def _finish(self) -> None:
        if self._mcap is not None:
            self._mcap.finish()
        self._sync()
        if self._mcap is not None:       # the run directory is now a rosbag2 bag
            from autopilot.runlog.bag_metadata import write_metadata
            write_metadata(self.run_dir, "run.mcap", self._mcap.stats)
            self._dir_synced = False
        for f in self._files.values():
            f.close()
        self._files = {}
        self.meta.update(closed_utc=self._utc_now().isoformat(), rows=self.rows_logged,
                         rows_dropped=self.rows_dropped)
        if self._inputs_header:
            self.meta.update(estimator_steps=self.steps_logged, estimator_steps_dropped=self.steps_dropped)
        self._write_meta()
        _fsync_dir(self.run_dir)

    def _fail(self, reason: str) -> None:
        if not self.healthy:
            return
        self.healthy = False
        self.error = reason
        self._queue.clear()
        self._inputs.clear()
        self.failure_event = {"time_s": None, "kind": "log_stopped", "message": reason, "level": "error"}
        log.error("%s (driving continues without a log)", reason)
        ev_f = self._files.get("events")
        if ev_f is not None:
            try:   # a line may still fit in a partly used block; nothing more is tried
                ev_f.write(json.dumps(self.failure_event) + "\n")
                ev_f.flush()
            except Exception:      # noqa: BLE001
                pass
        for f in self._files.values():
            try:
                f.close()
            except Exception:      # noqa: BLE001 -- buffered bytes of a full disk are lost either way
                pass
        self._files = {}

    # ---------------------------------------------------------------------------------- files
    def _copy_in(self, role: str, src: Path) -> None:
        if not src.is_file():
            log.warning("run log: %s file %s not copied into the run (not a readable file)", role, src)
            self.meta.setdefault("not_copied", {})[str(src)] = "not a readable file"
            return
        dst = self.run_dir / src.name
        if dst.exists():
            dst = self.run_dir / f"{role}_{src.name}"
        shutil.copyfile(src, dst)
        self.meta["files"].setdefault(role if role != "extra" else src.name, dst.name)
        self.meta.setdefault("sources", {})[dst.name] = str(src.resolve())

    def _write_meta(self) -> None:
        tmp = self.run_dir / "meta.json.tmp"
        with self._open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.meta, f, indent=1, default=_json_default)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.run_dir / "meta.json")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _json_default(v):
    item = getattr(v, "item", None)          # numpy scalars
    if callable(item):
        return item()
    return str(v)


def _why(e: Exception) -> str:
    if isinstance(e, OSError) and e.errno is not None:
        return f"{os.strerror(e.errno)} ({e.filename or 'write'})" if e.filename else f"{os.strerror(e.errno)}"
    return f"{type(e).__name__}: {e}"
