"""Replay a logged run's navigation filter: the same inputs, the same calls, optionally another tuning.

`replay_run(run_dir, ...)` reads the run's estimator_inputs.bin (autopilot.runlog.estimator_inputs), builds
the filter the run had (its tuning, local frame and magnetometer calibration from the file's header; the
vessel file kept in the run directory, or another), calls `step(t_s, batch, thrust)` once per recorded cycle,
in order, with the recorded time stamps, samples and thrust (exactly what autopilot.vehicle.Autopilot.step
gave it), and writes a new run directory whose state.csv is the original's with the estimate columns
(autopilot.runlog.cycle_row.nav_columns) replaced by the replayed ones. Modes, setpoints, thrust and the
simulation's truth columns stay as recorded: this is an open-loop replay, the boat's commands are not
recomputed. With the run's own tuning and vessel the replay is bit for bit (the recorded estimate is
compared with the replayed one at every step).

Frames and units: positions local NED [m] about the frame origin recorded with the inputs, heading clockwise
from true north, differences in metres and degrees.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from autopilot.runlog.estimator_inputs import EstimatorInputsError, EstimatorInputsReader, vessel_fingerprint

_QUEUE_S = 1e5      # the whole replay may queue for the writer thread (offline: no waiting on its 0.1 s drains)


class ReplayError(Exception):
    """The run cannot be replayed; str() says why and, where it can, what to do."""


@dataclass
class ReplayResult:
    run_dir: Path                   # the replay's new run directory
    source: Path                    # the replayed run
    steps: int                      # estimator steps replayed
    run_span_s: float               # run time they cover [s]
    wall_s: float                   # time the filter took to replay them [s]
    tuning_changes: dict            # EkfTuning field -> (run's value, replay's value)
    compared: int                   # steps where both estimates were valid
    pos_diff_rms_m: float           # replayed vs recorded estimate, horizontal [m]
    pos_diff_max_m: float
    heading_diff_rms_deg: float
    heading_diff_max_deg: float
    rows: int                       # state.csv rows written
    truth_rows: int = 0             # rows with simulation truth where both estimates were valid
    original_pos_err_rms_m: float = math.nan
    replay_pos_err_rms_m: float = math.nan
    original_heading_err_rms_deg: float = math.nan
    replay_heading_err_rms_deg: float = math.nan
    notes: List[str] = field(default_factory=list)
    counters: dict = field(default_factory=dict)            # the replayed filter's (NavigationEKF.counters)
    original_counters: dict = field(default_factory=dict)   # the run's own filter's on the same data


def replay_run(run_dir, out_base=None, tuning_file=None, vessel_file=None, control: bool = False) -> ReplayResult:
    """Replay `run_dir`; the new run directory is created in `out_base` (default: beside run_dir). control:
    also re-run guidance and control on the replayed estimate, open loop (autopilot.replay.control).

    The record is streamed (a day's run need not fit in memory). Raises ReplayError (the run has no usable
    inputs, its vessel cannot be loaded or does not fit, the filter fails) and ConfigError (a malformed tuning
    or vessel file given by the caller: it names the file, key and reason).
    """
    from autopilot.runlog import read_run

    src = Path(run_dir)
    if not src.is_dir():
        raise ReplayError(f"{src}: not a run directory")
    try:
        reader = EstimatorInputsReader(src)
    except EstimatorInputsError as e:
        raise ReplayError(str(e)) from None
    with reader:
        steps = reader.steps()
        first = next(steps, None)
        if first is None:
            raise ReplayError(f"{reader.path}: no estimator step recorded"
                              + (f" ({reader.damaged})" if reader.damaged else ""))
        run = read_run(src)
        if not isinstance(run.meta, dict):
            run.meta = {}                      # a meta.json that is not ours: defaults, and say what is missing
        notes: List[str] = []
        ekf, base_ekf, vessel_path, changes = _build_filter(reader.header, run, tuning_file, vessel_file, notes)
        ctl = _open_loop_control(run, vessel_path, ekf.frame, notes) if control else None
        return _replay(src, run, reader, itertools.chain([first], steps), ekf, base_ekf, vessel_path, tuning_file,
                       changes, out_base, notes, ctl)


def _open_loop_control(run, vessel_path, frame, notes):
    """The OpenLoopControl of the run's kept mission file; ReplayError when there is none to fly."""
    from autopilot.replay.control import OpenLoopControl
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import ConfigError
    path = _kept_file(run, "mission")
    if path is None or not Path(path).is_file():
        raise ReplayError(f"{run.run_dir}: no mission file kept in the run directory: --control needs it")
    try:
        mission = load_mission(path)
    except ConfigError as e:
        raise ReplayError(f"the run's mission cannot be loaded for --control: {e}") from None
    ctl = OpenLoopControl(load_vessel(str(vessel_path)), mission, frame)
    if not ctl.supported:
        notes.append("--control: an identification or trajectory mission's AUTO is not recomputed; its rows keep "
                     "the recorded commands")
    return ctl


# ------------------------------------------------------------------------------------------------ the filter
def _input_notes(reader, first_step: int, gaps: list, last_t_s: float) -> List[str]:
    """What keeps the replay from being exact, or complete: said, not raised."""
    notes = []
    if first_step != 0:
        notes.append(f"the record starts at the filter's step {first_step}, not its first: the replay starts a "
                     f"fresh filter there, so it converges to the original rather than matching it from the start")
    if gaps:
        a, b = gaps[0]
        notes.append(f"{len(gaps)} gap(s) where the log fell behind and dropped steps, the first after step {a}: "
                     f"the replay is not exact after it")
    if reader.cut_tail:
        notes.append(f"the record ends cut short (a crash?): replayed up to t={last_t_s:.2f} s")
    if reader.damaged:
        notes.append(f"the record is damaged at {reader.damaged}: replayed up to t={last_t_s:.2f} s")
    return notes


def _build_filter(header: dict, run, tuning_file, vessel_file, notes: list):
    """(the filter to replay: the run's with `tuning_file`'s changes; the run's own when they change something,
    else None; the vessel file's path; the changes)."""
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.geodesy import LocalFrame
    from estimation.heading.mag_calibration import MagCalibration
    from estimation.navekf.ekf import EkfTuning, NavigationEKF

    if header.get("estimator") != "NavigationEKF":
        raise ReplayError(f"the run's estimator is {header.get('estimator')!r}; only NavigationEKF replays")
    for key in ("tuning", "frame", "vessel"):
        if not isinstance(header.get(key), dict):
            raise ReplayError(f"the recorded estimator header has no {key} (the record is not from this autopilot)")
    known = {f.name for f in dataclasses.fields(EkfTuning)}
    recorded = header["tuning"]
    unknown = sorted(set(recorded) - known)
    if unknown:
        notes.append(f"the run's tuning has fields this autopilot lacks ({', '.join(unknown)}): ignored, the "
                     f"replay may differ")
    missing = sorted(known - set(recorded))
    if missing:
        notes.append(f"the run's tuning lacks {', '.join(missing)}: today's defaults used")
    try:
        base = EkfTuning(**{k: v for k, v in recorded.items() if k in known})
    except TypeError as e:
        raise ReplayError(f"the recorded tuning cannot be used: {e}") from None
    changes: Dict[str, Tuple[object, object]]           # field -> (run's value, replay's value)
    tuning, changes = base, {}
    if tuning_file is not None:
        from autopilot.files.ekf_tuning_file import load_ekf_tuning
        tuning, changes = load_ekf_tuning(tuning_file, base)

    path = Path(vessel_file) if vessel_file else _kept_file(run, "vessel")
    if path is None:
        raise ReplayError(f"{run.run_dir}: no vessel file kept in the run directory; give one with --vessel")
    if vessel_file is None and not path.is_file():
        raise ReplayError(f"{path}: the run's copy of its vessel file is missing; give one with --vessel")
    vessel = load_vessel(str(path))             # ConfigError names the file, key and reason
    hv = header["vessel"]
    if hv.get("thrusters") is not None and hv["thrusters"] != len(vessel.thrusters):
        raise ReplayError(f"{path}: {len(vessel.thrusters)} thrusters, but the run had {hv['thrusters']}: "
                          f"not the run's boat")
    if hv.get("fingerprint") and hv["fingerprint"] != vessel_fingerprint(vessel):
        notes.append(f"{path}: not the vessel configuration the run used ({hv.get('name')!r}): the replay "
                     f"differs from the original by more than the tuning")
    fr = header["frame"]
    try:
        frame = LocalFrame(float(fr["origin_lat_deg"]), float(fr["origin_lon_deg"]))
        cal = header.get("mag_calibration")
        cal = None if cal is None else MagCalibration(tuple(cal["offset_t"]), tuple(map(tuple, cal["matrix"])),
                                                      cal["method"])
        ekf = NavigationEKF(vessel, frame, mag_calibration=cal, tuning=tuning)
        base_ekf = NavigationEKF(vessel, frame, mag_calibration=cal, tuning=base) if changes else None
    except (KeyError, TypeError, ValueError) as e:
        raise ReplayError(f"the recorded estimator header cannot be used: {type(e).__name__}: {e}") from None
    return ekf, base_ekf, path, changes


# ------------------------------------------------------------------------------------------------ the new run
def _replay(src: Path, run, reader, steps, ekf, base_ekf, vessel_path, tuning_file, changes, out_base,
            notes, ctl=None) -> ReplayResult:
    """Step the filter through the record and write the replay's run directory as it goes: the original
    rows with the replayed estimate (without original rows, state.csv lost: the time and the replayed estimate
    at the run's log rate), the original events, and the replay's own estimator inputs (it can be replayed).
    `base_ekf` (the run's own filter, when the tuning changed) runs alongside for the original's counters."""
    from autopilot.runlog import RunLogger
    from autopilot.runlog.cycle_row import nav_columns
    from estimation.navekf.model import IX_CE, IX_CN

    rows = _rows_by_time(run)
    truth = "truth_north_m" in run.columns
    mission_name = run.meta.get("mission_name")
    name = (mission_name if isinstance(mission_name, str) and mission_name else src.name) + "-replay"
    meta = {"replay_of": str(src.resolve()), "replay_ekf_tuning": None if tuning_file is None else str(tuning_file),
            "replay_tuning_changes": {k: list(v) for k, v in changes.items()}}
    from autopilot.vocab.config import load_vessel
    vessel = load_vessel(str(vessel_path))       # loaded once already by _build_filter: known to load
    log = RunLogger(Path(out_base) if out_base is not None else src.parent, vessel_path, _kept_file(run, "mission"),
                    rate_hz=_log_rate_hz(run), keep_runs=None, max_total_mb=None,
                    mission_name=name, extra_files=[tuning_file] if tuning_file else (), realtime=False,
                    queue_s=_QUEUE_S, meta_extra=meta, thruster_names=[t.name for t in vessel.thrusters],
                    vessel=vessel)
    if not log.healthy:
        raise ReplayError(f"cannot write the replay: {log.error}")
    diffs, errors, gaps = [], [], []       # (position [m], heading [deg]); truth errors per row; missing steps
    wall, n, prev, first, s = 0.0, 0, None, None, None
    try:
        for s in steps:
            if first is None:
                first = s
                what = ("the run's own tuning" if not changes else
                        "tuning " + ", ".join(f"{k}={v[1]!r}" for k, v in changes.items()))
                log.event(s.t_s, "replay", f"estimator replay of {src.name} with {what}", level="info")
                for ev in run.events:
                    _copy_event(log, ev)
            if prev is not None and s.step != prev + 1:
                gaps.append((prev, s.step))
            prev = s.step
            w0 = time.perf_counter()
            try:
                nav = ekf.step(s.t_s, s.batch, s.thrust)
            except (ValueError, TypeError, ArithmeticError) as e:
                raise ReplayError(f"the filter failed at step {s.step} (t={s.t_s:.3f} s): {type(e).__name__}: "
                                  f"{e}; the replay up to there is in {log.run_dir}") from None
            wall += time.perf_counter() - w0
            if base_ekf is not None:
                base_ekf.step(s.t_s, s.batch, s.thrust)
            n += 1
            a = s.nav
            if a.valid and nav.valid:
                diffs.append((math.hypot(a.north_m - nav.north_m, a.east_m - nav.east_m),
                              abs(math.degrees(math.remainder(a.heading_rad - nav.heading_rad, 2 * math.pi)))))
            log.log_estimator_step(s.t_s, s.batch, types.SimpleNamespace(estimator_step=s.step,
                                                                         estimator_thrust=s.thrust, nav=nav), ekf)
            row = rows.get(round(s.t_s, 3)) if rows else {"time_s": s.t_s}
            if ctl is not None:
                if row is not None:
                    ctl.observe_row(row)
                state = ekf.state
                ctl.step(s.t_s, nav, drift_ne=(float(state[IX_CN]), float(state[IX_CE])))
            if row is not None:
                row = dict(row if ctl is None else ctl.apply(row), **nav_columns(nav, ekf.frame))
                if log.log_cycle(s.t_s, row) and truth and a.valid and nav.valid:
                    errors.append((a.north_m, a.east_m, math.degrees(a.heading_rad), nav.north_m, nav.east_m,
                                   math.degrees(nav.heading_rad), row["truth_north_m"], row["truth_east_m"],
                                   row["truth_heading_deg"]))
    finally:
        log.close()
    if not log.healthy:
        raise ReplayError(f"writing the replay failed: {log.error}")
    assert first is not None and s is not None      # replay_run hands over at least one step
    notes[:0] = _input_notes(reader, first.step, gaps, s.t_s)
    d = np.array(diffs).reshape(-1, 2)
    result = ReplayResult(run_dir=log.run_dir, source=src, steps=n, run_span_s=s.t_s - first.t_s, wall_s=wall,
                          tuning_changes=changes, compared=len(d),
                          pos_diff_rms_m=_rms(d[:, 0]), pos_diff_max_m=float(d[:, 0].max()) if len(d) else math.nan,
                          heading_diff_rms_deg=_rms(d[:, 1]),
                          heading_diff_max_deg=float(d[:, 1].max()) if len(d) else math.nan,
                          rows=log.rows_logged, notes=notes, counters=dict(ekf.counters),
                          original_counters=dict((base_ekf or ekf).counters))
    _truth_errors(errors, result)
    if ctl is not None:
        result.notes.append(f"guidance and control re-run open loop on the replayed estimate: {ctl.steps} AUTO steps "
                            f"(their rows carry the recomputed setpoints, cross-track error and wrench)")
    return result


def _copy_event(log, ev) -> None:
    """An event of the original run into the replay's events.jsonl; a line that is not one of ours (edited by
    hand, another program's) is left out rather than failing the replay."""
    if not isinstance(ev, dict) or isinstance(ev.get("time_s"), bool):
        return
    t = ev.get("time_s")
    if not isinstance(t, (int, float)) or not math.isfinite(t):
        return
    extra = {k: v for k, v in ev.items() if k not in ("time_s", "kind", "message", "t_s", "self")}
    log.event(t, str(ev.get("kind", "event")), str(ev.get("message", "")), **extra)


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x ** 2))) if len(x) else math.nan


def _kept_file(run, role: str):
    """The run directory's copy of its vessel or mission file (None when meta.json does not name one)."""
    try:
        return run.file(role)
    except (TypeError, AttributeError):        # a meta.json edited into something else
        return None


def _log_rate_hz(run) -> float:
    """The original's state.csv rate from meta.json, else the logger's default."""
    from autopilot.runlog import MAX_RATE_HZ
    r = run.meta.get("rate_hz")
    ok = isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r <= MAX_RATE_HZ
    return float(r) if ok else 10.0


def _known_column(name: str) -> bool:
    from autopilot.runlog.columns import columns_for_row
    try:
        columns_for_row([name])
        return True
    except ValueError:
        return False


def _rows_by_time(run) -> dict:
    """state.csv rows as dicts keyed by their time rounded to the millisecond (the file's resolution); only the
    columns this autopilot writes (a newer one's extra columns are left out)."""
    cols = run.columns
    if not cols or "time_s" not in cols:
        return {}
    names = [c for c in cols if _known_column(c)]
    out = {}
    for i in range(len(run)):
        row = {c: _cell(cols[c][i]) for c in names}
        out[round(float(cols["time_s"][i]), 3)] = row
    return out


def _cell(v):
    if isinstance(v, np.str_):
        return str(v)
    return float(v)


def _truth_errors(errors: list, result: ReplayResult) -> None:
    """With a simulation's truth columns: the original's and the replay's estimate errors on the same rows
    (both estimates at full precision, as the filters returned them; the truth as state.csv has it)."""
    a = np.array([e for e in errors if all(math.isfinite(v) for v in e)]).reshape(-1, 9)
    if not len(a):
        return
    result.truth_rows = len(a)
    result.original_pos_err_rms_m = _rms(np.hypot(a[:, 0] - a[:, 6], a[:, 1] - a[:, 7]))
    result.replay_pos_err_rms_m = _rms(np.hypot(a[:, 3] - a[:, 6], a[:, 4] - a[:, 7]))
    result.original_heading_err_rms_deg = _rms((a[:, 2] - a[:, 8] + 180.0) % 360.0 - 180.0)
    result.replay_heading_err_rms_deg = _rms((a[:, 5] - a[:, 8] + 180.0) % 360.0 - 180.0)


def summary_lines(r: ReplayResult) -> List[str]:
    """What `autopilot log replay` prints."""
    rate = r.run_span_s / r.wall_s if r.wall_s > 0 else math.inf
    lines = [f"replayed {r.steps} estimator steps ({r.run_span_s:.1f} s of {r.source.name}) in {r.wall_s:.2f} s "
             f"({rate:.0f}x real time)",
             "  tuning: " + ("the run's own" if not r.tuning_changes else
                             ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in r.tuning_changes.items()))]
    if r.compared:
        exact = " (bit for bit)" if r.pos_diff_max_m == 0.0 and r.heading_diff_max_deg == 0.0 else ""
        lines.append(f"  replay vs original estimate ({r.compared} steps): position rms {_small(r.pos_diff_rms_m)} m, "
                     f"max {_small(r.pos_diff_max_m)} m; heading rms {_small(r.heading_diff_rms_deg)} deg, "
                     f"max {_small(r.heading_diff_max_deg)} deg{exact}")
    else:
        lines.append("  replay vs original estimate: no step where both had a valid estimate")
    if r.truth_rows:
        lines.append(f"  estimate error vs the simulation's truth ({r.truth_rows} rows): original position rms "
                     f"{r.original_pos_err_rms_m:.3f} m, heading rms {r.original_heading_err_rms_deg:.3f} deg; "
                     f"replay position rms {r.replay_pos_err_rms_m:.3f} m, heading rms "
                     f"{r.replay_heading_err_rms_deg:.3f} deg")
    lines.append(_counter_line(r))
    lines += [f"  note: {n}" for n in r.notes]
    lines.append(f"  written: {r.run_dir} ({r.rows} rows; `autopilot plot {r.run_dir} {r.source}` draws both)")
    return lines


COUNTERS = ("gps_accepted", "gps_rejected", "gps_reacquisitions", "gps_vel_rejected", "mag_accepted", "mag_rejected",
            "mag_reacquisitions", "model_drift_accepts", "filter_resets")


def _counter_line(r: ReplayResult) -> str:
    """What the filter took and refused: the replay's counts, and the original's where the tuning changed them."""
    parts = []
    for k in COUNTERS:
        a, b = r.original_counters.get(k, 0), r.counters.get(k, 0)
        if a != b:
            parts.append(f"{k} {a} -> {b}")
        elif b:
            parts.append(f"{k} {b}")
    head = "  filter counts (original -> replay where they differ): " if r.tuning_changes else "  filter counts: "
    return head + (", ".join(parts) or "none")


def _small(x: float) -> str:
    """A difference: 4 decimals, or 2 significant digits when it is smaller than that shows."""
    return f"{x:.4f}" if x == 0.0 or abs(x) >= 1e-4 else f"{x:.1e}"
