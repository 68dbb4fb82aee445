"""ROS 2 figures: the `--transport ros` demo over real DDS, and the composed boat process at 50 Hz.

    python benchmarks/bench_ros.py [--seconds 30] [--skip-demo] [--skip-boat] [--skip-gap] [--pi-factor 5]

1. `autopilot sim config/missions/demo.yaml --vessel foka --transport ros`: the autopilot in its own process
   (gazebo backend, /clock) against the Gazebo stand-in in lockstep. Prints whether the mission completed and the
   end-to-end latency (stand-in publishes a step's sensors -> last thruster command of that step arrives).
2. `autopilot run` with all four nodes (GNSS, IMU, autopilot, diagnostics) on one executor, backend sim, wall
   clock at the vessel's 50 Hz: CPU time per control cycle and resident memory of the whole process, from
   /proc. The sim backend also integrates the plant (100 Hz RK4) and the sensor models, work a boat does not do,
   so the figures are an upper bound for the boat's own loop. A Pi 4 core (Cortex-A72, 1.5 GHz) runs CPython
   roughly --pi-factor times slower than this machine: the Pi-4 idle figure is that scaled estimate, not a Pi
   measurement.
3. The idle-gap effect: the core's Autopilot.step (estimator, guidance, control) in this process on the sim's
   typed sensors, thread CPU per step with 0, 2 and 20 ms of sleep between steps. A 50 Hz loop sleeps ~19 ms
   each cycle; on this KVM guest the caches and predictors go cold in that time, so the same step costs several
   times what it does back to back. A Pi 4 has no hypervisor neighbours but clocks down when idle: which of
   the two figures its cost follows is not known without a Pi.
ROS_DOMAIN_ID is taken from the environment (default: 40 + pid % 50) so runs do not cross-talk.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK        # utime + stime


def memory_mb(pid: int) -> tuple[float, float]:
    text = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024
    hwm = int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) / 1024
    return rss, hwm


def bench_demo(seed: int = 1, weather: bool = False) -> dict:
    """The demo over DDS: the issue's command (calm, default realistic GNSS), or with `weather` the in-process
    threshold run's conditions (wind 3 from 90, current 0.2 toward 0, waves 0.2/3/90, white GNSS)."""
    from autopilot.vocab.config import load_mission, load_vessel
    from hil.ros.sim_transport import run_ros_sim
    from hil.sim.environment import EnvironmentConfig

    env = EnvironmentConfig()
    if weather:
        env = EnvironmentConfig(wind_speed_mps=3, wind_from_deg=90, current_speed_mps=0.2, current_toward_deg=0,
                                wave_hs_m=0.2, wave_tp_s=3, wave_from_deg=90)
    args = SimpleNamespace(seed=seed, gps_noise="white" if weather else "realistic", gps_rate_hz=None,
                           duration=None, realtime=False)
    return run_ros_sim(load_vessel("foka"), load_mission(REPO / "config/missions/demo.yaml"), env, args)


def bench_boat(seconds: float, warmup_s: float = 5.0) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "boat.yaml"
        cfg.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: sim\n"
                       "ros: {namespace: /bench, nodes: [gnss, imu, autopilot, diagnostics]}\n"
                       f"logging: {{dir: {Path(tmp) / 'runs'}}}\n")       # the run log on, as on the boat
        child = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg)],
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(warmup_s)
            if child.poll() is not None:
                raise RuntimeError(child.stdout.read())
            c0, w0 = cpu_seconds(child.pid), time.monotonic()
            time.sleep(seconds)
            c1, w1 = cpu_seconds(child.pid), time.monotonic()
            rss, hwm = memory_mb(child.pid)
        finally:
            sigterm_wall_s = time.time()
            child.send_signal(signal.SIGTERM)          # what systemd sends
            out, _ = child.communicate(timeout=20)
            exit_after_s = time.time() - sigterm_wall_s
    m = re.search(r"(\d+) cycles, cost p50 ([\d.]+) ms p99 ([\d.]+) ms", out)
    stopped = re.search(r"\[INFO\] \[(\d+\.\d+)\] \[[^]]*\]: autopilot node stopping: thrusters at neutral", out)
    cycles = int(m.group(1)) if m else None
    wall, cpu = w1 - w0, c1 - c0
    rate_hz = 50.0
    return {"window_s": round(wall, 2), "cpu_fraction_of_one_core": round(cpu / wall, 4),
            "cpu_per_cycle_ms": round(1e3 * cpu / (wall * rate_hz), 3),
            "core_cycle_cost_p50_ms": float(m.group(2)) if m else None,
            "core_cycle_cost_p99_ms": float(m.group(3)) if m else None,
            "cycles_total": cycles, "rss_mb": round(rss, 1), "peak_rss_mb": round(hwm, 1),
            "sigterm_to_neutral_ms": round(1e3 * (float(stopped.group(1)) - sigterm_wall_s), 1) if stopped else None,
            "sigterm_to_exit_ms": round(1e3 * exit_after_s, 1)}


IMPORT_RSS_SCRIPT = """
import json
def rss_mb():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return round(int(line.split()[1]) / 1024, 1)
out = {'python': rss_mb()}
import numpy, rclpy
out['numpy+rclpy'] = rss_mb()
import filterpy.kalman
out['+filterpy (scipy.linalg, scipy.stats)'] = rss_mb()
import autopilot.ros.runner, autopilot.runlog, estimation.navekf.ekf
import drivers.gnss.l76k, drivers.lsm9ds1, drivers.esc.output
out['+the boat process modules'] = rss_mb()
print(json.dumps(out))
"""


def import_rss() -> dict:
    """Resident memory [MB] of a fresh interpreter after each group of imports (no node, no DDS participant)."""
    r = subprocess.run([sys.executable, "-c", IMPORT_RSS_SCRIPT], cwd=REPO, capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout)


def bench_idle_gap(cycles: int = 1500, warmup: int = 300) -> dict:
    """Thread-CPU per Autopilot.step [us] (mean, p50) at 0, 2 and 20 ms of sleep between steps."""
    import statistics

    from autopilot.guidance.path_following import mission_frame, point_to_ned
    from autopilot.vehicle import Autopilot
    from autopilot.vocab.config import load_mission, load_vessel
    from hil.sim.environment import EnvironmentConfig
    from hil.sim.plant import Plant
    from hil.sim.runner import initial_pose
    from hil.sim.sensor_models import TypedSensorSuite

    vessel, mission = load_vessel("foka"), load_mission(REPO / "config/missions/demo.yaml")
    frame = mission_frame(mission)
    out = {}
    for gap_ms in (0.0, 2.0, 20.0):
        ap = Autopilot(vessel, mission, frame=frame)
        n0, e0, psi0 = initial_pose(mission, frame, [point_to_ned(p, frame) for p in mission.waypoints])
        plant = Plant(vessel, EnvironmentConfig(), 1, n0, e0, psi0)
        sensors = TypedSensorSuite(vessel, frame, 1, gps_noise="white")
        demand, costs = [0.0] * len(vessel.thrusters), []
        for k in range(cycles):
            t = k * 0.02
            batch = sensors.sample(plant.step_to(t, demand))
            if gap_ms:
                time.sleep(gap_ms / 1e3)
            c0 = time.thread_time_ns()
            result = ap.step(t, batch)
            costs.append(time.thread_time_ns() - c0)
            demand = list(result.thrust.thrust_n)
        c = costs[warmup:]
        out[f"gap_{gap_ms:g}ms"] = {"mean_us": round(statistics.mean(c) / 1e3, 1),
                                   "p50_us": round(statistics.median(c) / 1e3, 1)}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=30.0, help="measurement window of the boat process")
    p.add_argument("--pi-factor", type=float, default=5.0, help="assumed CPython slowdown of a Pi 4 core")
    p.add_argument("--skip-demo", action="store_true")
    p.add_argument("--skip-boat", action="store_true")
    p.add_argument("--skip-gap", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", str(40 + os.getpid() % 50))
    with open("/proc/loadavg") as f:
        print(f"machine: {os.cpu_count()} cores, load average {f.read().split()[0]} at start, "
              f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}")
    if not args.skip_demo:
        r = bench_demo()
        keys = ("mission_complete", "waypoints_reached", "waypoints_total", "sim_time_s", "wall_time_s",
                "realtime_factor", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_max_ms",
                "steps", "steps_unanswered", "xte_rms_m", "pos_err_rms_m", "autopilot_process_timing")
        print("demo over DDS (--transport ros):")
        print(json.dumps({k: r.get(k) for k in keys}, indent=2))
        print(f"  target latency_p99_ms <= 5: {'met' if r['latency_p99_ms'] <= 5 else 'NOT met'}")
        print("demo over DDS in the demo weather with white GNSS (the in-process threshold: xte_rms_m <= 0.5):")
        for seed in (1, 2, 3):
            w = bench_demo(seed, weather=True)
            print(f"  seed {seed}: complete {w['mission_complete']}, xte_rms_m {w['xte_rms_m']:.3f}, "
                  f"pos_err_rms_m {w['pos_err_rms_m']:.3f}, latency_p99_ms {w['latency_p99_ms']:.2f}")
    if not args.skip_boat:
        b = bench_boat(args.seconds)
        pi_busy = b["cpu_fraction_of_one_core"] * args.pi_factor
        b["pi4_estimated_idle_pct"] = round(100 * (1 - pi_busy), 1)
        b["rss_after_imports_mb"] = import_rss()
        print("composed boat process (gnss+imu+autopilot+diagnostics, one executor, sim backend, 50 Hz):")
        print(json.dumps(b, indent=2))
        print(f"  target RSS <= 150 MB: {'met' if b['peak_rss_mb'] <= 150 else 'NOT met'}; "
              f"Pi-4 core idle >= 80 % (x{args.pi_factor:g} estimate): "
              f"{'met' if b['pi4_estimated_idle_pct'] >= 80 else 'NOT met'}")
    if not args.skip_gap:
        print("core Autopilot.step, thread CPU per step vs sleep between steps (idle-gap effect):")
        print(json.dumps(bench_idle_gap(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
