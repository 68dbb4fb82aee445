"""LOITER station keeping on the foka preset in the simulator: true position against the loiter circle over ten
minutes, with white GNSS noise so the figure measures control rather than the receiver's slow bias."""
import numpy as np
import pytest

from autopilot.vocab.config import load_mission, load_vessel
from hil.sim.environment import EnvironmentConfig
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

STATION = """name: station
anchor: {lat_deg: 51.11, lon_deg: 17.06}
start:
  point: {north_m: 0.0, east_m: 0.0}
  heading_deg: 0
waypoints:
  - {north_m: 0.0, east_m: 0.0}
cruise_speed_mps: 0.8
acceptance_radius_m: 2.0
on_complete: loiter
loiter_radius_m: 2.0
"""
# the demo mission's: current 0.2 m/s toward north, wind 3 m/s from east, waves
DEMO_WEATHER = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=0.0, wind_speed_mps=3.0,
                                 wind_from_deg=90.0, wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0)


def ten_minutes_of_loiter(tmp_path, env, seed=1, vessel="foka", seconds=600, mission_extra=""):
    """Launch on the waypoint, heading north: the mission completes at once and LOITER holds the point for ten
    minutes (or `seconds`). `mission_extra`: more mission YAML."""
    path = tmp_path / "station.yaml"
    path.write_text(STATION + mission_extra)
    res = run_sim(load_vessel(vessel), load_mission(path),
                  SimOptions(seed=seed, env=env, gps_noise="white", duration_s=seconds + 20.0))
    t0 = [e.time_s for e in res.events if e.kind == "mode" and e.message.endswith("-> LOITER: mission complete")][0]
    tr = res.trace
    m = (tr["t"] >= t0) & (tr["t"] < t0 + seconds)
    assert m.sum() == seconds * 50
    dist = np.hypot(tr["truth_n"][m], tr["truth_e"][m])          # the loiter point is the origin
    return res, m, dist


@pytest.mark.parametrize("current_toward, wind_from", [(90.0, 270.0), (90.0, 200.0)],
                         ids=["wind-with-current", "wind-across-current"])
def test_loiter_keeps_foka_within_2_m_for_95_percent_of_ten_minutes_in_current_and_wind(tmp_path, current_toward,
                                                                                     wind_from):
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=current_toward, wind_speed_mps=5.0,
                            wind_from_deg=wind_from)
    res, m, dist = ten_minutes_of_loiter(tmp_path, env)
    inside = float(np.mean(dist <= 2.0))
    assert inside >= 0.95, f"inside the 2 m circle {100 * inside:.1f} % of the time"
    # it points into the drift (steady heading) instead of circling, and it works for it (thrust is applied)
    psi = res.trace["truth_psi"][m]
    resultant = np.hypot(np.mean(np.cos(psi)), np.mean(np.sin(psi)))
    assert resultant > 0.9
    assert np.mean(np.abs(res.thrust_n[m])) > 0.5


def test_loiter_in_calm_water_neither_wanders_nor_spins(tmp_path):
    res, m, dist = ten_minutes_of_loiter(tmp_path, EnvironmentConfig())
    assert dist.max() <= 2.0
    psi = np.unwrap(res.trace["truth_psi"][m])
    assert np.degrees(np.sum(np.abs(np.diff(psi)))) < 90.0       # total heading change over ten minutes


def test_a_twin_hull_launched_facing_downstream_turns_round_on_the_spot(tmp_path):
    """WAM-V, the demo's weather (current 0.2 m/s toward north, wind 3 m/s from east): it starts pointing
    downstream and must turn round into the drift. At full differential thrust its thrusters would push it 250 N
    downstream (reverse is weaker than forward): 95th percentile 6.0 m from the point. Turning on
    the moment both sides give at zero surge: 1.68 m. (Left to back into the drift, loiter_astern, it need not
    turn round: 1.33 m.)"""
    _, _, dist = ten_minutes_of_loiter(tmp_path, DEMO_WEATHER, vessel="wamv", seconds=300,
                                       mission_extra="loiter_astern: false\n")
    assert np.percentile(dist, 95) < 3.0, np.percentile(dist, 95)


def test_a_slow_turner_facing_downstream_holds_stern_first_instead_of_turning_round(tmp_path):
    """The IAcquaBot turns at about 9 deg/s at full differential thrust; launched pointing downstream it needs
    20 s to turn round, carried by the current all the while: 95th percentile 2.40 m from the point (max 3.60 m).
    Backing into the drift: 1.66 m (max 2.45 m)."""
    res, m, dist = ten_minutes_of_loiter(tmp_path, DEMO_WEATHER, vessel="iacquabot", seconds=300)
    res_fwd, _, dist_fwd = ten_minutes_of_loiter(tmp_path, DEMO_WEATHER, vessel="iacquabot", seconds=300,
                                                 mission_extra="loiter_astern: false\n")
    assert np.percentile(dist, 95) < 2.0
    assert np.percentile(dist_fwd, 95) > np.percentile(dist, 95) + 0.5
    # stern-first: the bow stays downstream (north) and the boat pushes astern; bow-first it ends facing south
    psi = res.trace["truth_psi"][m][-2500:]
    assert np.all(np.abs(np.angle(np.exp(1j * psi))) < np.radians(60))
    assert np.mean(res.thrust_n[m][-2500:]) < 0.0
    psi_fwd = res_fwd.trace["truth_psi"][m][-2500:]
    assert np.all(np.abs(np.angle(np.exp(1j * psi_fwd))) > np.radians(120))


def test_a_slow_turner_does_not_turn_round_after_its_first_noisy_drift_estimate(tmp_path):
    """Seed 3: the first GNSS velocities after launch put the drift toward the west (0.27 m/s, +-0.2), and a law
    steering by it turned the bow east and on round into the current: 95th percentile 3.08 m, 4.39 m at most,
    the bow 180 deg off downstream. Waiting until the estimator knows the drift: 1.82 m, at most 1.99 m, the
    bow within 54 deg (seeds 1-6: 95th percentile 1.13-1.82 m against 1.20-3.08 m)."""
    res, m, dist = ten_minutes_of_loiter(tmp_path, DEMO_WEATHER, seed=3, vessel="iacquabot", seconds=300)
    assert np.percentile(dist, 95) < 2.5 and dist.max() < 3.0
    assert np.all(np.abs(np.angle(np.exp(1j * res.trace["truth_psi"][m]))) < np.radians(90))


def test_a_boat_that_cannot_reverse_turns_round(tmp_path):
    import dataclasses
    vessel = load_vessel("iacquabot")
    ctl = vessel.control
    no_reverse = dataclasses.replace(vessel, control=dataclasses.replace(
        ctl, allocation=dataclasses.replace(ctl.allocation, allow_reverse=False)))
    path = tmp_path / "station.yaml"
    path.write_text(STATION)
    res = run_sim(no_reverse, load_mission(path), SimOptions(seed=1, env=DEMO_WEATHER, gps_noise="white",
                                                             duration_s=200.0))
    assert res.report["failsafe_events"] == []
    assert abs(np.angle(np.exp(1j * res.trace["truth_psi"][-1]))) > np.radians(120)   # facing the current
    assert np.min(res.thrust_n) >= 0.0
