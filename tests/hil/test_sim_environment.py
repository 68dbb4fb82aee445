"""Wind, waves and current models of the built-in simulator (hil/sim/environment.py)."""
import math

import numpy as np
import pytest

from autopilot.vocab.config import load_vessel
from hil.sim.environment import EnvironmentConfig, WaveField, WindLoad, bretschneider_spectrum
from hil.sim.plant import Plant


def waves_for(vessel_name, seed=0, **env):
    vessel = load_vessel(vessel_name)
    hull = vessel.hull
    return WaveField(EnvironmentConfig(**env), hull.length_m, hull.beam_m, hull.mass_kg - hull.x_udot,
                     hull.mass_kg - hull.y_vdot, np.random.default_rng(seed))


def test_bretschneider_spectrum_holds_the_energy_of_hs_and_peaks_at_tp():
    w = np.linspace(0.01, 40.0, 400_000)
    s = bretschneider_spectrum(w, 0.5, 4.0)
    m0 = float(np.sum(s) * (w[1] - w[0]))
    assert 4.0 * math.sqrt(m0) == pytest.approx(0.5, rel=1e-3)
    assert w[np.argmax(s)] == pytest.approx(2 * math.pi / 4.0, rel=1e-3)
    assert bretschneider_spectrum(0.0, 0.5, 4.0) == 0.0


def test_wave_elevation_has_the_requested_significant_height():
    field = waves_for("foka", seed=3, wave_hs_m=0.4, wave_tp_s=3.0, wave_components=30)
    t = np.arange(0.0, 3600.0, 0.25)
    eta = np.array([field.elevation_m(ti, 0.0, 0.0) for ti in t])
    assert abs(eta.mean()) < 0.01
    assert 4.0 * eta.std() == pytest.approx(0.4 * math.sqrt(0.985), rel=0.06)   # tails beyond 0.5-99 % left out


def test_calm_sea_exerts_exactly_nothing():
    field = waves_for("foka", wave_hs_m=0.0, wave_tp_s=3.0)
    for t, n, e, psi in [(0.0, 0.0, 0.0, 0.0), (12.3, 40.0, -7.0, 2.0), (1e4, -3.0, 5.0, -3.0)]:
        assert field.excitation(t, n, e, psi) == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        assert field.force_body(t, n, e, psi) == (0.0, 0.0, 0.0)
    vessel = load_vessel("foka")
    calm = Plant(vessel, EnvironmentConfig(wave_hs_m=0.0), 5, 0.0, 0.0, 0.0)
    flat = Plant(vessel, EnvironmentConfig(), 5, 0.0, 0.0, 0.0)
    for i in range(1, 200):
        assert calm.step_to(i * 0.02, (5.0, 3.0)) == flat.step_to(i * 0.02, (5.0, 3.0))


def test_head_seas_push_along_the_hull_and_beam_seas_across_it():
    for from_deg, along in ((0.0, True), (90.0, False)):
        field = waves_for("foka", seed=1, wave_hs_m=0.2, wave_tp_s=3.0, wave_from_deg=from_deg)
        forces = np.array([field.force_body(t, 0.0, 0.0, 0.0) for t in np.arange(0.0, 120.0, 0.05)])
        rms = np.sqrt((forces ** 2).mean(axis=0))
        big, small = (rms[0], rms[1]) if along else (rms[1], rms[0])
        assert big > 1.0 and small < 1e-9 * big
        assert rms[2] < 1e-9 * big               # symmetric encounter: no yaw moment
        assert abs(forces[:, 0 if along else 1].mean()) < 0.1 * big   # first order: zero mean


def test_wave_force_is_hydrodynamic_mass_times_water_acceleration_for_long_waves():
    # Tp = 8 s: wavelength 100 m, 100 times the hull: averaging over the hull changes nothing.
    field = waves_for("foka", seed=2, wave_hs_m=0.3, wave_tp_s=8.0, wave_from_deg=180.0, wave_components=1)
    hull = load_vessel("foka").hull
    w, a = field.omega_rps[0], field.amplitude_m[0]
    peak = max(abs(field.force_body(t, 0.0, 0.0, 0.0)[0]) for t in np.linspace(0.0, 40.0, 4001))
    assert peak == pytest.approx((hull.mass_kg - hull.x_udot) * w * w * a, rel=1e-3)


def test_waves_shorter_than_the_hull_cancel_along_it():
    long_ = waves_for("wamv", seed=4, wave_hs_m=0.3, wave_tp_s=6.0, wave_from_deg=0.0)
    short = waves_for("wamv", seed=4, wave_hs_m=0.3, wave_tp_s=1.2, wave_from_deg=0.0)   # 2.2 m waves, 4.9 m hull
    t = np.arange(0.0, 60.0, 0.05)
    acc_long = np.std([long_.force_body(ti, 0.0, 0.0, 0.0)[0] for ti in t]) / np.std(
        [long_.elevation_m(ti, 0.0, 0.0) for ti in t])
    acc_short = np.std([short.force_body(ti, 0.0, 0.0, 0.0)[0] for ti in t]) / np.std(
        [short.elevation_m(ti, 0.0, 0.0) for ti in t])
    # Per metre of wave, short waves carry (w_short / w_long)^2 = 25 times the water acceleration, yet the
    # hull feels much less than that.
    assert acc_short < 0.5 * 25.0 * acc_long


@pytest.mark.parametrize("name, hs, tp", [("foka", 0.2, 3.0), ("wamv", 0.5, 5.0)])
def test_a_hull_in_waves_is_jostled_not_thrown_around(name, hs, tp):
    vessel = load_vessel(name)
    env = EnvironmentConfig(wave_hs_m=hs, wave_tp_s=tp, wave_from_deg=60.0)
    plant = Plant(vessel, env, 3, 0.0, 0.0, 0.0)
    n_cycles = 50 * 120
    pos, heading, speed = np.empty((n_cycles, 2)), np.empty(n_cycles), np.empty(n_cycles)
    for i in range(n_cycles):
        truth = plant.step_to((i + 1) * 0.02, (0.0,) * len(vessel.thrusters))
        pos[i] = truth.north_m, truth.east_m
        heading[i] = truth.heading_rad
        speed[i] = truth.speed_mps
    steps = np.arange(n_cycles)
    trend = np.array([np.polyval(np.polyfit(steps, pos[:, k], 1), steps) for k in range(2)]).T
    detrended = pos - trend
    excursion = np.sqrt((detrended ** 2).sum(axis=1))
    assert 0.02 < np.sqrt((excursion ** 2).mean()) < hs       # rides the orbits: centimetres to decimetres
    assert np.degrees(np.ptp(np.unwrap(heading))) < 30.0      # two minutes unsteered: yawed, not spun
    drift = math.hypot(*(pos[-1] - pos[0])) / 120.0
    assert drift < 0.05                                       # no first-order mean push
    assert np.sqrt((speed ** 2).mean()) < 0.5 * 2 * math.pi / tp * hs   # orbital speeds, not more


def test_wind_load_signs_follow_fossen():
    load = WindLoad(area_frontal_m2=1.0, area_lateral_m2=2.0, length_m=3.0, cx=0.5, cy=0.7, cn=0.1,
                    air_density_kgpm3=1.2)
    # Head wind on a boat heading north (air moving south): pushed back, no side force or moment.
    x, y, n = load.force_body(0.0, 0.0, 0.0, -10.0, 0.0)
    assert x == pytest.approx(-0.5 * 1.2 * 0.5 * 1.0 * 100.0) and y == 0.0 and n == 0.0
    # Wind from starboard (boat heading north, air moving west): pushed to port.
    x, y, n = load.force_body(0.0, 0.0, 0.0, 0.0, -10.0)
    assert y == pytest.approx(-0.5 * 1.2 * 0.7 * 2.0 * 100.0) and abs(x) < 1e-12 and n == 0.0
    # Wind on the starboard bow turns the bow away from it (to port) for c_n > 0.
    x, y, n = load.force_body(0.0, 0.0, 0.0, -7.0, -7.0)
    assert n < 0 and x < 0 and y < 0
    # Moving at the wind's velocity: no relative wind, no load.
    assert load.force_body(3.0, 0.0, math.pi / 2, 0.0, 3.0) == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)


def test_cli_strings_and_validation():
    env = EnvironmentConfig.from_cli(wind="3,90", current="0.2,0", waves="0.2,3,90")
    assert (env.wind_speed_mps, env.wind_from_deg) == (3.0, 90.0)
    assert (env.current_speed_mps, env.current_toward_deg) == (0.2, 0.0)
    assert (env.wave_hs_m, env.wave_tp_s, env.wave_from_deg) == (0.2, 3.0, 90.0)
    assert EnvironmentConfig.from_cli() == EnvironmentConfig()
    with pytest.raises(ValueError, match="--wind: expected SPEED_MPS,FROM_DEG"):
        EnvironmentConfig.from_cli(wind="3")
    with pytest.raises(ValueError, match="--waves"):
        EnvironmentConfig.from_cli(waves="0.2,x,90")
    with pytest.raises(ValueError, match="wind_speed_mps: must be >= 0"):
        EnvironmentConfig.from_cli(wind="-1,0")
    with pytest.raises(ValueError, match="wave_tp_s: must be > 0"):
        EnvironmentConfig(wave_hs_m=0.2, wave_tp_s=0.0)
    with pytest.raises(ValueError, match="current_variation_mps"):
        EnvironmentConfig(current_speed_mps=0.1, current_variation_mps=0.2)
    with pytest.raises(ValueError, match="finite"):
        EnvironmentConfig(wind_from_deg=float("nan"))
