"""The simulated vessel (hil/sim/plant.py, hil/sim/dynamics.py): what a user of the simulator would notice if it
were wrong."""

import math

import pytest

from autopilot.vocab.config import load_vessel
from hil.sim.dynamics import steady_surge_speed_mps
from hil.sim.environment import EnvironmentConfig
from hil.sim.plant import Plant, Truth

CALM = EnvironmentConfig()


def run(plant: Plant, seconds: float, thrust, rate_hz: float = 50.0) -> Truth:
    start = plant.time_s
    n = int(round(seconds * rate_hz))
    truth = plant.truth
    for i in range(1, n + 1):
        truth = plant.step_to(start + i / rate_hz, thrust)
    return truth


@pytest.mark.parametrize("name, per_thruster_n", [("foka", 15.0), ("foka", 35.0), ("wamv", 150.0),
                                                  ("wamv", 450.0), ("iacquabot", 20.0)])
def test_steady_surge_speed_balances_damping(name, per_thruster_n):
    vessel = load_vessel(name)
    hull = vessel.hull
    thrust = (per_thruster_n,) * len(vessel.thrusters)
    total = per_thruster_n * len(vessel.thrusters)
    truth = run(Plant(vessel, CALM, 0, 0.0, 0.0, 0.0), 40.0, thrust)
    u = truth.surge_mps
    # T = -X_u u - X_u|u| u|u|
    assert total == pytest.approx(-hull.x_u * u - hull.x_uu * u * abs(u), rel=1e-4)
    assert u == pytest.approx(steady_surge_speed_mps(hull.x_u, hull.x_uu, total), rel=1e-4)
    assert truth.sway_mps == 0.0 and truth.yaw_rate_rps == 0.0 and truth.heading_rad == 0.0
    assert truth.north_m > 0.5 * u * 40.0 and truth.east_m == 0.0


def test_reverse_thrust_backs_the_boat():
    vessel = load_vessel("foka")
    truth = run(Plant(vessel, CALM, 0, 0.0, 0.0, math.pi / 2), 20.0, (-10.0, -10.0))
    assert truth.surge_mps == pytest.approx(steady_surge_speed_mps(vessel.hull.x_u, vessel.hull.x_uu, -20.0),
                                            rel=1e-4)
    assert truth.east_m < -5.0                     # heading east, going backwards = westwards


def test_positive_yaw_moment_turns_to_starboard_and_settles_on_the_damping_balance():
    vessel = load_vessel("foka")
    # left thruster (y < 0) forward, right (y > 0) backward: N = -sum y_i T_i = 0.25*4 + 0.25*4 = 2 N*m > 0
    plant = Plant(vessel, CALM, 0, 0.0, 0.0, 0.0)
    truth = run(plant, 1.0, (4.0, -4.0))
    assert truth.yaw_rate_rps > 0 and truth.heading_rad > 0
    truth = run(plant, 30.0, (4.0, -4.0))
    hull = vessel.hull
    r = truth.yaw_rate_rps
    assert 2.0 == pytest.approx(-hull.n_r * r - hull.n_rr * r * abs(r), rel=1e-4)
    assert abs(truth.surge_mps) < 1e-9 and abs(truth.sway_mps) < 1e-9   # a pure moment does not translate


def test_forward_thrust_on_the_starboard_thruster_alone_turns_to_port():
    vessel = load_vessel("wamv")
    right = [t.y_m > 0 for t in vessel.thrusters].index(True)
    demand = [0.0, 0.0]
    demand[right] = 200.0
    truth = run(Plant(vessel, CALM, 0, 0.0, 0.0, 0.0), 5.0, demand)
    assert truth.yaw_rate_rps < -0.05 and truth.heading_rad < -0.1
    assert truth.surge_mps > 0.3


def test_heading_is_wrapped_across_south():
    vessel = load_vessel("foka")
    plant = Plant(vessel, CALM, 0, 0.0, 0.0, math.pi - 0.05)
    truth = run(plant, 3.0, (4.0, -4.0))
    assert -math.pi <= truth.heading_rad < 0.0           # crossed +180 deg into the negative half
    assert truth.yaw_rate_rps > 0


def test_current_drifts_an_idle_boat_at_the_current_velocity():
    vessel = load_vessel("wamv")
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=90.0)
    plant = Plant(vessel, env, 0, 0.0, 0.0, 0.0)
    run(plant, 60.0, (0.0, 0.0))
    east_before = plant.truth.east_m
    truth = run(plant, 10.0, (0.0, 0.0))
    vn, ve = truth.velocity_ned_mps
    assert vn == pytest.approx(0.0, abs=1e-4) and ve == pytest.approx(0.3, abs=1e-4)
    assert truth.east_m - east_before == pytest.approx(3.0, abs=2e-3)
    assert truth.heading_rad == pytest.approx(0.0, abs=1e-12)   # pure drift does not turn a symmetric hull


def test_speed_through_water_is_what_damping_sees():
    vessel = load_vessel("foka")
    hull = vessel.hull
    env = EnvironmentConfig(current_speed_mps=0.4, current_toward_deg=180.0)   # head current for a north-going boat
    truth = run(Plant(vessel, env, 0, 0.0, 0.0, 0.0), 40.0, (15.0, 15.0))
    speed_water = steady_surge_speed_mps(hull.x_u, hull.x_uu, 30.0)
    assert truth.surge_mps == pytest.approx(speed_water - 0.4, rel=1e-4)


def test_beam_wind_pushes_the_boat_downwind_at_the_drag_balance():
    vessel = load_vessel("foka")
    hull, wind = vessel.hull, vessel.wind
    env = EnvironmentConfig(wind_speed_mps=5.0, wind_from_deg=0.0)           # from the north
    truth = run(Plant(vessel, env, 0, 0.0, 0.0, math.pi / 2), 60.0, (0.0, 0.0))   # heading east, beam on
    vn, ve = truth.velocity_ned_mps
    assert vn < -0.02 and abs(ve) < 1e-9                   # drifting south, downwind
    # sway balance: 0.5 rho c_y A_L (5 - v)^2 = -Y_v v - Y_vv v^2 with v = -vn to starboard (south)
    k = 0.5 * wind.air_density_kgpm3 * wind.cy * wind.area_lateral_m2
    v = -vn
    assert k * (5.0 - v) ** 2 == pytest.approx(-hull.y_v * v - hull.y_vv * v * v, rel=1e-3)


def test_head_wind_slows_the_boat_and_tail_wind_speeds_it_up():
    vessel = load_vessel("wamv")
    speeds = {}
    for from_deg in (0.0, 180.0):
        env = EnvironmentConfig(wind_speed_mps=8.0, wind_from_deg=from_deg)
        speeds[from_deg] = run(Plant(vessel, env, 0, 0.0, 0.0, 0.0), 30.0, (200.0, 200.0)).surge_mps
    calm = steady_surge_speed_mps(vessel.hull.x_u, vessel.hull.x_uu, 400.0)
    assert speeds[0.0] < calm - 0.01 < calm + 0.01 < speeds[180.0]


def test_gusts_vary_the_drift_but_steady_wind_does_not():
    vessel = load_vessel("foka")
    drift = {}
    for gust in (0.0, 1.5):
        env = EnvironmentConfig(wind_speed_mps=5.0, wind_from_deg=270.0, gust_std_mps=gust, gust_tau_s=3.0)
        plant = Plant(vessel, env, 4, 0.0, 0.0, 0.0)
        run(plant, 20.0, (0.0, 0.0))
        samples = [run(plant, 0.5, (0.0, 0.0)).sway_mps for _ in range(80)]
        mean = sum(samples) / len(samples)
        drift[gust] = math.sqrt(sum((s - mean) ** 2 for s in samples) / len(samples))
    assert drift[0.0] < 1e-6 and drift[1.5] > 0.005


def test_thrust_follows_the_demand_with_a_first_order_lag():
    vessel = load_vessel("foka")                       # time_constant_s 0.15 on both thrusters
    plant = Plant(vessel, CALM, 0, 0.0, 0.0, 0.0)
    truth = plant.step_to(0.15, (10.0, -4.0))
    assert truth.thrust_n[0] == pytest.approx(10.0 * (1 - math.exp(-1.0)), rel=1e-9)
    assert truth.thrust_n[1] == pytest.approx(-4.0 * (1 - math.exp(-1.0)), rel=1e-9)
    truth = plant.step_to(2.0, (10.0, -4.0))
    assert truth.thrust_n == pytest.approx((10.0, -4.0), rel=1e-5)


def test_plant_accepts_any_finite_thrust_but_rejects_bad_calls():
    vessel = load_vessel("foka")
    plant = Plant(vessel, CALM, 0, 0.0, 0.0, 0.0)
    truth = plant.step_to(1.0, (120.0, 120.0))         # three times the U5's rating: not the plant's concern
    assert math.isfinite(truth.surge_mps) and truth.surge_mps > 1.0
    with pytest.raises(ValueError, match="thrust_demand_n"):
        plant.step_to(1.1, (1.0,))
    with pytest.raises(ValueError, match="finite"):
        plant.step_to(1.1, (float("nan"), 0.0))
    with pytest.raises(ValueError, match="before"):
        plant.step_to(0.5, (0.0, 0.0))
    with pytest.raises(ValueError, match="dt_s"):
        Plant(vessel, CALM, 0, 0.0, 0.0, 0.0, dt_s=0.02)
    with pytest.raises(ValueError, match="seed"):
        Plant(vessel, CALM, -1, 0.0, 0.0, 0.0)


def test_time_advances_on_the_fixed_grid():
    plant = Plant(load_vessel("foka"), CALM, 0, 0.0, 0.0, 0.0, dt_s=0.01)
    assert plant.step_to(0.025, (1.0, 1.0)).time_s == pytest.approx(0.02)
    assert plant.step_to(0.025, (1.0, 1.0)).time_s == pytest.approx(0.02)   # nothing new to integrate
    total = 0.0
    for i in range(1, 5001):                             # 100 s at 50 Hz: no drift of the clock
        total = plant.step_to(i * 0.02, (1.0, 1.0)).time_s
    assert total == pytest.approx(100.0, abs=1e-9)


def test_initial_surge_is_kept_and_acceleration_reported():
    vessel = load_vessel("foka")
    hull = vessel.hull
    plant = Plant(vessel, CALM, 0, 0.0, 0.0, 0.0, surge_mps=1.0)
    assert plant.truth.surge_mps == 1.0
    truth = plant.step_to(0.01, (0.0, 0.0))            # coasting: damping decelerates
    expected = -(-hull.x_u * 1.0 - hull.x_uu * 1.0) / (hull.mass_kg - hull.x_udot)
    assert truth.surge_accel_mps2 == pytest.approx(expected, rel=0.02)


def test_rk4_at_100_hz_matches_a_ten_times_finer_step():
    vessel = load_vessel("wamv")
    env = EnvironmentConfig(wind_speed_mps=4.0, wind_from_deg=60.0, current_speed_mps=0.3, current_toward_deg=200.0)
    ends = []
    for dt in (0.01, 0.001):
        plant = Plant(vessel, env, 1, 0.0, 0.0, 0.3, dt_s=dt)
        for i in range(1, 1501):                         # 30 s of a zig-zag
            thrust = (300.0, 100.0) if (i // 250) % 2 else (100.0, 300.0)
            plant.step_to(i * 0.02, thrust)
        ends.append(plant.truth)
    a, b = ends
    assert math.hypot(a.north_m - b.north_m, a.east_m - b.east_m) < 0.01
    assert abs(a.heading_rad - b.heading_rad) < 1e-3


def test_same_seed_same_world_other_seed_other_world():
    vessel = load_vessel("foka")
    env = EnvironmentConfig(wind_speed_mps=3.0, wind_from_deg=90.0, gust_std_mps=1.0, current_speed_mps=0.2,
                            wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=90.0, wave_spread_deg=30.0)

    def trajectory(seed):
        plant = Plant(vessel, env, seed, 0.0, 0.0, 0.0)
        return [plant.step_to(i * 0.02, (20.0, 18.0)) for i in range(1, 1001)]

    assert trajectory(7) == trajectory(7)
    assert trajectory(7)[-1] != trajectory(8)[-1]


def test_slowly_varying_current_changes_the_drift_smoothly():
    vessel = load_vessel("foka")
    env = EnvironmentConfig(current_speed_mps=0.3, current_toward_deg=0.0, current_variation_mps=0.2,
                            current_period_s=120.0)
    plant = Plant(vessel, env, 2, 0.0, 0.0, 0.0)
    run(plant, 10.0, (0.0, 0.0))                         # the start-up: from rest to the current's speed
    speeds = [run(plant, 1.0, (0.0, 0.0)).surge_mps for _ in range(120)]
    assert max(speeds) > 0.45 and min(speeds) < 0.15    # the drift follows 0.3 +- 0.2 m/s
    assert max(abs(b - a) for a, b in zip(speeds, speeds[1:])) < 0.02
