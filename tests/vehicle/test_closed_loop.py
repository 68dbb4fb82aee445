"""Closed-loop scenarios in the built-in simulator, deterministic by seed: the whole chain from emulated
sensors through the EKF, guidance, control and allocation to the plant, on all three presets."""
import dataclasses
import math

import numpy as np
import pytest

from autopilot.control.allocation import Allocator
from autopilot.control.heading_speed import HeadingController, SpeedController
from autopilot.guidance.path_following import Leg
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from autopilot.vocab.types import Wrench
from drivers.thrust_map import make_thrust_map
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant
from hil.sim.plant_spec import PlantSpec
from hil.sim.runner import SimOptions, run_sim

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

MISSIONS = CONFIG_DIR / "missions"


def _leg_offsets(result):
    """(along, cross) of the true track against the straight-line mission's leg A->B."""
    (n0, e0), (n1, e1) = result.waypoints_ned[:2]
    leg = Leg(n0, e0, n1, e1)
    tr = result.trace
    return leg, np.array([leg.along_cross_m(n, e) for n, e in zip(tr["truth_n"], tr["truth_e"])])


def test_demo_mission_foka_in_wind_waves_and_current():
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    r = run_sim(load_vessel("foka"), load_mission(MISSIONS / "demo.yaml"),
                SimOptions(seed=1, env=env, gps_noise="white")).report
    assert r["mission_complete"] and r["waypoints_reached"] == r["waypoints_total"] == 6
    assert r["xte_rms_m"] <= 0.5
    assert r["pos_err_rms_m"] < r["gps_err_rms_m"] / 2


@pytest.mark.parametrize("crab", [False, True], ids=["ilos-alone", "ilos-with-crab-compensation"])
def test_ilos_removes_the_offset_a_cross_current_leaves_with_plain_los(crab):
    vessel, mission = load_vessel("wamv"), load_mission(MISSIONS / "straight_line.yaml")
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90)
    means = {}
    # plain LOS is the textbook law: sigma = 0 and the heading (not the course) steered
    for label, law, sigma, comp in (("ilos", "ilos", mission.guidance.sigma, crab), ("los", "los", 0.0, False)):
        m = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance, law=law, sigma=sigma,
                                                                      crab_compensation=comp))
        res = run_sim(vessel, m, SimOptions(seed=1, env=env, gps_noise="white", gps_rate_hz=10))
        assert res.report["mission_complete"]
        leg, a = _leg_offsets(res)
        half = (a[:, 0] > leg.length_m / 2) & (a[:, 0] < leg.length_m)
        means[label] = float(np.mean(a[half, 1]))
    assert abs(means["ilos"]) <= 0.1
    assert means["los"] > 1.0          # plain LOS is pushed downstream (the current flows east = right)


def test_crab_compensation_alone_removes_most_of_the_cross_current_offset():
    """LOS without the integral, but steering the course over ground: the estimated drift sets the crab."""
    vessel, mission = load_vessel("wamv"), load_mission(MISSIONS / "straight_line.yaml")
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90)
    m = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance, law="los", sigma=0.0,
                                                                  crab_compensation=True))
    res = run_sim(vessel, m, SimOptions(seed=1, env=env, gps_noise="white", gps_rate_hz=10))
    leg, a = _leg_offsets(res)
    half = (a[:, 0] > leg.length_m / 2) & (a[:, 0] < leg.length_m)
    assert abs(float(np.mean(a[half, 1]))) <= 0.3


def test_hexagon_on_wamv_in_wind():
    r = run_sim(load_vessel("wamv"), load_mission(MISSIONS / "hexagon.yaml"),
                SimOptions(seed=2, env=EnvironmentConfig(wind_speed_mps=3, wind_from_deg=45),
                           gps_noise="white")).report
    assert r["mission_complete"] and r["waypoints_reached"] == 7
    assert r["xte_rms_m"] < 1.5


def test_iacquabot_flies_the_survey_with_four_thrusters():
    mission = load_mission(MISSIONS / "demo.yaml")
    opts = SimOptions(seed=3, env=EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=45), gps_noise="white")
    res = run_sim(load_vessel("iacquabot"), mission, opts)
    assert res.report["mission_complete"]
    assert res.thrust_n.shape[1] == 4
    assert np.all(np.abs(res.thrust_n).max(axis=0) > 1.0)     # all four thrusters work
    # paper 000's hull turns at about 9 deg/s at full differential thrust: a 5 m turning radius at 0.8 m/s,
    # against the survey's 3 m lookahead. Guidance flies a lookahead of its turning radius (9.9 m); on the
    # mission's 3 m it weaves on the legs with a thruster at its limit much of the time (measured, seeds 1 and
    # 3: 46/71 % of cycles against 20/21 %, cross-track RMS 0.77/0.87 m against 0.61/0.49 m). It used to take
    # 10 % longer too (436/441 s against 394/399 s) until the filter took a late fix's velocity at the fix's
    # heading; now 380/409 s against 393/397 s, so the time is no longer what tells them apart.
    as_filed = dataclasses.replace(mission, guidance=dataclasses.replace(mission.guidance,
                                                                         lookahead_min_turn_radii=0.0))
    weaving = run_sim(load_vessel("iacquabot"), as_filed, opts).report
    assert weaving["mission_complete"]
    assert res.report["thruster_usage"]["saturated_frac"] < 0.5 * weaving["thruster_usage"]["saturated_frac"]
    assert res.report["xte_rms_m"] < weaving["xte_rms_m"]
    assert res.report["xte_rms_m"] < 2.0


def test_same_seed_same_run_other_seed_other_noise():
    m = load_mission(MISSIONS / "straight_line.yaml")
    opts = SimOptions(seed=7, duration_s=30)
    a = run_sim(load_vessel("wamv"), m, opts).report
    b = run_sim(load_vessel("wamv"), m, opts).report
    c = run_sim(load_vessel("wamv"), m, dataclasses.replace(opts, seed=8)).report
    keys = ("pos_err_rms_m", "gps_err_rms_m", "heading_err_rms_deg")
    assert [a[k] for k in keys] == [b[k] for k in keys]
    assert a["gps_err_rms_m"] != c["gps_err_rms_m"]


def test_heading_step_of_20_deg_on_wamv_no_overshoot_beyond_2_deg_and_no_reversing():
    """Heading hold at cruise on the full plant (true state fed back: this measures the controller)."""
    vessel = load_vessel("wamv")
    maps = [make_thrust_map(t, vessel) for t in vessel.thrusters]
    alloc = Allocator(vessel, maps)
    hc = HeadingController(vessel, alloc.max_yaw_nm)
    sc = SpeedController(vessel, alloc.max_surge_n, alloc.min_surge_n)
    plant = Plant(vessel, EnvironmentConfig(), seed=1, north_m=0, east_m=0, heading_rad=0.0, surge_mps=1.5)
    thrust, dt = [0.0, 0.0], 0.02
    ref, psi_log, thrust_log = 0.0, [], []
    for k in range(1, int(60 / dt)):
        t = k * dt
        if t >= 20.0:
            ref = math.radians(20.0)
        truth = plant.step_to(t, thrust)
        w = Wrench(sc.update(t, truth.surge_mps, 1.5),
                   hc.update(t, truth.heading_rad, truth.yaw_rate_rps, ref))
        thrust = list(alloc.allocate(w).thrust_n)
        if t >= 20.0:
            psi_log.append(math.degrees(truth.heading_rad))
            thrust_log.append(thrust)
    psi = np.array(psi_log)
    assert psi.max() - 20.0 <= 2.0                       # overshoot
    assert abs(psi[-int(10 / dt):] - 20.0).max() < 0.5   # settled over the last 10 s
    assert np.min(thrust_log) >= 0.0                     # no thruster reversed


def test_byte_level_and_typed_sensors_both_fly_the_mission():
    """The default sim runs the real drivers on emulated devices; the typed models stay available."""
    m, v = load_mission(MISSIONS / "straight_line.yaml"), load_vessel("wamv")
    for devices in ("bytes", "typed"):
        r = run_sim(v, m, SimOptions(seed=4, gps_noise="white", devices=devices)).report
        assert r["devices"] == devices
        assert r["mission_complete"], devices
        assert r["pos_err_rms_m"] < r["gps_err_rms_m"] / 2


def test_ten_hz_gnss_beyond_the_l76k_is_simulated_as_a_faster_receiver():
    res = run_sim(load_vessel("wamv"), load_mission(MISSIONS / "straight_line.yaml"),
                  SimOptions(seed=1, gps_noise="white", gps_rate_hz=10, duration_s=20))
    assert res.report["gps_rate_hz"] == 10
    assert 190 <= len(res.gps_ne) <= 200          # 20 s of 10 Hz fixes through the real L76K driver


@pytest.mark.parametrize("mismatch", [{}, {"y_v": 0.6}], ids=["matched", "sway-damping-x0.6"])
def test_foka_holds_its_heading_on_the_hexagon_legs_at_speed(mismatch):
    """FOKA at the hexagon's 1.5 m/s in the demo's weather runs its legs straight, on its own plant and on one
    that slides more in its turns. When the crab angle took the hull's own sway (which follows the yaw rate in a
    turn) and the lookahead was 3 m, it wove +-25 deg on every leg: yaw rate RMS mid-leg 15 and 22 deg/s,
    cross-track 0.92 and 1.53 m (now 2.0 and 2.1 deg/s, 0.38 and 0.39 m, on a 4.3 m lookahead)."""
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    vessel = load_vessel("foka")
    res = run_sim(vessel, load_mission(MISSIONS / "hexagon.yaml"),
                  SimOptions(seed=1, env=env, gps_noise="white",
                             plant_spec=PlantSpec.resolve(vessel, 1, mismatch=mismatch)))
    assert res.report["mission_complete"]
    points = [res.start_ned] + list(res.waypoints_ned)
    tr = res.trace
    mid_leg_r = []
    for i, n, e, r in zip(tr["wp_index"], tr["truth_n"], tr["truth_e"], tr["truth_r"]):
        i = int(i)
        if 0 <= i < len(points) - 1:       # waypoint i is approached on the leg from point i
            leg = Leg(*points[i], *points[i + 1])
            along, _ = leg.along_cross_m(n, e)
            if 0.25 * leg.length_m < along < 0.75 * leg.length_m:
                mid_leg_r.append(r)
    assert len(mid_leg_r) > 1000
    assert math.degrees(float(np.sqrt(np.mean(np.square(mid_leg_r))))) < 6.0
    assert res.report["xte_rms_m"] < 0.65


def test_the_iacquabot_comes_onto_each_hexagon_leg_without_overshooting_it_for_half_a_minute():
    """The IAcquaBot with 2.5x its surge added mass (it carries its corner speed further) on the hexagon in the
    demo's weather. While the ILOS integral took the approach onto each leg as an offset, the boat crossed the
    line and sat up to 2.2 m beyond it for half a minute (cross-track RMS 1.20 m); with the integral held while
    the boat closes on the line by itself, about 0.6 m."""
    env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                            wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    vessel = load_vessel("iacquabot")
    res = run_sim(vessel, load_mission(MISSIONS / "hexagon.yaml"),
                  SimOptions(seed=1, env=env, gps_noise="white",
                             plant_spec=PlantSpec.resolve(vessel, 1, mismatch={"x_udot": 2.5})))
    assert res.report["mission_complete"] and res.report["failsafe_events"] == []
    assert res.report["xte_rms_m"] < 0.8
