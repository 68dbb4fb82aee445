"""Thrust allocation: signs, exact split inside the limits, saturation priorities, asymmetric and no-reverse limits."""
from __future__ import annotations

import dataclasses
import math
import random

import pytest

from autopilot.control.allocation import Allocator
from autopilot.vocab.config import load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import ThrustMap, make_thrust_maps

PRESETS = ("foka", "iacquabot", "wamv")


def vessel_with(name, **allocation):
    v = load_vessel(name)
    alloc = dataclasses.replace(v.control.allocation, **allocation)
    return dataclasses.replace(v, control=dataclasses.replace(v.control, allocation=alloc))


def allocator(name, **allocation):
    v = vessel_with(name, **allocation)
    return Allocator(v, make_thrust_maps(v))


def variants():
    return [pytest.param(name, priority, allow_reverse, id=f"{name}-{priority}-rev{allow_reverse}")
            for name in PRESETS for priority in ("yaw", "surge") for allow_reverse in (True, False)]


def limits(a):
    hi = [m.max_forward_n for m in a.maps]
    lo = [-m.max_reverse_n if a.allow_reverse else 0.0 for m in a.maps]
    return lo, hi


@pytest.mark.parametrize("name,priority,allow_reverse", variants())
def test_zero_wrench_gives_exactly_zero_thrust_and_neutral_pulses(name, priority, allow_reverse):
    a = allocator(name, priority=priority, allow_reverse=allow_reverse)
    cmd = a.allocate(Wrench(0.0, 0.0))
    assert all(t == 0.0 for t in cmd.thrust_n) and len(cmd.thrust_n) == len(a.maps)
    assert a.to_pulses(cmd).pulse_us == tuple(m.neutral_pulse_us for m in a.maps)


@pytest.mark.parametrize("name,priority,allow_reverse", variants())
def test_thrust_always_within_each_thrusters_limits(name, priority, allow_reverse):
    a = allocator(name, priority=priority, allow_reverse=allow_reverse)
    lo, hi = limits(a)
    rng = random.Random(1)
    for _ in range(2000):
        w = Wrench(rng.uniform(-3, 3) * a.max_surge_n, rng.uniform(-3, 3) * max(a.max_yaw_nm, 1.0))
        cmd = a.allocate(w)
        for t, low, high in zip(cmd.thrust_n, lo, hi):
            assert low - 1e-9 <= t <= high + 1e-9
        if not allow_reverse:
            assert min(cmd.thrust_n) >= 0.0


def test_wamv_capabilities_reflect_the_weaker_reverse():
    a = allocator("wamv")
    assert a.max_surge_n == pytest.approx(1000.0)
    assert a.min_surge_n == pytest.approx(-500.0)
    # best yaw: one side full forward (500 N), the other full reverse (250 N), lever 1.03 m
    assert a.max_yaw_nm == pytest.approx(1.03 * 750.0)
    b = allocator("wamv", allow_reverse=False)
    assert b.min_surge_n == 0.0 and b.max_yaw_nm == pytest.approx(1.03 * 500.0)


@pytest.mark.parametrize("name", PRESETS)
def test_positive_yaw_pushes_harder_on_the_port_side(name):
    a = allocator(name)
    v = load_vessel(name)
    cmd = a.allocate(Wrench(0.0, 0.2 * a.max_yaw_nm))
    for th, t in zip(v.thrusters, cmd.thrust_n):
        assert (t > 0) == (th.y_m < 0), (th.name, t)
    assert a.wrench_of(cmd.thrust_n).yaw_nm == pytest.approx(0.2 * a.max_yaw_nm)
    assert a.wrench_of(cmd.thrust_n).surge_n == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("name", PRESETS)
def test_feasible_wrench_is_delivered_exactly(name):
    a = allocator(name)
    rng = random.Random(2)
    delivered = 0
    for _ in range(500):
        w = Wrench(rng.uniform(a.min_surge_n, a.max_surge_n), rng.uniform(-a.max_yaw_nm, a.max_yaw_nm))
        lo, hi = a.surge_range(w.yaw_nm)
        if not lo <= w.surge_n <= hi:
            continue
        got = a.wrench_of(a.allocate(w).thrust_n)
        assert got.surge_n == pytest.approx(w.surge_n, abs=1e-6)
        assert got.yaw_nm == pytest.approx(w.yaw_nm, abs=1e-6)
        delivered += 1
    assert delivered > 100


def test_four_thrusters_share_equally_fore_and_aft():
    a = allocator("iacquabot")
    fl, fr, al, ar = a.allocate(Wrench(60.0, 10.0)).thrust_n
    assert fl == pytest.approx(al) and fr == pytest.approx(ar)
    assert fl > fr
    assert fl + fr + al + ar == pytest.approx(60.0)


def test_yaw_priority_keeps_the_moment_and_gives_up_surge():
    a = allocator("wamv", priority="yaw")
    w = Wrench(1000.0, 400.0)                      # full surge cannot carry any yaw
    cmd = a.allocate(w)
    got = a.wrench_of(cmd.thrust_n)
    assert got.yaw_nm == pytest.approx(400.0)
    assert got.surge_n < 1000.0
    assert max(cmd.thrust_n) == pytest.approx(500.0)   # one side at its limit
    # the most surge compatible with that moment: port full, starboard reduced by 400 / 1.03
    assert got.surge_n == pytest.approx(1000.0 - 400.0 / 1.03)


def test_surge_priority_keeps_the_surge_and_gives_up_yaw():
    a = allocator("wamv", priority="surge")
    got = a.wrench_of(a.allocate(Wrench(900.0, 400.0)).thrust_n)
    assert got.surge_n == pytest.approx(900.0)
    assert got.yaw_nm == pytest.approx(1.03 * 100.0)     # 500 / 400 N: what is left
    full = a.wrench_of(a.allocate(Wrench(5000.0, -400.0)).thrust_n)
    assert full.surge_n == pytest.approx(1000.0) and full.yaw_nm == pytest.approx(0.0, abs=1e-9)


def test_yaw_beyond_reach_is_clamped_to_the_largest_moment():
    a = allocator("wamv", priority="yaw")          # 500 N ahead, 250 N astern per side, arms 1.03 m
    assert a.allocate(Wrench(300.0, 1e5)).thrust_n == pytest.approx((500.0, -250.0))
    got = a.wrench_of(a.allocate(Wrench(300.0, 1e5)).thrust_n)
    assert got.yaw_nm == pytest.approx(a.max_yaw_nm) and got.surge_n == pytest.approx(250.0)


@pytest.mark.parametrize("surge_n", [0.0, -100.0, -1000.0])
def test_a_boat_asked_to_stop_or_brake_is_not_pushed_ahead_to_turn_harder(surge_n):
    """The largest moment needs 250 N ahead (reverse is weaker than forward); a boat asked for no surge or for
    braking turns on the moment both sides give at zero surge (+-250 N) instead."""
    a = allocator("wamv", priority="yaw")
    cmd = a.allocate(Wrench(surge_n, -1e5))
    assert cmd.thrust_n == pytest.approx((-250.0, 250.0))
    got = a.wrench_of(cmd.thrust_n)
    assert got.surge_n == pytest.approx(0.0, abs=1e-9) and got.yaw_nm == pytest.approx(-515.0)


def test_a_moderate_surge_demand_is_not_exceeded_for_yaw():
    a = allocator("wamv", priority="yaw")
    got = a.wrench_of(a.allocate(Wrench(100.0, 1e5)).thrust_n)
    assert got.surge_n == pytest.approx(100.0)
    assert got.yaw_nm == pytest.approx(1.03 * (350.0 + 250.0))      # starboard -250 N (its limit), port +350 N


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("priority", ["yaw", "surge"])
def test_saturated_result_is_the_nearest_in_the_priority_axis(name, priority):
    """Brute force over every port/starboard thrust pair within the limits (each side's thrusters pushing
    alike, which spans every wrench the layout can give): the priority axis is as close to the demand as any
    deliverable wrench gets, and given that, so is the other axis."""
    a = allocator(name, priority=priority)
    v = load_vessel(name)
    lo, hi = limits(a)
    port = [i for i, t in enumerate(v.thrusters) if t.y_m < 0]
    grid = 120
    feasible = []
    for i in range(grid + 1):
        for j in range(grid + 1):
            tp = lo[port[0]] + (hi[port[0]] - lo[port[0]]) * i / grid
            ts = lo[port[0]] + (hi[port[0]] - lo[port[0]]) * j / grid
            w = a.wrench_of([tp if k in port else ts for k in range(len(v.thrusters))])
            feasible.append((w.surge_n, w.yaw_nm))
    res_s = (hi[0] - lo[0]) * len(v.thrusters) / grid          # grid step in wrench space (one side moves)
    res_n = res_s * max(abs(t.y_m) for t in v.thrusters)
    rng = random.Random(3)
    for _ in range(25):
        w = Wrench(rng.uniform(-2, 2) * a.max_surge_n, rng.uniform(-2, 2) * a.max_yaw_nm)
        got = a.wrench_of(a.allocate(w).thrust_n)
        if priority == "yaw":       # the moment first, with a surge between 0 and the demand
            band = (min(w.surge_n, 0.0) - 1e-9, max(w.surge_n, 0.0) + 1e-9)
            first = min(abs(n - w.yaw_nm) for s, n in feasible if band[0] <= s <= band[1])
            assert abs(got.yaw_nm - w.yaw_nm) <= first + 1e-6, (w, got)
            second = min(abs(s - w.surge_n) for s, n in feasible if abs(n - got.yaw_nm) <= res_n)
            assert abs(got.surge_n - w.surge_n) <= second + res_s, (w, got)
        else:
            first = min(abs(s - w.surge_n) for s, _ in feasible)
            assert abs(got.surge_n - w.surge_n) <= first + 1e-6, (w, got)
            second = min(abs(n - w.yaw_nm) for s, n in feasible if abs(s - got.surge_n) <= res_s)
            assert abs(got.yaw_nm - w.yaw_nm) <= second + res_n, (w, got)


def test_no_reverse_turns_by_slowing_one_side():
    a = allocator("wamv", allow_reverse=False, priority="yaw")
    cmd = a.allocate(Wrench(100.0, 200.0))
    assert min(cmd.thrust_n) >= 0.0
    got = a.wrench_of(cmd.thrust_n)
    assert got.yaw_nm == pytest.approx(200.0)                 # kept: yaw first
    assert cmd.thrust_n[1] == 0.0                             # starboard stopped, not reversed
    astern = a.allocate(Wrench(-300.0, 0.0))
    assert astern.thrust_n == (0.0, 0.0)


def test_non_finite_wrench_is_taken_as_zero():
    a = allocator("foka")
    assert a.allocate(Wrench(float("nan"), 0.0)).thrust_n == (0.0, 0.0)
    got = a.wrench_of(a.allocate(Wrench(10.0, float("inf"))).thrust_n)
    assert got.yaw_nm == 0.0 and got.surge_n == pytest.approx(10.0)


def test_asymmetric_layout_still_delivers_the_wrench():
    v = load_vessel("wamv")
    th = (dataclasses.replace(v.thrusters[0], y_m=-0.5), dataclasses.replace(v.thrusters[1], y_m=1.5))
    v = dataclasses.replace(v, thrusters=th)
    a = Allocator(v, make_thrust_maps(v))
    got = a.wrench_of(a.allocate(Wrench(200.0, -50.0)).thrust_n)
    assert got.surge_n == pytest.approx(200.0) and got.yaw_nm == pytest.approx(-50.0)
    assert a.allocate(Wrench(0.0, 0.0)).thrust_n == (0.0, 0.0)


def test_mismatched_maps_and_degenerate_layouts_are_errors():
    v = load_vessel("wamv")
    maps = make_thrust_maps(v)
    with pytest.raises(ValueError, match="2 thrusters"):
        Allocator(v, maps[:1])
    same_side = dataclasses.replace(v, thrusters=tuple(dataclasses.replace(t, y_m=1.0) for t in v.thrusters))
    with pytest.raises(ValueError, match="yaw moment"):
        Allocator(same_side, maps)


def test_weak_reverse_thruster_limits_astern_force():
    v = load_vessel("wamv")
    weak = ThrustMap([1100, 1475, 1525, 1900], [-50.0, 0.0, 0.0, 500.0], 1500)
    a = Allocator(v, (make_thrust_maps(v)[0], weak))
    assert a.min_surge_n == pytest.approx(-100.0)        # both sides reverse equally: 50 N each
    cmd = a.allocate(Wrench(-1000.0, 0.0))
    assert cmd.thrust_n == pytest.approx((-50.0, -50.0))
    assert math.isclose(a.wrench_of(cmd.thrust_n).yaw_nm, 0.0, abs_tol=1e-9)
