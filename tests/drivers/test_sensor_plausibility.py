"""A sensor that answers but does not measure (issue 11, item 2): detection, no false alarm at rest, and the
boat holding within about half a second when the LSM9DS1's data registers read zero or freeze in AUTO."""
from __future__ import annotations

import random

import pytest

from autopilot.vocab.config import CONFIG_DIR, ImuConfig, MagConfig, load_mission, load_vessel
from drivers.i2c_adapter import SMBusI2C
from drivers.lsm9ds1 import Lsm9ds1Driver
from drivers.sensor_plausibility import OutputWatch
from hil.devices.lsm9ds1_emulator import Lsm9ds1Emulator
from hil.sim.environment import EnvironmentConfig
from hil.sim.faults import parse_fault
from hil.sim.runner import SimOptions, run_sim
from tests.support.imu_motion import Motion

G = 9.80665


def _feed(watch, values, start=0.0, dt=0.01):
    out = None
    for k, v in enumerate(values):
        out = watch.check(start + k * dt, v)
    return out


def test_all_zero_is_refused_at_once():
    assert OutputWatch().check(0.0, (0.0,) * 6) == "all-zero output"


def test_frozen_output_is_refused_after_a_few_identical_reads_and_a_noisy_one_never():
    frozen = [(0.01, -0.02, -9.79, 0.001, 0.0, -0.002)] * 6
    assert "frozen" in _feed(OutputWatch(), frozen)
    rng = random.Random(1)
    at_rest = [(rng.gauss(0, 0.02), rng.gauss(0, 0.02), -G + rng.gauss(0, 0.02), rng.gauss(0, 0.002),
                rng.gauss(0, 0.002), rng.gauss(0, 0.002)) for _ in range(3000)]
    w = OutputWatch(magnitude_range=(0.5 * G, 1.5 * G))
    assert all(w.check(0.01 * k, v) is None for k, v in enumerate(at_rest))


def test_a_loop_faster_than_the_chip_is_not_frozen():
    """Repeats of one sample for a few reads (the loop outruns the chip's output rate) stay below the time floor."""
    reads = []
    for k in range(60):
        reads += [(0.1 * k, 0.0, -G, 0.0, 0.0, 0.001 * k)] * 4        # each sample read four times at 200 Hz
    w = OutputWatch()
    assert all(w.check(0.005 * i, v) is None for i, v in enumerate(reads))


def test_saturation_and_an_accelerometer_far_from_1_g_are_refused():
    fs = (4 * G,) * 3 + (4.9,) * 3
    assert "full scale" in _feed(OutputWatch(full_scale=fs), [(4 * G, 0.1 * k, -G, 0, 0, 0) for k in range(6)])
    w = OutputWatch(magnitude_range=(0.5 * G, 1.5 * G), magnitude_window=10)
    assert "magnitude" in _feed(w, [(0.001 * k, 0.0, -0.1, 0.0, 0.0, 0.001 * k) for k in range(40)])


def test_the_driver_on_a_noisy_chip_at_rest_flags_nothing_and_on_a_zeroed_one_goes_stale():
    imu_cfg, mag_cfg = ImuConfig(), MagConfig()
    emu = Lsm9ds1Emulator(imu_cfg, mag_cfg, seed=3)
    clock = {"t": 0.0}
    emu.update(0.0, Motion(heading_rad=0.5, yaw_rate_rps=0.0))
    driver = Lsm9ds1Driver(imu_cfg, mag_cfg, i2c=SMBusI2C(1, bus=emu.smbus()), clock=lambda: clock["t"],
                           sleep=emu.advance, gyro_bias_samples=5)
    driver.start()
    t = 1.0
    for _ in range(500):                                   # ten seconds on the dock at 50 Hz
        t += 0.02
        clock["t"] = t
        emu.update(t, Motion(heading_rad=0.5, yaw_rate_rps=0.0))
        imu, _ = driver.read(t)
        assert not imu.stale
    assert driver.stats.implausible == 0
    emu.set_data_fault("zero")
    t += 0.02
    emu.update(t, Motion(heading_rad=0.5, yaw_rate_rps=0.0))
    imu, _ = driver.read(t)
    assert imu.stale and driver.stats.implausible == 1 and "all-zero" in driver.stats.last_error
    emu.set_data_fault(None)
    for _ in range(30):
        t += 0.02
        clock["t"] = t
        emu.update(t, Motion(heading_rad=0.5, yaw_rate_rps=0.0))
        imu, _ = driver.read(t)
    assert not imu.stale                                   # alive again: trusted again


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["imu-zero", "imu-frozen"])
def test_a_dead_imu_that_still_answers_holds_the_boat_within_about_half_a_second(kind):
    env = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=90, wind_speed_mps=3.0, wind_from_deg=45)
    res = run_sim(load_vessel("foka"), load_mission(CONFIG_DIR / "missions/demo.yaml"),
                  SimOptions(seed=1, env=env, gps_noise="white", duration_s=75.0,
                             faults=(parse_fault(f"{kind}@60"),)))
    holds = [e for e in res.events if e.kind == "failsafe" and e.action == "hold"]
    assert holds and holds[0].failsafe == "imu-loss"
    assert 60.0 < holds[0].time_s <= 60.5                 # acts within 0.5 s of the fault
    assert res.report["final_mode"] == "HOLD"
