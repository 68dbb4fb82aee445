"""The simulated pack (hil/sim/battery.py) and thrust maps that follow it (drivers/thrust_map.py
VoltageFollowingMaps): the pack's voltage by charge and load, the maps at a drained pack, the low-battery failsafe
firing as a long run drains it, and a mission flown from a full pack down to the threshold that keeps the
full pack's speed and cross-track error (within 10 %) because the maps follow the voltage."""
import dataclasses
import math

import pytest

from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from drivers.thrust_map import VoltageFollowingMaps, make_thrust_maps
from hil.sim.battery import BatteryPack, PackSpec, ocv_cell_v
from hil.sim.runner import SimOptions, run_sim
from tests.support.battery_flight import fly, off_by

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

FOKA_LOW_V = 17.5                    # foka: 5S li-ion, 21 V full, low_voltage_v 17.5


def test_the_pack_sags_under_load_and_drains_by_the_charge_drawn():
    spec = PackSpec(cells=5, chemistry="li-ion", capacity_ah=2.0, internal_resistance_ohm=0.1, hotel_current_a=0.0)
    pack = BatteryPack(spec)
    assert pack.open_circuit_v() == pytest.approx(21.0)
    v_idle = pack.step(1.0, [0.0, 0.0])
    assert v_idle == pytest.approx(21.0, abs=1e-6)
    v_load = pack.step(1.0, [30.0, 30.0])          # 2 x 1.05 x 30^1.5 W = 345 W: about 16.4 A, 1.6 V of sag
    assert pack.current_a == pytest.approx(345.1 / 21.0, rel=0.01)
    assert 21.0 - v_load == pytest.approx(0.1 * pack.current_a, rel=0.01)
    for _ in range(3600):                           # an hour at that load drains it (2 Ah at ~18 A: ~7 minutes)
        pack.step(1.0, [30.0, 30.0])
    assert pack.soc == 0.0 and pack.open_circuit_v() == pytest.approx(15.0)
    assert ocv_cell_v("lipo", 0.5) == pytest.approx(3.84) and ocv_cell_v("lifepo4", 1.0) == pytest.approx(3.6)
    with pytest.raises(ValueError):
        PackSpec(cells=4, chemistry="lipo", capacity_ah=0.0)
    with pytest.raises(ValueError):
        pack.step(-0.1, [0.0])


def test_maps_follow_the_filtered_pack_voltage_a_few_times_a_second():
    foka = load_vessel("foka")                                     # ApisQueen U5, table at 21 V
    follow = VoltageFollowingMaps(foka)
    full = follow.maps[0].max_forward_n
    assert follow.update(0.0, None) is False and follow.update(0.0, math.nan) is False
    assert follow.update(0.0, 21.0) is False                     # the first measurement is taken as it is
    rebuilt = [t for t in (k * 0.02 for k in range(1, 1001)) if follow.update(t, 17.5)]   # 20 s at 17.5 V
    assert follow.voltage_v == pytest.approx(17.5, abs=0.06)
    assert follow.maps[0].max_forward_n == pytest.approx(full * (follow.voltage_v / 21.0) ** 2, rel=1e-6)
    assert min(b - a for a, b in zip(rebuilt, rebuilt[1:])) >= 0.25 - 1e-9      # at most 4 times a second
    assert len(rebuilt) >= 10 and follow.rebuilds == len(rebuilt)   # the filter's approach, step by step
    # a brief sag under a thrust step moves the maps less than the step itself (tau 2 s)
    follow2 = VoltageFollowingMaps(foka, 21.0)
    follow2.update(0.0, 21.0)
    follow2.update(0.2, 18.0)
    assert follow2.voltage_v > 20.5
    # the T200 tables at the measured voltage: 4S from full (16.8 V) to 13 V loses about 30 % of thrust
    iacq = load_vessel("iacquabot")
    t200 = dataclasses.replace(iacq, battery=dataclasses.replace(iacq.battery, voltage_v=16.8, cells=4,
                                                                 low_voltage_v=13.0))
    loss = 1.0 - make_thrust_maps(t200, 13.0)[0].max_forward_n / make_thrust_maps(t200, 16.8)[0].max_forward_n
    assert 0.25 <= loss <= 0.40


def test_a_draining_pack_fires_the_low_battery_failsafe_in_simulation():
    foka = load_vessel("foka")
    spec = PackSpec(cells=5, chemistry="li-ion", capacity_ah=0.3, internal_resistance_ohm=0.08, nominal_v=21.0)
    volts = []
    r = run_sim(foka, load_mission(CONFIG_DIR / "missions" / "hexagon.yaml"), SimOptions(
        devices="typed", battery=spec, duration_s=240.0,
        on_result=lambda t, ap, batch, res, truth: volts.append((t, batch.battery_v, ap.battery_v))))
    fired = [e for e in r.events if e.kind == "failsafe" and e.failsafe == "low-battery"]
    assert fired, [e.message for e in r.events][-10:]
    t_fire = fired[0].time_s
    below = next(t for t, v, _ in volts if v < FOKA_LOW_V)
    assert below < t_fire <= below + 15.0          # its 5 s delay (a sag shorter than that does not count)
    assert volts[0][1] == pytest.approx(21.0, abs=0.1) and volts[-1][2] == volts[-1][1]
    assert r.report["battery"]["consumed_mah"] > 0.5 * 300


def test_a_mission_flown_down_to_the_threshold_keeps_the_full_pack_speed_and_track():
    full = fly("foka", "hexagon", None)
    drained = fly("foka", "hexagon", 0.97)                    # ends near foka's 17.5 V
    assert full.complete and drained.complete
    assert drained.start_v == pytest.approx(21.0, abs=0.1)
    assert abs(drained.end_v - FOKA_LOW_V) <= 0.5, drained
    off = off_by(drained, full)
    assert abs(off["speed"]) <= 0.10 and abs(off["xte_rms"]) <= 0.10 and abs(off["xte_max"]) <= 0.10, (off, full,
                                                                                                       drained)


def test_autopilot_runs_sim_backend_drains_the_vessel_files_pack_and_its_thrusters_weaken():
    from autopilot.guidance.path_following import mission_frame
    from hil.sim.backend import SimBackend

    foka = load_vessel("foka")
    foka = dataclasses.replace(foka, battery=dataclasses.replace(foka.battery, capacity_ah=0.2))   # the file's
    mission = load_mission(CONFIG_DIR / "missions" / "hexagon.yaml")
    backend = SimBackend(foka, mission, mission_frame(mission), seed=3)
    full_pulses = [1900, 1900]
    seen = []
    t = 0.0
    while t < 120.0:
        t = round(t + 0.02, 6)
        batch = backend.poll(t)
        backend.write(t, None, full_pulses)
        if batch.battery_v is not None:
            seen.append((t, batch.battery_v, batch.battery_a, batch.battery_mah, backend.truth.surge_mps))
    assert seen and seen[0][1] > 20.0
    t_end, v_end, a_end, mah_end, speed_end = seen[-1]
    assert v_end < 17.5                                   # two U5 at full thrust empty 0.2 Ah within 2 minutes
    assert a_end > 5.0 and mah_end > 150.0
    speed_30 = next(u for tt, _, _, _, u in seen if tt >= 30.0)
    assert speed_end < 0.92 * speed_30, (speed_30, speed_end)   # full throttle, slower on the drained pack
    backend.close()
