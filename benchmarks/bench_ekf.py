"""Navigation EKF benchmark: cost per cycle and accuracy against the built-in plant.

    /work/venv/bin/python benchmarks/bench_ekf.py [--quick] [--seeds N]

Timing: the microseconds of one predict + update (one 50 Hz cycle carrying gyro, magnetometer and a GNSS
fix), and the average cost per 50 Hz cycle over a simulated run (what the control loop pays).

Accuracy: the plant (hil/sim/plant.py) and the typed sensor models (hil/sim/sensor_models.py) with the EKF in an
open loop: a simple heading/speed controller that reads the TRUE state (this harness measures estimation,
not control) drives the boat through straight legs and 90-degree turns. Reported per scenario:
raw-GNSS MAE / EKF MAE (horizontal error magnitude, GNSS measured at its fixes, EKF at every cycle), RMS
of both, the largest step of the estimate between consecutive cycles beyond the boat's own motion, and
for the outage scenario the error at the end of a 30 s outage and the largest step when GNSS returns.
The lead's `autopilot sim` runs the same targets closed loop; these figures are the estimator's own.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autopilot.vocab.angles import wrap_pi  # noqa: E402
from autopilot.vocab.config import load_vessel  # noqa: E402
from autopilot.vocab.geodesy import LocalFrame  # noqa: E402
from autopilot.vocab.types import GpsFix, ThrustCommand  # noqa: E402
from estimation.navekf.ekf import NavigationEKF  # noqa: E402
from hil.sim.environment import EnvironmentConfig  # noqa: E402
from hil.sim.plant import Plant  # noqa: E402
from hil.sim.sensor_models import TypedSensorSuite  # noqa: E402


@dataclass
class Scenario:
    name: str
    vessel: str
    speed_mps: float
    legs: list                        # [(heading_deg, duration_s), ...]
    gps_rate_hz: float = 1.0
    gps_noise: str = "white"
    env: EnvironmentConfig = field(default_factory=EnvironmentConfig)
    outage: tuple | None = None       # (start_s, duration_s)
    jump: tuple | None = None         # (time_s, north_m, east_m) added to one fix
    seed: int = 1
    loop_hz: float = 50.0


@dataclass
class Result:
    name: str
    gps_mae_m: float
    ekf_mae_m: float
    gps_rms_m: float
    ekf_rms_m: float
    max_step_m: float                 # largest |delta(est - truth)| between consecutive cycles (GNSS healthy)
    heading_rms_deg: float
    outage_end_err_m: float = math.nan
    outage_return_step_m: float = math.nan
    jump_step_m: float = math.nan
    gps_rejected: int = 0
    us_per_cycle: float = 0.0

    @property
    def ratio(self) -> float:
        return self.gps_mae_m / self.ekf_mae_m


def _controller(vessel, truth, psi_d, u_d):
    """Crude truth-fed heading and speed controller: returns per-thruster thrust [N]."""
    h = vessel.hull
    m33 = h.iz_kgm2 - h.n_rdot
    m11 = h.mass_kg - h.x_udot
    e = wrap_pi(psi_d - truth.heading_rad)
    wn = 0.8 if h.length_m < 2 else 0.5
    yaw = m33 * (wn * wn * e - 2.0 * wn * truth.yaw_rate_rps) - h.n_r * truth.yaw_rate_rps
    u = truth.surge_mps
    surge = -h.x_u * u_d - h.x_uu * u_d * abs(u_d) + m11 * 0.5 * (u_d - u)
    ys = [t.y_m for t in vessel.thrusters]
    n = len(ys)
    # allocate: sum T = surge, -sum y T = yaw (split evenly per side)
    arm = sum(abs(y) for y in ys)
    return tuple(surge / n - yaw * math.copysign(1.0, y) / arm for y in ys)


def run(sc: Scenario) -> Result:
    vessel = load_vessel(sc.vessel)
    frame = LocalFrame(51.11, 17.06)
    psi0 = math.radians(sc.legs[0][0])
    plant = Plant(vessel, sc.env, sc.seed, 0.0, 0.0, psi0, surge_mps=sc.speed_mps)
    sensors = TypedSensorSuite(vessel, frame, sc.seed, gps_noise=sc.gps_noise, gps_rate_hz=sc.gps_rate_hz)
    ekf = NavigationEKF(vessel, frame)
    dt = 1.0 / sc.loop_hz
    total = sum(d for _, d in sc.legs)
    ends = np.cumsum([d for _, d in sc.legs])
    thrust = (0.0,) * len(vessel.thrusters)
    gps_err, est_err, psi_err, steps = [], [], [], []
    prev = None
    outage_end_err = return_step = jump_step = math.nan
    busy = 0.0
    jump_done = False
    k = 0
    t = 0.0
    while t < total:
        k += 1
        t = k * dt
        truth = plant.step_to(t, thrust)
        batch = sensors.sample(truth)
        in_outage = sc.outage is not None and sc.outage[0] <= t < sc.outage[0] + sc.outage[1]
        if batch.gps:
            if in_outage:
                batch.gps = []
            else:
                gps_err.extend(sensors.gps_truth_errors_m)
                if sc.jump is not None and not jump_done and t >= sc.jump[0]:
                    fix = batch.gps[0]
                    n, e = frame.to_ned(fix.lat_deg, fix.lon_deg)
                    lat, lon = frame.to_wgs84(n + sc.jump[1], e + sc.jump[2])
                    batch.gps[0] = GpsFix(**{**fix.__dict__, "lat_deg": lat, "lon_deg": lon})
                    jump_done = True
                    jump_k = k
        t0 = time.perf_counter()
        nav = ekf.step(t, batch, ThrustCommand(thrust))
        busy += time.perf_counter() - t0
        leg = int(np.searchsorted(ends, t, side="right"))
        psi_d = math.radians(sc.legs[min(leg, len(sc.legs) - 1)][0])
        thrust = _controller(vessel, truth, psi_d, sc.speed_mps)
        if not nav.valid:
            prev = None
            continue
        en, ee = nav.north_m - truth.north_m, nav.east_m - truth.east_m
        err = math.hypot(en, ee)
        est_err.append(err)
        psi_err.append(wrap_pi(nav.heading_rad - truth.heading_rad))
        if prev is not None:
            step = math.hypot(en - prev[0], ee - prev[1])
            returned = sc.outage is not None and sc.outage[0] + sc.outage[1] <= t < sc.outage[0] + sc.outage[1] + 20
            if sc.jump is not None and jump_done and k - jump_k < 100:
                jump_step = max(step, 0.0 if math.isnan(jump_step) else jump_step)
            elif returned:
                return_step = max(step, 0.0 if math.isnan(return_step) else return_step)
            elif not in_outage:
                steps.append(step)
        if sc.outage is not None and abs(t - (sc.outage[0] + sc.outage[1]) + dt) < dt / 2:
            outage_end_err = err
        prev = (en, ee)
    g = np.array(gps_err)
    e = np.array(est_err)
    h = ekf.health(t)
    heading_rms_deg = math.degrees(float(np.sqrt(np.mean(np.square(psi_err)))))
    return Result(sc.name, float(g.mean()), float(e.mean()), float(np.sqrt((g ** 2).mean())),
                  float(np.sqrt((e ** 2).mean())), float(max(steps)), heading_rms_deg,
                  outage_end_err, return_step, jump_step, h.gps_rejected, busy / k * 1e6)


def scenarios(seed: int) -> list:
    square = [(0, 40), (90, 40), (180, 40), (270, 40)] * 2
    current = EnvironmentConfig(current_speed_mps=0.2, current_toward_deg=0.0)
    return [
        Scenario("wamv straight 10 Hz white", "wamv", 1.5, [(8, 120)], gps_rate_hz=10, seed=seed),
        Scenario("foka square 1 Hz white, 0.2 m/s current", "foka", 0.8, square, gps_rate_hz=1, env=current,
                 seed=seed),
        Scenario("foka square 1 Hz realistic, 0.2 m/s current", "foka", 0.8, square, gps_rate_hz=1,
                 gps_noise="realistic", env=current, seed=seed),
        Scenario("wamv straight 10 Hz realistic", "wamv", 1.5, [(8, 120)], gps_rate_hz=10,
                 gps_noise="realistic", seed=seed),
        Scenario("foka 30 s outage at cruise, 1 Hz", "foka", 0.8, square, gps_rate_hz=1, env=current,
                 outage=(100.0, 30.0), seed=seed),
        Scenario("wamv 30 s outage at cruise, 10 Hz", "wamv", 1.5, [(8, 60), (98, 60)], gps_rate_hz=10,
                 outage=(50.0, 30.0), seed=seed),
        Scenario("foka 20 m jump, 1 Hz", "foka", 0.8, square, gps_rate_hz=1, env=current, jump=(90.0, 20.0, 0.0),
                 seed=seed),
    ]


def bench_timing(n_cycles: int = 20000, rate_hz: float = 10.0) -> dict:
    """Microseconds per 50 Hz EKF cycle on a recorded run (plant + sensors generated first, not timed).

    Sensor rates as on the boat: IMU 119 Hz, magnetometer 40 Hz, GNSS `rate_hz`. Returns the mean over all
    cycles, over cycles carrying a GNSS fix (predict + gyro + heading + GNSS position + velocity updates)
    and over the others (predict + gyro + heading), and the 99th percentile.
    """
    vessel = load_vessel("foka")
    frame = LocalFrame(51.11, 17.06)
    thrust = ThrustCommand((10.0, 12.0))
    plant = Plant(vessel, EnvironmentConfig(), 1, 0.0, 0.0, 0.0, surge_mps=0.8)
    sensors = TypedSensorSuite(vessel, frame, 1, gps_noise="white", gps_rate_hz=rate_hz, imu_rate_hz=119.0,
                               mag_rate_hz=40.0)
    cycles = [(k * 0.02, sensors.sample(plant.step_to(k * 0.02, thrust.thrust_n))) for k in range(1, n_cycles + 1)]
    ekf = NavigationEKF(vessel, frame)
    for t, b in cycles[:100]:                 # warm up (initialisation, first allocations)
        ekf.step(t, b, thrust)
    costs, with_gps = [], []
    clock = time.perf_counter
    for t, b in cycles[100:]:
        t0 = clock()
        ekf.step(t, b, thrust)
        costs.append(clock() - t0)
        with_gps.append(bool(b.gps))
    c = np.array(costs) * 1e6
    g = np.array(with_gps)
    return dict(mean=float(c.mean()), with_gps=float(c[g].mean()), without_gps=float(c[~g].mean()),
                p99=float(np.percentile(c, 99)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="timing only")
    ap.add_argument("--seeds", type=int, default=1, help="accuracy runs per scenario (seeds 1..N)")
    args = ap.parse_args(argv)
    tm = bench_timing(5000 if args.quick else 20000)
    print("EKF cost per 50 Hz cycle (IMU 119 Hz, mag 40 Hz, GNSS 10 Hz):")
    print(f"  cycle with a GNSS fix (predict + gyro + heading + GNSS position + velocity): {tm['with_gps']:6.1f} us")
    print(f"  cycle without GNSS (predict + gyro + heading):                              {tm['without_gps']:6.1f} us")
    print(f"  mean over all cycles {tm['mean']:6.1f} us, 99th percentile {tm['p99']:6.1f} us")
    if args.quick:
        return 0
    print()
    print(f"{'scenario':48s} {'gpsMAE':>7s} {'ekfMAE':>7s} {'ratio':>6s} {'gpsRMS':>7s} {'ekfRMS':>7s} "
          f"{'step':>6s} {'psiRMS':>6s} {'outEnd':>6s} {'retStp':>6s} {'jmpStp':>6s} {'rej':>4s} {'us/cyc':>6s}")
    for seed in range(1, args.seeds + 1):
        for sc in scenarios(seed):
            r = run(sc)
            print(f"{r.name + f' s{seed}':48s} {r.gps_mae_m:7.3f} {r.ekf_mae_m:7.3f} {r.ratio:6.2f} "
                  f"{r.gps_rms_m:7.3f} {r.ekf_rms_m:7.3f} {r.max_step_m:6.3f} {r.heading_rms_deg:6.2f} "
                  f"{r.outage_end_err_m:6.2f} {r.outage_return_step_m:6.3f} {r.jump_step_m:6.3f} "
                  f"{r.gps_rejected:4d} {r.us_per_cycle:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
