"""The control loop while ground stations flood the MAVLink links: cycle cost and cycle interval (p50, p99,
max), overruns, and the telemetry the well-behaved ground station still gets.

The boat is `autopilot run`'s process (BoatProcess, ROS 2 control-loop thread at 50 Hz, sim backend) serving
two links. Phases, each --seconds long:
  quiet:  one ground station at normal rates (1 Hz heartbeat);
  flood:  that station at 10x a normal station's traffic (10 Hz heartbeat, 250 Hz MANUAL_CONTROL, parameter
          and mission lists at 10 Hz), plus a second station on the other link sending garbage, truncated and
          wrong-CRC frames at about 2000 frames/s.

    python benchmarks/bench_mavlink.py [--seconds 20]
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["MAVLINK20"] = "1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(values, q) -> float:
    return float(np.percentile(np.fromiter(values, float), q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()

    import tempfile

    from autopilot.files.boat import load_boat_config
    from autopilot.ros.runner import own_context

    gcs_port, open_port = _free_port(), _free_port()
    tmp = Path(tempfile.mkdtemp())
    cfg_file = tmp / "boat.yaml"
    cfg_file.write_text(f"vessel: foka\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: sim\n"
                        f"ros: {{namespace: /bench_mavlink, nodes: [autopilot]}}\nlogging: {{enabled: false}}\n"
                        f"mavlink: {{links: ['udpout:127.0.0.1:{gcs_port}', 'udpin:127.0.0.1:{open_port}']}}\n")
    cfg = load_boat_config(cfg_file)
    with own_context() as ctx:
        _fly_and_flood(args, cfg, ctx, gcs_port, open_port)


def _fly_and_flood(args, cfg, ctx, gcs_port: int, open_port: int) -> None:
    from autopilot.cli.stand_ins import register_all
    from autopilot.ros.runner import BoatProcess
    from autopilot.runtime.cycle_stats import CycleStats
    from autopilot.vocab.config import load_mission, load_vessel
    from tests.support.mavlink_gcs import Gcs, M

    register_all()

    proc = BoatProcess(cfg, load_vessel("foka"), load_mission(REPO / "config/missions/demo.yaml"), context=ctx)
    proc.serve_mavlink()
    stop = threading.Event()
    spinner = threading.Thread(target=proc.spin, args=(stop,), daemon=True)
    spinner.start()
    node = proc.autopilot
    gcs = Gcs(gcs_port)
    gcs.connect(timeout=30.0)
    assert gcs.set_mode(0).result == M.MAV_RESULT_ACCEPTED
    gcs.until(lambda: gcs.arm().result == M.MAV_RESULT_ACCEPTED, 30.0)

    def flood(until: float) -> None:
        rng = random.Random(1)
        junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        enc = M.MAVLink(None, srcSystem=200, srcComponent=1)
        frames = [enc.heartbeat_encode(M.MAV_TYPE_GCS, 0, 0, 0, 0).pack(enc),
                  enc.param_request_list_encode(1, 1).pack(enc),
                  enc.command_long_encode(1, 1, M.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0).pack(enc)]
        k = 0
        next_t = time.monotonic()
        while time.monotonic() < until:
            k += 1
            gcs.mav.manual_control_send(1, 300, 0, 500, 0, 0)
            if k % 25 == 0:
                gcs.mav.heartbeat_send(M.MAV_TYPE_GCS, M.MAV_AUTOPILOT_INVALID, 0, 0, M.MAV_STATE_ACTIVE)
                gcs.mav.param_request_list_send(1, 1)
                gcs.mav.mission_request_list_send(1, 1, 0)
            for _ in range(8):
                f = bytearray(rng.choice(frames))
                cut = rng.randrange(3)
                if cut == 0:
                    f = f[:rng.randrange(1, len(f))]
                elif cut == 1:
                    f[rng.randrange(len(f))] ^= 0x5A
                else:
                    f = bytearray(rng.randrange(256) for _ in range(rng.randrange(1, 100)))
                junk.sendto(bytes(f), ("127.0.0.1", open_port))
            next_t += 0.004
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        junk.close()

    print(f"{'phase':6s} {'cycles':>6s} {'cost p50':>9s} {'cost p99':>9s} {'cost max':>9s} {'intv p50':>9s} "
          f"{'intv p99':>9s} {'intv max':>9s} {'overruns':>8s} {'telemetry/s':>11s} {'GCS HB/s':>8s}")
    for phase in ("quiet", "flood", "quiet"):
        with node.lock:
            node.stats = CycleStats(node.period_s, window=100000)
        counts = {"n": 0, "hb": 0}
        end = time.monotonic() + args.seconds
        reader_stop = threading.Event()

        def read():
            while not reader_stop.is_set():
                msg = gcs.conn.recv_match(blocking=True, timeout=0.05)
                if msg is not None:
                    counts["n"] += 1
                    counts["hb"] += msg.get_type() == "HEARTBEAT"
        if phase == "flood":
            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            flood(end)
            reader_stop.set()
            reader.join()
        else:
            gcs.send_heartbeats = True
            while time.monotonic() < end:
                msg = gcs.conn.recv_match(blocking=True, timeout=0.05)
                gcs._beat()
                if msg is not None:
                    counts["n"] += 1
                    counts["hb"] += msg.get_type() == "HEARTBEAT"
        with node.lock:
            st = node.stats
            cost = list(st.cost_s)
            intv = list(st.interval_s)
        print(f"{phase:6s} {st.cycles:6d} {1e3 * _pct(cost, 50):8.2f}ms {1e3 * _pct(cost, 99):8.2f}ms "
              f"{1e3 * max(cost):8.2f}ms {1e3 * _pct(intv, 50):8.2f}ms {1e3 * _pct(intv, 99):8.2f}ms "
              f"{1e3 * max(intv):8.2f}ms {st.overruns:8d} {counts['n'] / args.seconds:11.1f} "
              f"{counts['hb'] / args.seconds:8.2f}")
    s = proc.mavlink.stats
    print(f"server: {s['received']} messages received, {s['bad_data']} bad frames dropped, "
          f"{s['handled_errors']} handler errors, {s['commands']} commands; process alive, final mode "
          f"{node.autopilot.mode.name}")
    stop.set()
    proc.wake()
    spinner.join(timeout=5)
    gcs.close()
    proc.stop()


if __name__ == "__main__":
    main()
