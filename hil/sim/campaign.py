"""Simulation campaigns: a matrix of in-process `autopilot sim` runs on all local cores or a Ray cluster, one table.

A campaign file (YAML, validated like every config) names the matrix; `expand` turns it into runs, plain dicts
of parameters with an `id` (their hash), deterministic. `run_one(run)` flies one and returns its row (never
raises: an exception is a row with `error`). `run_campaign` runs what is not yet in `OUT/results.jsonl`,
appending each row as it finishes (flushed and fsynced: a crash loses no finished run; running again resumes),
on a process pool (default: all cores) or as Ray tasks (`ray_address="auto"` starts or joins a local instance;
an address joins a cluster). A dead worker's runs are done again (a pool is rebuilt; Ray retries the task).

    name: demo-mismatch
    missions: [demo, hexagon, loiter, ../my_lake.waypoints]   # preset names, files (relative to this file)
    vessels: [foka]                      # the autopilot's vessel file (preset or file)
    plant_vessels: [""]                  # the true boat ("" = the vessel file itself)
    mismatch: ["", "x_u=0.4", "random=1.0"]   # hil/sim/plant_spec.py factors on the true boat ("" = none)
    seeds: [1, 2, 3]                     # or a range "1-20"
    wind: [[0, 0], [3, 90]]              # [speed m/s, from deg]
    current: [[0, 0], [0.2, 0]]          # [speed m/s, toward deg]
    waves: [[0, 4, 0]]                   # [Hs m, period s, from deg]
    gps_noise: [white]                   # white | realistic
    faults: ["", "gps-loss@60:30"]       # ";"-separated `autopilot sim --fault` specs ("" = none)
    gps_rate_hz: [0, 10]                 # GNSS fix rate (0 = the vessel file's)
    params: ["", "NAV_ILOS_SIGMA=0"]     # field tunables over the files (autopilot/files/tunables.py; "" = none)
    devices: typed                       # typed | bytes
    loiter_s: 300                        # the `loiter` mission: station keeping this long after arriving

A run may carry `params` (autopilot/files/tunables.py names -> values: a tuning candidate, hil/sim/tuning.py).
Rows hold the run's parameters and complete, xte_rms_m, xte_max_m, pos_err_rms_m, gps_err_rms_m, heading_err_rms_deg,
failsafes (kind->action), false_failsafes (a failsafe no injected fault explains), genuine_failsafes,
reversals_per_min, saturated_frac (hil/sim/thruster_usage.py), the station_keeping.py figures (`loiter`), wall_s."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple, cast

from autopilot.vocab.config import CONFIG_DIR
from autopilot.vocab.schema import ConfigError, build, param

RESULTS = "results.jsonl"
PRESET_MISSIONS = ("demo", "hexagon", "straight_line")
STATION = """name: station
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start: {point: {north_m: 0.0, east_m: 0.0}, heading_deg: 0}
waypoints: [{north_m: 0.0, east_m: 0.0}]
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
on_complete: loiter
loiter_radius_m: 2.0
"""
# which failsafes an injected fault explains (hil/sim/faults.py kinds -> autopilot/safety/failsafe.py kinds)
EXPLAINS = {"gps-loss": ("gps-loss",), "gps-glitch": ("gps-glitch",), "gps-forge": ("gps-glitch",),
            "imu-loss": ("imu-loss",), "imu-zero": ("imu-loss",), "imu-frozen": ("imu-loss",),
            "mag-loss": ("mag-loss",), "esc-disconnect": ("esc-disconnect",), "link-loss": ("link-loss",),
            "low-battery": ("low-battery",), "mag-shift": ("compass",)}


@dataclass(frozen=True, kw_only=True)
class CampaignSpec:
    name: str = param()
    missions: Tuple[str, ...] = param(doc="demo, hexagon, straight_line, loiter, or mission files")
    vessels: Tuple[str, ...] = param(("foka",))
    plant_vessels: Tuple[str, ...] = param(("",))
    mismatch: Tuple[str, ...] = param(("",))
    seeds: Tuple[int, ...] = param((1,), min=0, max=2**31 - 1)
    wind: Tuple[Tuple[float, ...], ...] = param(((0.0, 0.0),))
    current: Tuple[Tuple[float, ...], ...] = param(((0.0, 0.0),))
    waves: Tuple[Tuple[float, ...], ...] = param(((0.0, 4.0, 0.0),))
    gps_noise: Tuple[str, ...] = param(("white",), choices=("white", "realistic"))
    faults: Tuple[str, ...] = param(("",))
    gps_rate_hz: Tuple[float, ...] = param((0.0,), unit="Hz", min=0.0, max=20.0, doc="0 = the vessel file's")
    params: Tuple[str, ...] = param(("",), doc="field tunables, NAME=VALUE,... ('' = the files' own)")
    devices: str = param("typed", choices=("typed", "bytes"))
    duration_s: Optional[float] = param(None, unit="s", min=1.0, max=86400.0)
    loiter_s: float = param(300.0, unit="s", min=10.0, max=86400.0)

    def validate(self):
        for key, n in (("wind", 2), ("current", 2), ("waves", 3)):
            for i, v in enumerate(getattr(self, key)):
                if len(v) != n:
                    raise ValueError(f"{key}[{i}]: needs {n} numbers")
        if not self.missions:
            raise ValueError("missions: needs at least one mission")


def load_campaign(path) -> Tuple[CampaignSpec, Path]:
    """The campaign in `path` and the folder its relative paths start from. ConfigError naming file, key, reason."""
    from autopilot.vocab.config import read_yaml
    path = Path(path)
    data = read_yaml(path)
    seeds = data.get("seeds")
    if isinstance(seeds, str):
        lo, sep, hi = seeds.partition("-")
        try:
            data["seeds"] = list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
        except ValueError:
            raise ConfigError(path, "seeds", f"a range is FIRST-LAST, e.g. 1-20; got {seeds[:20]!r}") from None
    spec = build(CampaignSpec, data, str(path))
    base = path.resolve().parent
    for i, m in enumerate(spec.missions):
        if m not in PRESET_MISSIONS + ("loiter",) and not (base / m).is_file():
            raise ConfigError(path, f"missions[{i}]", f"{m!r} is neither {', '.join(PRESET_MISSIONS)}, loiter "
                                                      f"nor a file next to the campaign")
    from hil.sim.faults import parse_fault
    from hil.sim.plant_spec import parse_mismatch
    for i, m in enumerate(spec.mismatch):
        try:
            parse_mismatch(m)
        except ValueError as e:
            raise ConfigError(path, f"mismatch[{i}]", str(e)) from None
    for i, f in enumerate(spec.faults):
        for part in filter(None, (p.strip() for p in f.split(";"))):
            try:
                parse_fault(part)
            except ValueError as e:
                raise ConfigError(path, f"faults[{i}]", str(e)) from None
    for i, text in enumerate(spec.params):
        try:
            parse_params(text)
        except ValueError as e:
            raise ConfigError(path, f"params[{i}]", str(e)) from None
    if any(f for f in spec.faults) and spec.devices != "bytes":
        raise ConfigError(path, "devices", "faults are injected into the emulated devices: use devices: bytes")
    return spec, base


def parse_params(text: str) -> dict:
    """`HDG_OMEGA=1.2,NAV_ILOS_SIGMA=0` -> {name: value}; "" -> {}. ValueError naming the unknown name or bad
    value (a value out of the tunable's range is refused when the run starts, as a ground station's would be)."""
    from autopilot.files.tunables import BY_NAME
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().upper()
        if not sep or name not in BY_NAME:
            raise ValueError(f"{part!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(BY_NAME))}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"{name}: {value.strip()!r} is not a number") from None
    return out


# one run of the matrix: mission, vessel, plant, mismatch, wind, current, waves, noise, faults, rate, params, seed
_MatrixRow = Tuple[str, str, str, str, Tuple[float, ...], Tuple[float, ...], Tuple[float, ...], str, str, float, str,
                   int]


def expand(spec: CampaignSpec, base: Path) -> List[dict]:
    """Every run of the matrix, in a stable order, each with its `id`. A run carries `gps_rate_hz` and
    `params` only when they are set, so the ids of campaigns that do not sweep them stay what they were."""
    runs = []
    # typeshed types a product() of more than 6 iterables as tuples of object: each row is a _MatrixRow
    matrix = cast("Iterable[_MatrixRow]", product(
        spec.missions, spec.vessels, spec.plant_vessels, spec.mismatch, spec.wind, spec.current, spec.waves,
        spec.gps_noise, spec.faults, spec.gps_rate_hz, spec.params, spec.seeds))
    for mission, vessel, plant, mismatch, wind, current, waves, noise, faults, rate, params, seed in matrix:
        run = {"mission": mission if mission in PRESET_MISSIONS + ("loiter",) else str((base / mission).resolve()),
               "vessel": vessel if "/" not in vessel else str((base / vessel).resolve()),
               "plant_vessel": plant if "/" not in plant else str((base / plant).resolve()),
               "mismatch": mismatch, "wind": list(wind), "current": list(current), "waves": list(waves),
               "gps_noise": noise, "faults": faults, "seed": int(seed), "devices": spec.devices,
               "duration_s": spec.duration_s, "loiter_s": spec.loiter_s}
        if rate:
            run["gps_rate_hz"] = float(rate)
        if parse_params(params):
            run["params"] = parse_params(params)
        run["id"] = run_id(run)
        runs.append(run)
    return runs


def run_id(run: dict) -> str:
    text = json.dumps({k: v for k, v in run.items() if k != "id"}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _mission(name: str):
    from autopilot.files.mission_files import load_mission_file
    from autopilot.vocab.config import load_mission
    if name == "loiter":
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "station.yaml"
            path.write_text(STATION)
            return load_mission(path)
    if name in PRESET_MISSIONS:
        return load_mission(CONFIG_DIR / "missions" / f"{name}.yaml")
    return load_mission_file(name, on_note=lambda note: None)


def run_one(run: dict) -> dict:
    """Fly one run; its row (see the module docstring). Never raises."""
    from autopilot.vocab.config import load_vessel
    from hil.sim.environment import EnvironmentConfig
    from hil.sim.faults import parse_fault
    from hil.sim.plant_spec import PlantSpec, parse_mismatch
    from hil.sim.runner import SimOptions, run_sim
    from hil.sim.station_keeping import station_keeping

    row = dict(run)
    t0 = time.perf_counter()
    try:
        vessel = load_vessel(run["vessel"])
        mission = _mission(run["mission"])
        if run.get("params"):                  # a tuning candidate: field tunables over the files
            from autopilot.files.tunables import ParamStore
            store = ParamStore(vessel, mission)
            for name, value in run["params"].items():
                ok, text = store.set(name, value)
                if not ok:
                    raise ValueError(text)
            vessel, mission = store.vessel, store.mission
        plant = load_vessel(run["plant_vessel"]) if run["plant_vessel"] else None
        mismatch = parse_mismatch(run["mismatch"]) if run["mismatch"] else {}
        spec = None
        if plant is not None or mismatch:
            spec = PlantSpec.resolve(vessel, run["seed"], plant_vessel=plant, mismatch=mismatch)
        (ws, wf), (cs, ct), (hs, tp, wv) = run["wind"], run["current"], run["waves"]
        env = EnvironmentConfig(wind_speed_mps=ws, wind_from_deg=wf, current_speed_mps=cs, current_toward_deg=ct,
                                wave_hs_m=hs, wave_tp_s=tp, wave_from_deg=wv)
        faults = tuple(parse_fault(p) for p in run["faults"].split(";") if p.strip())
        loiter = run["mission"] == "loiter"
        duration = run["duration_s"] or ((run["loiter_s"] + 60.0) if loiter else None)
        opts = SimOptions(seed=run["seed"], env=env, gps_noise=run["gps_noise"], devices=run["devices"],
                          faults=faults, plant_spec=spec, duration_s=duration, gps_rate_hz=run.get("gps_rate_hz"))
        res = run_sim(vessel, mission, opts)
        r = res.report
        explained = {k for f in faults for k in EXPLAINS.get(f.kind, ())}
        events = [e for e in r["failsafe_events"] if e["action"] != "recovered"]
        row.update(complete=bool(r["mission_complete"]), xte_rms_m=r["xte_rms_m"], xte_max_m=r["xte_max_m"],
                   pos_err_rms_m=r["pos_err_rms_m"], gps_err_rms_m=r["gps_err_rms_m"],
                   heading_err_rms_deg=r["heading_err_rms_deg"],
                   failsafes=[f"{e['kind']}->{e['action']}" for e in r["failsafe_events"]],
                   false_failsafes=sum(e["kind"] not in explained for e in events),
                   genuine_failsafes=sum(e["kind"] in explained for e in events),
                   reversals_per_min=r["thruster_usage"]["reversals_per_min"],
                   saturated_frac=r["thruster_usage"]["saturated_frac"])
        if loiter:
            entered = [e.time_s for e in res.events if e.kind == "mode" and "-> LOITER" in e.message]
            if entered:
                tr = res.trace
                m = (tr["t"] >= entered[0]) & (tr["t"] < entered[0] + run["loiter_s"])
                row.update(station_keeping(tr["truth_n"][m] - res.start_ned[0], tr["truth_e"][m] - res.start_ned[1],
                                           mission.loiter_radius_m))
            row["complete"] = bool(entered) and r["final_mode"] == "LOITER"
    except Exception as e:          # a crash is a finding, reported as a row
        row["error"] = f"{type(e).__name__}: {e}"
    row["wall_s"] = round(time.perf_counter() - t0, 3)
    return row


# ------------------------------------------------------------------------------------------- running
def read_rows(out_dir) -> List[dict]:
    """The finished rows in OUT/results.jsonl (a line cut by a crash is skipped)."""
    path = Path(out_dir) / RESULTS
    rows: List[dict] = []
    if not path.is_file():
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "id" in row:
                rows.append(row)
    return rows


class _Sink:
    """Appends rows to results.jsonl, each flushed and fsynced as it arrives."""

    def __init__(self, out_dir: Path):
        out_dir.mkdir(parents=True, exist_ok=True)
        self.f = open(out_dir / RESULTS, "a", encoding="utf-8")

    def add(self, row: dict) -> None:
        self.f.write(json.dumps(row, sort_keys=True, default=str) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def run_campaign(runs: Iterable[dict], out_dir, *, workers: Optional[int] = None, ray_address: Optional[str] = None,
                 on_row: Optional[Callable[[dict, int, int], None]] = None, fn: Callable[[dict], dict] = run_one
                 ) -> List[dict]:
    """Run every run not already in OUT/results.jsonl; returns all rows (old and new), in the runs' order.
    `on_row(row, done, total)` after each finished run (a progress bar)."""
    out_dir = Path(out_dir)
    runs = list(runs)
    have = {r["id"]: r for r in read_rows(out_dir)}
    pending = [r for r in runs if r["id"] not in have]
    sink = _Sink(out_dir)
    done = len(runs) - len(pending)
    try:
        if ray_address is not None:
            stream = _ray_stream(pending, ray_address, fn)
        else:
            stream = _pool_stream(pending, workers or os.cpu_count() or 1, fn)
        for row in stream:
            sink.add(row)
            have[row["id"]] = row
            done += 1
            if on_row is not None:
                on_row(row, done, len(runs))
    finally:
        sink.close()
    return [have[r["id"]] for r in runs if r["id"] in have]


def _pool_stream(pending: List[dict], workers: int, fn):
    """Rows as they finish on a process pool; a pool broken by a dead worker is rebuilt for what is left."""
    left = {r["id"]: r for r in pending}
    rebuilds = 0
    while left:
        try:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(fn, r): r["id"] for r in left.values()}
                for fut in as_completed(futures):
                    row = fut.result()
                    left.pop(futures[fut], None)
                    yield row
        except BrokenProcessPool:
            rebuilds += 1
            if rebuilds > 10:
                raise RuntimeError("worker processes keep dying; campaign stopped (finished runs are kept)")


def _ray_stream(pending: List[dict], address: str, fn):
    import ray
    started = not ray.is_initialized()
    if started:
        if address == "auto":
            try:
                ray.init(address="auto", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError):
                ray.init(include_dashboard=False, log_to_driver=False)     # no cluster running: a local one
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        remote = ray.remote(max_retries=3)(fn)
        refs = [remote.remote(r) for r in pending]
        while refs:
            ready, refs = ray.wait(refs, num_returns=1)
            yield ray.get(ready[0])
    finally:
        if started:
            ray.shutdown()
