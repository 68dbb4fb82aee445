"""A mission flown while the simulated pack drains from full to the low-battery threshold, with and without
thrust maps that follow the pack's voltage, against the same mission on a full pack.

    python benchmarks/bench_battery.py [--mission hexagon]

Boats: foka (ApisQueen U5, 5S li-ion 21 V -> 17.5 V, the U5 table scaled by (V/21)^2) and iacquabot re-packed as
a 4S LiPo (16.8 V -> 13.0 V, the T200 tables interpolated). Each boat's capacity is chosen so that the pack
ends the mission near its threshold: a full-pack run gives the current drawn, and the state of charge at which
the loaded voltage meets the threshold gives the capacity. The low-battery failsafe is off in these runs so the
three fly the same mission (tests/support/battery_flight.py). Printed: mean speed, cross-track RMS and max, the
pack's voltages, and how far each drained run is from the full-pack one. Nothing is asserted here
(tests/hil/test_battery_drain.py asserts the compensated case within 10 %).
"""
from __future__ import annotations

import argparse
import dataclasses
import time

from autopilot.vocab.config import load_vessel
from hil.sim.battery import OCV_CELL_V, ocv_cell_v
from tests.support.battery_flight import DrainFlight, fly, off_by


def _iacquabot_4s():
    v = load_vessel("iacquabot")
    return dataclasses.replace(v, battery=dataclasses.replace(v.battery, voltage_v=16.8, cells=4, chemistry="lipo",
                                                              low_voltage_v=13.0))


def _capacity_to_threshold(vessel, full: DrainFlight, resistance_ohm: float) -> float:
    """The capacity [Ah] whose loaded voltage meets the threshold as the mission ends (mean current of `full`)."""
    b = vessel.battery
    mean_a = full.consumed_mah / 1e3 / (full.duration_s / 3600.0)
    target = b.low_voltage_threshold_v + mean_a * resistance_ohm + 0.1
    chem = b.chemistry if b.chemistry in OCV_CELL_V else "li-ion"
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if b.cells * ocv_cell_v(chem, mid) < target:
            lo = mid
        else:
            hi = mid
    return full.consumed_mah / 1e3 / (1.0 - hi)


def _row(r: DrainFlight, ref: DrainFlight) -> str:
    off = off_by(r, ref)
    return (f"  {r.label:<28} speed {r.speed_mps:5.3f} m/s ({100 * off['speed']:+5.1f} %)  "
            f"xte rms {r.xte_rms_m:5.2f} m ({100 * off['xte_rms']:+5.1f} %)  "
            f"max {r.xte_max_m:5.2f} m ({100 * off['xte_max']:+5.1f} %)  "
            f"pack {r.start_v:5.2f} -> {r.end_v:5.2f} V (min {r.min_v:5.2f}), {r.consumed_mah:4.0f} mAh"
            + ("" if r.complete else "  NOT complete"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mission", default="hexagon", help="a mission preset in config/missions (default hexagon)")
    args = ap.parse_args(argv)
    # pack resistance: foka's 5S2P of 18650s; iacquabot's four T200s draw ~50 A from a large LiPo
    for name, vessel, ohm in (("foka", load_vessel("foka"), 0.08), ("iacquabot 4S", _iacquabot_4s(), 0.02)):
        t0 = time.perf_counter()
        # the reference run: a pack far larger than the mission needs gives the current drawn at full voltage
        probe = fly(name, args.mission, 1000.0, vessel=vessel, resistance_ohm=ohm, label="probe")
        cap = _capacity_to_threshold(vessel, probe, ohm)
        full = fly(name, args.mission, None, vessel=vessel, label="full pack")
        comp = fly(name, args.mission, cap, True, f"{cap:.2f} Ah, maps follow V", ohm, vessel)
        fixed = fly(name, args.mission, cap, False, f"{cap:.2f} Ah, maps at nominal", ohm, vessel)
        b = vessel.battery
        print(f"{name} on {args.mission}: {b.cells}S {b.chemistry} {b.voltage_v:g} V, threshold "
              f"{b.low_voltage_threshold_v:g} V ({time.perf_counter() - t0:.0f} s wall)")
        for r in (full, comp, fixed):
            print(_row(r, full))


if __name__ == "__main__":
    main()
