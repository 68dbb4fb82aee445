#!/usr/bin/env python3
"""Cost of the control chain on the 50 Hz hot path: controllers, allocation and thrust maps.

Prints microseconds per call (best of several repeats, so a busy machine disturbs it less) for each piece
and for the whole chain NavState -> Wrench -> ThrustCommand -> PulseCommand, per vessel preset.

Usage: python benchmarks/bench_control.py [--number N] [--repeat R]
"""
from __future__ import annotations

import argparse
import math
import timeit

from autopilot.control.azimuth_allocation import make_allocator
from autopilot.control.heading_speed import HeadingController, SpeedController
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_maps


def per_call_us(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def bench_vessel(name: str, number: int, repeat: int) -> dict:
    vessel = load_vessel(name)
    maps = make_thrust_maps(vessel)
    alloc = make_allocator(vessel, maps)
    hc = HeadingController(vessel, alloc.max_yaw_nm)
    sc = SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n)
    clock = [0.0]

    def heading():
        clock[0] += 0.02
        return hc.update(clock[0], 0.3 * math.sin(clock[0]), 0.01, 0.25, 0.0)

    def speed():
        clock[0] += 0.02
        return sc.update(clock[0], 1.0 + 0.1 * math.sin(clock[0]), 1.2)

    inside = Wrench(0.3 * alloc.max_surge_n, 0.2 * alloc.max_yaw_nm)
    saturated = Wrench(2.0 * alloc.max_surge_n, 0.8 * alloc.max_yaw_nm)
    cmd = alloc.allocate(inside)
    m0 = maps[0]
    half = 0.5 * m0.max_forward_n

    def chain():
        clock[0] += 0.02
        yaw = hc.update(clock[0], 0.3 * math.sin(clock[0]), 0.01, 0.25, 0.0)
        surge = sc.update(clock[0], 1.0, 1.2)
        return alloc.to_pulses(alloc.allocate(Wrench(surge, yaw), clock[0]))

    return {
        "heading.update": per_call_us(heading, number, repeat),
        "speed.update": per_call_us(speed, number, repeat),
        "allocate (inside limits)": per_call_us(lambda: alloc.allocate(inside), number, repeat),
        "allocate (saturated)": per_call_us(lambda: alloc.allocate(saturated), number, repeat),
        "map.thrust_to_pulse": per_call_us(lambda: m0.thrust_to_pulse(half), number, repeat),
        "map.pulse_to_thrust": per_call_us(lambda: m0.pulse_to_thrust(1650), number, repeat),
        "to_pulses (all thrusters)": per_call_us(lambda: alloc.to_pulses(cmd), number, repeat),
        "whole chain per cycle": per_call_us(chain, number, repeat),
        "_thrusters": len(maps),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=20000, help="calls per repeat")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"control chain cost, us per call (best of {args.repeat} x {args.number} calls)")
    for name in ("foka", "iacquabot", "wamv", "wamv_pods"):
        res = bench_vessel(name, args.number, args.repeat)
        n = res.pop("_thrusters")
        print(f"\n{name} ({n} thrusters)")
        for label, us in res.items():
            print(f"  {label:<28s} {us:8.2f}")
        budget = 1e6 / 50.0
        print(f"  {'share of a 50 Hz cycle':<28s} {100.0 * res['whole chain per cycle'] / budget:7.3f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
