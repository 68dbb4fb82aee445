"""Run-log costs: what log_cycle costs the 50 Hz loop, what the writer thread spends per row and per IMU sample,
fsync time, file sizes per hour, and how much a SIGKILL loses.

    /work/venv/bin/python benchmarks/bench_runlog.py [--dir DIR] [--kills N]

DIR should be on the storage the boat logs to (an SD card on the Pi); the default is a temporary directory.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from autopilot.runlog import RunLogger, read_run, state_columns
from autopilot.vocab.types import GpsFix

THRUSTERS = ("left", "right")
ROW = {c: 0.0 for c in state_columns(2)}
ROW.update(mode="AUTO", armed=True, north_m=123.456, east_m=-45.678, lat_deg=51.1101234, lon_deg=17.0601234,
           heading_deg=271.3, surge_mps=0.812, sway_mps=-0.031, yaw_rate_dps=1.7, pos_std_m=0.9,
           heading_ref_deg=270.0, speed_ref_mps=0.8, xte_m=0.42, waypoint_index=3, surge_force_n=11.2,
           yaw_moment_nm=-0.8, gps_age_s=0.3, gnss_fix_quality=1, battery_v=20.7, thrust_n_0=6.1, thrust_n_1=5.2,
           pulse_us_0=1612, pulse_us_1=1598)


def loop_cost(base: Path, rate_hz: float, seconds: float) -> dict:
    """Drive log_cycle like the real 50 Hz loop for `seconds` (wall-clock paced) and time each call."""
    log = RunLogger(base, rate_hz=rate_hz, keep_runs=None, max_total_mb=None, thruster_names=THRUSTERS)
    calls = []
    t_next = time.monotonic()
    k = 0
    while k < seconds * 50:
        t = k * 0.02
        row = dict(ROW, time_s=t, north_m=ROW["north_m"] + 0.01 * k)
        t0 = time.perf_counter_ns()
        log.log_cycle(t, row)
        if k % 50 == 0:
            log.log_gnss(t, GpsFix(t, 51.11, 17.06))
        calls.append(time.perf_counter_ns() - t0)
        k += 1
        t_next += 0.02
        time.sleep(max(0.0, t_next - time.monotonic()))
    log.close()
    us = np.array(calls) / 1e3
    sizes = {f: (log.run_dir / f).stat().st_size for f in ("state.csv", "run.mcap", "events.jsonl")}
    return dict(
        mean_us=us.mean(),
        p99_us=np.percentile(us, 99),
        max_us=us.max(),
        rows=log.rows_logged,
        dropped=log.rows_dropped,
        sync_n=log.sync_count,
        sync_mean_ms=1e3 * log.sync_total_s / max(1, log.sync_count),
        sync_max_ms=1e3 * log.sync_max_s,
        sizes=sizes,
    )


def writer_cost(base: Path, rows: int) -> float:
    """Writer-thread time per row [us]: rows pushed as fast as the writer takes them (non-realtime logger)."""
    log = RunLogger(base, rate_hz=50, keep_runs=None, max_total_mb=None, realtime=False, thruster_names=THRUSTERS)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for k in range(rows):
        log.log_cycle(k * 0.02, dict(ROW, time_s=k * 0.02))
    log.close()
    per_row = log._mcap.stats.message_count / rows
    return 1e6 * (time.process_time() - cpu0) / rows, 1e6 * (time.perf_counter() - t0) / rows, per_row


def sensor_cost(samples: int) -> tuple:
    """run.mcap's imu/data + imu/mag: writer time per sample [us] and bytes per sample (encoded in memory)."""
    import io

    from autopilot.runlog.mcap_log import McapRunWriter
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.types import ImuSample, MagSample
    out = io.BytesIO()
    w = McapRunWriter(out, thruster_names=THRUSTERS, vessel=load_vessel("foka"))
    w.write_path(0, [(0.0, 0.0)])                      # the file's fixed part written first
    base = out.tell()
    imu = [ImuSample(0.01 * k, (0.1, 0.0, -9.81), (0.0, 0.0, 0.01)) for k in range(samples)]
    mag = [MagSample(0.01 * k, (2e-5, 1e-6, 4e-5)) for k in range(samples)]
    t0 = time.perf_counter()
    for s, m in zip(imu, mag):
        w.write_imu(int(s.time_s * 1e9), s)
        w.write_mag(int(m.time_s * 1e9), m)
    dt = time.perf_counter() - t0
    return 1e6 * dt / (2 * samples), (out.tell() - base) / (2 * samples)


KILLED = textwrap.dedent("""
    import sys, time
    from autopilot.runlog import RunLogger, state_columns
    log = RunLogger(sys.argv[1], rate_hz=50, keep_runs=None, max_total_mb=None)
    print(log.run_dir, flush=True)
    row = {c: 1.0 for c in state_columns(2)}
    t_next = time.monotonic()
    while True:
        t = time.time()
        log.log_cycle(t, dict(row, time_s=t))
        t_next += 0.02
        time.sleep(max(0.0, t_next - time.monotonic()))
""")


def kill_loss(base: Path, kills: int) -> list:
    """Seconds of log lost by SIGKILL at a random moment, per trial."""
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(kills):
        p = subprocess.Popen([sys.executable, "-c", KILLED, str(base)], stdout=subprocess.PIPE, text=True)
        run_dir = Path(p.stdout.readline().strip())
        time.sleep(1.5 + rng.uniform(0.0, 1.0))
        t_kill = time.time()
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        losses.append(t_kill - read_run(run_dir)["time_s"][-1])
    return losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="where to write the test runs (default: a temporary directory)")
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each paced loop run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        print(f"run-log benchmark in {base} ({os.uname().machine}, Python {sys.version.split()[0]})")
        for rate in (10.0, 50.0):
            r = loop_cost(base / f"paced{rate:g}", rate, args.seconds)
            per_hour = {k: v / args.seconds * 3600 / 1e6 for k, v in r["sizes"].items()}
            print(f"log_cycle from a 50 Hz loop, logging at {rate:g} Hz: mean {r['mean_us']:.1f} us, "
                  f"p99 {r['p99_us']:.1f} us, max {r['max_us']:.0f} us per call; {r['rows']} rows, "
                  f"{r['dropped']} dropped")
            print(f"  flush+fsync of 3 files every 0.5 s: {r['sync_n']} syncs, mean {r['sync_mean_ms']:.2f} ms, "
                  f"max {r['sync_max_ms']:.2f} ms (writer thread, GIL released)")
            print(f"  size per hour: state.csv {per_hour['state.csv']:.1f} MB, run.mcap {per_hour['run.mcap']:.1f} MB")
        cpu_us, wall_us, per_row = writer_cost(base / "throughput", 5000)
        print(f"writer work per row (CSV line + {per_row:.1f} ROS 2 messages of the live topics): {cpu_us:.0f} us "
              f"CPU, {wall_us:.0f} us wall -> {1e6 / wall_us:.0f} rows/s sustained")
        us, size = sensor_cost(5000)
        print(f"imu/data + imu/mag in run.mcap: {us:.0f} us writer time and {size:.0f} bytes per sample "
              f"-> {119 * 2 * size * 3600 / 1e6:.0f} MB per hour with both at 119 Hz")
        losses = kill_loss(base / "killed", args.kills)
        print(f"SIGKILL at a random moment, 50 Hz log: lost {np.mean(losses):.2f} s on average, "
              f"{max(losses):.2f} s at most ({args.kills} kills)")


if __name__ == "__main__":
    main()
