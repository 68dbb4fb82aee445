"""A mission flown while the simulated pack drains (hil/sim/battery.py), and what a person watching it would
measure: mean true speed while AUTO flies the mission, cross-track error (the report's), the pack's voltage at
the start and the end. Shared by tests/hil/test_battery_drain.py and benchmarks/bench_battery.py.

The low-battery failsafe is switched off in these runs (low_voltage_v 0), so that a drained run flies the same
mission as the full-pack one and the two compare; the pack's capacity is chosen so that it ends near the
vessel's own threshold.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from hil.sim.battery import PackSpec
from hil.sim.runner import SimOptions, run_sim


@dataclass(frozen=True)
class DrainFlight:
    label: str
    complete: bool
    duration_s: float
    speed_mps: float          # mean true speed while AUTO flew the mission
    xte_rms_m: float
    xte_max_m: float
    start_v: float
    end_v: float
    min_v: float
    consumed_mah: float


def fly(vessel_name: str, mission_name: str, capacity_ah: Optional[float], follow_voltage: bool = True,
        label: str = "", resistance_ohm: float = 0.08, vessel=None) -> DrainFlight:
    """Fly `mission_name` with `vessel_name` (or the VesselConfig `vessel`) on a pack of capacity_ah (None: the
    pack held at its nominal voltage), the thrust maps following the voltage or not."""
    v = vessel if vessel is not None else load_vessel(vessel_name)
    v = dataclasses.replace(v, battery=dataclasses.replace(v.battery, follow_voltage=follow_voltage,
                                                           low_voltage_v=0.0))
    spec = None if capacity_ah is None else PackSpec(cells=v.battery.cells, chemistry=v.battery.chemistry,
                                                     capacity_ah=capacity_ah, internal_resistance_ohm=resistance_ohm,
                                                     nominal_v=v.battery.voltage_v)
    rows = []

    def on_result(t, ap, batch, res, truth):
        flying = res.mode == "AUTO" and not ap.mission_complete
        rows.append((t, batch.battery_v, float(np.hypot(truth.surge_mps, truth.sway_mps)), flying))

    mission = load_mission(CONFIG_DIR / "missions" / f"{mission_name}.yaml")
    r = run_sim(v, mission, SimOptions(devices="typed", battery=spec, on_result=on_result))
    a = np.array(rows, dtype=float)
    flying = a[a[:, 3] > 0]
    rep = r.report
    return DrainFlight(label or ("full pack" if capacity_ah is None else f"{capacity_ah:g} Ah"),
                       bool(rep["mission_complete"]), float(rep["mission_complete_time_s"] or np.nan),
                       float(flying[:, 2].mean()), float(rep["xte_rms_m"]), float(rep["xte_max_m"]),
                       float(a[0, 1]), float(a[-1, 1]), float(a[:, 1].min()),
                       float(rep["battery"]["consumed_mah"]) if rep["battery"] else 0.0)


def off_by(run: DrainFlight, ref: DrainFlight) -> dict:
    """Relative differences of run from ref: speed, cross-track RMS and max [fraction]."""
    return {"speed": run.speed_mps / ref.speed_mps - 1.0, "xte_rms": run.xte_rms_m / ref.xte_rms_m - 1.0,
            "xte_max": run.xte_max_m / ref.xte_max_m - 1.0}
