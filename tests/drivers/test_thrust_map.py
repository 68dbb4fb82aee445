"""Thrust maps: the shipped T200 table against Blue Robotics' originals, dead zones, asymmetry, inverse."""
from __future__ import annotations

import csv
import dataclasses
import importlib.util
import math

import pytest

from autopilot.vocab.config import ThrusterConfig, load_vessel
from drivers.thrust_map import (
    IDEAL_DEAD_BAND_US,
    T200_TABLE_PATH,
    ThrustMap,
    load_t200_table,
    make_thrust_map,
    make_thrust_maps,
)
from tests.support.paths import REPO

T200_SRC = REPO / "tests" / "data" / "t200"          # Blue Robotics' published tables (see its README)
KGF = 9.80665
VOLTAGES = (10, 12, 14, 16, 18, 20)
needs_reference_data = pytest.mark.usefixtures("reference_data")   # conftest: fails, never skips, if tests/data is gone


def original(voltage):
    """{pulse_us: thrust_n} straight from Blue Robotics' CSV."""
    with open(T200_SRC / f"T200-{voltage}V.csv", newline="") as f:
        return {int(r["pwm_us"]): float(r["force_kgf"]) * KGF for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def iacquabot():
    return load_vessel("iacquabot")


@pytest.fixture(scope="module")
def t200(iacquabot):
    return iacquabot.thrusters[0]


def t200_map(t200, iacquabot, volts):
    return make_thrust_map(t200, iacquabot, volts)


# ------------------------------------------------------------------------------------ shipped table
@needs_reference_data
def test_shipped_table_is_what_the_generator_makes_from_the_originals(tmp_path):
    spec = importlib.util.spec_from_file_location("make_t200_table", REPO / "tools" / "make_t200_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    out = tmp_path / "t200.csv"
    assert tool.main(["--src", str(T200_SRC), "--out", str(out)]) == 0
    assert out.read_text() == T200_TABLE_PATH.read_text(), "drivers/data/t200_thrust_n.csv is stale: rerun the tool"


@needs_reference_data
def test_shipped_table_values_equal_the_originals_in_newtons():
    pulses, cols = load_t200_table()
    assert [v for v, _ in cols] == [float(v) for v in VOLTAGES]
    for v, thrust in cols:
        src = original(int(v))
        for p, t in zip(pulses, thrust):
            assert t == pytest.approx(src[int(p)], abs=6e-5), (v, p)


def test_shipped_table_is_small_and_names_its_source():
    text = T200_TABLE_PATH.read_text()
    assert "Blue Robotics" in text.splitlines()[0] + text.splitlines()[1]
    assert len(text) < 12_000
    pulses, _ = load_t200_table()
    assert pulses[0] == 1100 and pulses[-1] == 1900
    assert max(b - a for a, b in zip(pulses, pulses[1:])) <= 8


@needs_reference_data
@pytest.mark.parametrize("volts", VOLTAGES)
def test_map_follows_the_full_original_curve_within_two_percent(t200, iacquabot, volts):
    src = original(volts)
    full = ThrustMap(sorted(src), [src[p] for p in sorted(src)], 1500)   # every 4 us, made monotonic
    m = t200_map(t200, iacquabot, volts)
    scale = full.max_forward_n
    for p in src:
        assert abs(m.pulse_to_thrust(p) - full.pulse_to_thrust(p)) <= 0.02 * scale, p
    assert m.dead_zone_us == full.dead_zone_us
    assert m.max_forward_n == pytest.approx(full.max_forward_n, abs=1e-3)
    assert m.max_reverse_n == pytest.approx(full.max_reverse_n, abs=1e-3)


# ------------------------------------------------------------------------------------ T200 figures
@needs_reference_data
@pytest.mark.parametrize("volts,dead_zone", [(12, (1464, 1536)), (16, (1472, 1528))])
def test_t200_dead_zone_edges_match_the_tables(t200, iacquabot, volts, dead_zone):
    m = t200_map(t200, iacquabot, volts)
    src = original(volts)
    lo, hi = dead_zone
    assert m.dead_zone_us == (lo, hi)
    for p in range(lo, hi + 1):
        assert m.pulse_to_thrust(p) == 0.0
    # first pulses outside the dead zone give the tabulated (small) thrust
    assert m.pulse_to_thrust(hi + 4) == pytest.approx(src[hi + 4], abs=1e-4) and src[hi + 4] > 0
    assert m.pulse_to_thrust(lo - 4) == pytest.approx(src[lo - 4], abs=1e-4) and src[lo - 4] < 0


def test_t200_full_thrust_at_16v_is_5_25_forward_4_07_reverse_kgf(t200, iacquabot):
    m = t200_map(t200, iacquabot, 16.0)
    assert m.max_forward_n / KGF == pytest.approx(5.245, abs=0.005)
    assert m.max_reverse_n / KGF == pytest.approx(4.069, abs=0.005)
    assert m.pulse_to_thrust(1900) == pytest.approx(m.max_forward_n)
    assert m.pulse_to_thrust(1100) == pytest.approx(-m.max_reverse_n)
    assert m.thrust_to_pulse(m.max_forward_n) == 1900
    assert m.thrust_to_pulse(-m.max_reverse_n) == 1100


def test_reverse_is_weaker_than_forward_at_every_voltage(t200, iacquabot):
    for v in VOLTAGES:
        m = t200_map(t200, iacquabot, v)
        assert 0.7 * m.max_forward_n < m.max_reverse_n < 0.85 * m.max_forward_n
        # asking for as much reverse as forward saturates at full reverse
        assert m.thrust_to_pulse(-m.max_forward_n) <= 1104   # 1104 where the raw curve peaks there
        assert m.pulse_to_thrust(m.thrust_to_pulse(-m.max_forward_n)) == pytest.approx(-m.max_reverse_n)


def test_voltage_interpolation_is_linear_between_the_nearest_tables(t200, iacquabot):
    pulses, cols = load_t200_table()
    table = dict(cols)
    m13 = t200_map(t200, iacquabot, 13.0)
    m15_5 = t200_map(t200, iacquabot, 15.5)
    for i, p in enumerate(pulses):
        if p in (1100, 1104, 1892, 1896, 1900):
            continue   # ends flattened by the monotonic fix
        assert m13.pulse_to_thrust(p) == pytest.approx(0.5 * (table[12][i] + table[14][i]), abs=1e-6), p
        assert m15_5.pulse_to_thrust(p) == pytest.approx(0.25 * table[14][i] + 0.75 * table[16][i], abs=1e-6), p
    # the dead zone at 13 V is where both neighbours give zero
    assert m13.dead_zone_us == (1468, 1532)
    # more voltage, more thrust, smoothly
    fwd = [t200_map(t200, iacquabot, v / 2).max_forward_n for v in range(20, 41)]
    assert all(b > a for a, b in zip(fwd, fwd[1:]))


def test_voltage_outside_the_tables_uses_the_nearest_table(t200, iacquabot):
    for low, high in ((7.4, 10.0), (24.0, 20.0)):
        a, b = t200_map(t200, iacquabot, low), t200_map(t200, iacquabot, high)
        assert (a.max_forward_n, a.max_reverse_n, a.dead_zone_us) == (b.max_forward_n, b.max_reverse_n,
                                                                      b.dead_zone_us)
        assert a.voltage_v == low


def test_default_voltage_is_the_vessel_battery(t200, iacquabot):
    volts = iacquabot.battery.voltage_v
    assert volts == 12.0
    assert make_thrust_map(t200, iacquabot).max_forward_n == t200_map(t200, iacquabot, volts).max_forward_n
    assert make_thrust_map(t200, iacquabot).max_forward_n != t200_map(t200, iacquabot, 16.0).max_forward_n
    maps = make_thrust_maps(iacquabot)
    assert len(maps) == 4 and [m.name for m in maps] == [t.name for t in iacquabot.thrusters]


@pytest.mark.parametrize("bad", [0.0, -12.0, float("nan"), float("inf")])
def test_bad_voltage_is_an_error_naming_the_thruster(t200, iacquabot, bad):
    with pytest.raises(ValueError, match="fore_left.*voltage"):
        make_thrust_map(t200, iacquabot, bad)


# ------------------------------------------------------------------------------------ inverse, dead zone
def all_maps():
    out = []
    for name in ("foka", "iacquabot", "wamv"):
        v = load_vessel(name)
        for volts in (None, 12.0, 16.8):
            out.append(pytest.param(make_thrust_map(v.thrusters[0], v, volts), id=f"{name}-{volts}"))
    return out


@pytest.mark.parametrize("m", all_maps())
def test_thrust_is_monotonic_in_pulse(m):
    ts = [m.pulse_to_thrust(p) for p in range(int(m.pulse_min_us) - 20, int(m.pulse_max_us) + 21)]
    assert all(b >= a for a, b in zip(ts, ts[1:]))
    assert ts[0] == -m.max_reverse_n and ts[-1] == m.max_forward_n


@pytest.mark.slow
@pytest.mark.parametrize("m", all_maps())
def test_no_pulse_inside_the_dead_zone_except_neutral(m):
    lo, hi = m.dead_zone_us
    n = round(m.max_forward_n * 2000) + 1
    for k in range(-n - 50, n + 50):
        t = k / 1000.0
        p = m.thrust_to_pulse(t)
        assert isinstance(p, int)
        assert p == m.neutral_pulse_us or not lo <= p <= hi, (t, p)
        assert m.pulse_min_us <= p <= m.pulse_max_us
        if p != m.neutral_pulse_us:
            assert (p > m.neutral_pulse_us) == (t > 0), (t, p)


@pytest.mark.parametrize("m", all_maps())
def test_zero_and_non_finite_thrust_give_neutral(m):
    assert m.thrust_to_pulse(0.0) == m.neutral_pulse_us
    assert m.thrust_to_pulse(-0.0) == m.neutral_pulse_us
    assert m.thrust_to_pulse(float("nan")) == m.neutral_pulse_us
    assert m.pulse_to_thrust(m.neutral_pulse_us) == 0.0


@pytest.mark.parametrize("m", all_maps())
def test_round_trip_pulse_thrust_pulse(m):
    lo, hi = m.dead_zone_us
    for p in range(int(m.pulse_min_us), int(m.pulse_max_us) + 1):
        if lo <= p <= hi:
            continue
        t = m.pulse_to_thrust(p)
        back = m.thrust_to_pulse(t)
        # same thrust; same pulse unless the (monotonic-fixed) curve is flat there, then closer to neutral
        assert m.pulse_to_thrust(back) == pytest.approx(t, abs=1e-9), p
        assert back == p or abs(back - m.neutral_pulse_us) < abs(p - m.neutral_pulse_us), p


@pytest.mark.parametrize("m", all_maps())
def test_thrust_pulse_thrust_is_the_nearest_realisable(m):
    for k in range(-60, 61):
        t = k / 60.0 * 1.1 * m.max_forward_n
        p = m.thrust_to_pulse(t)
        got = m.pulse_to_thrust(p)
        target = min(max(t, -m.max_reverse_n), m.max_forward_n)
        for q in (p - 1, p + 1):
            if m.pulse_min_us <= q <= m.pulse_max_us:
                assert abs(got - target) <= abs(m.pulse_to_thrust(q) - target) + 1e-9, (t, p, q)


def test_tiny_thrust_rounds_to_neutral_or_first_pulse_outside(t200, iacquabot):
    m = t200_map(t200, iacquabot, 16.0)
    first = m.pulse_to_thrust(1529)      # first pulse above the 1472-1528 dead zone
    assert 0 < first < 0.2
    assert m.thrust_to_pulse(0.4 * first) == 1500
    assert m.thrust_to_pulse(0.6 * first) == 1529
    assert m.thrust_to_pulse(1e-6) == 1500
    last = m.pulse_to_thrust(1471)
    assert m.thrust_to_pulse(0.6 * last) == 1471
    assert m.thrust_to_pulse(0.4 * last) == 1500


def test_wiggly_table_is_made_monotonic_and_the_inverse_stays_near_neutral():
    # raw bench data: thrust dips near full forward and near full reverse
    m = ThrustMap([1100, 1120, 1140, 1480, 1500, 1520, 1860, 1880, 1900],
                  [-30.0, -31.0, -29.0, 0.0, 0.0, 0.0, 40.0, 39.0, 40.5], 1500)
    assert m.max_forward_n == 40.5 and m.max_reverse_n == 31.0
    assert m.pulse_to_thrust(1880) == 40.0          # running max through the dip
    assert m.pulse_to_thrust(1100) == -31.0
    assert m.thrust_to_pulse(40.0) == 1860          # first pulse reaching 40 N
    assert m.thrust_to_pulse(-31.0) == 1120
    assert m.thrust_to_pulse(-100.0) == 1120        # full reverse already reached at 1120 us


# ------------------------------------------------------------------------------------ U5, ideal, ranges
def test_u5_at_table_voltage_is_the_vessel_table():
    foka = load_vessel("foka")
    m = make_thrust_map(foka.thrusters[0], foka)
    tab = foka.u5_table
    for p, t in zip(tab.pulse_us, tab.thrust_n):
        assert m.pulse_to_thrust(p) == pytest.approx(t)
    assert m.dead_zone_us == (1470, 1530)
    assert m.max_forward_n == 39.0 and m.max_reverse_n == 29.5


def test_u5_scales_with_voltage_squared():
    foka = load_vessel("foka")
    m = make_thrust_map(foka.thrusters[0], foka, 16.8)
    k = (16.8 / 21.0) ** 2
    assert m.max_forward_n == pytest.approx(39.0 * k)
    assert m.pulse_to_thrust(1700) == pytest.approx(16.5 * k)
    assert m.dead_zone_us == (1470, 1530)


def test_ideal_is_linear_from_the_dead_band_edge():
    wamv = load_vessel("wamv")
    m = make_thrust_map(wamv.thrusters[0], wamv)
    assert m.dead_zone_us == (1500 - IDEAL_DEAD_BAND_US, 1500 + IDEAL_DEAD_BAND_US)
    assert m.max_forward_n == 500 and m.max_reverse_n == 250
    span = 1900 - 1525
    for p in (1525, 1600, 1700, 1900):
        assert m.pulse_to_thrust(p) == pytest.approx(500 * (p - 1525) / span)
    assert m.pulse_to_thrust(1300) == pytest.approx(-250 * (1475 - 1300) / (1475 - 1100))
    assert m.thrust_to_pulse(250.0) == 1713     # 1712.5 us exactly: halves round away from neutral


def test_configured_pulse_range_limits_the_map(t200, iacquabot):
    narrow = dataclasses.replace(t200, pulse_min_us=1300, pulse_max_us=1700)
    m = make_thrust_map(narrow, iacquabot, 16.0)
    full = make_thrust_map(t200, iacquabot, 16.0)
    assert m.max_forward_n == pytest.approx(full.pulse_to_thrust(1700))
    assert m.max_reverse_n == pytest.approx(-full.pulse_to_thrust(1300))
    assert m.thrust_to_pulse(1e6) == 1700 and m.thrust_to_pulse(-1e6) == 1300
    assert m.pulse_to_thrust(1900) == m.max_forward_n


def test_no_reverse_ideal_thruster_never_pulses_below_neutral():
    th = ThrusterConfig(name="fwd_only", type="ideal", x_m=0, y_m=1, max_forward_n=100, max_reverse_n=0)
    m = make_thrust_map(th, load_vessel("wamv"))
    assert m.max_reverse_n == 0.0
    assert m.thrust_to_pulse(-50.0) == 1500
    assert m.pulse_to_thrust(1100) == 0.0


def test_neutral_outside_the_dead_zone_is_an_error_naming_the_thruster(t200, iacquabot):
    off = dataclasses.replace(t200, pulse_neutral_us=1600)
    with pytest.raises(ValueError, match="fore_left.*dead zone"):
        make_thrust_map(off, iacquabot, 16.0)


@pytest.mark.parametrize("pulses,thrusts,why", [
    ([1100, 1500, 1900], [-1.0, 0.0], "pulse widths but"),
    ([1100, 1900, 1500], [-1.0, 1.0, 0.0], "strictly increasing"),
    ([1100, 1500, 1900], [-1.0, 0.0, math.nan], "finite"),
    ([1100, 1500, 1900], [-1.0, 0.5, 1.0], "not 0"),
    ([1100, 1500, 1900], [-1.0, 0.0, 0.0], "no forward thrust"),
    ([1600, 1700, 1900], [0.0, 0.0, 1.0], "outside the table"),
])
def test_bad_breakpoints_are_rejected(pulses, thrusts, why):
    with pytest.raises(ValueError, match=why):
        ThrustMap(pulses, thrusts, 1500, name="x")


def test_nan_pulse_is_rejected():
    m = ThrustMap([1100, 1500, 1900], [-1.0, 0.0, 1.0], 1500)
    with pytest.raises(ValueError, match="pulse_us"):
        m.pulse_to_thrust(float("nan"))
