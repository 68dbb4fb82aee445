"""Does a flood on a MAVLink port disturb the control loop? The boat runtime (`autopilot run`'s loop, backend sim,
FOKA at 50 Hz) with its MAVLink server in one process, as on the boat (links udpin and tcpin on 127.0.0.1); the
flood in another process: random bytes at `--rate` MB/s to each port, in pieces of 1-8 KB.

Two phases, each `--phase-s` long: no flood, then the flood. For each it prints the loop's cycle cost and its
start-to-start interval (p50 / p99 / max in ms), the missed deadlines as the overrun failsafe counts them (a
cycle `failsafe.overrun.late_s` late, 20 ms by default) and whether the overrun failsafe was active at the end
of the phase; what the server parsed and how often a link's budget ran out; and how much the process grew.

    python benchmarks/bench_mavlink_flood.py [--phase-s 15] [--rate 2.5]
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from loop_timing import CycleRecorder, pct_ms  # noqa: E402  (benchmarks/ is this script's folder)

REPO = Path(__file__).resolve().parents[1]


def flood_main(kind: str, port: int, rate_bps: float, seconds: float) -> None:
    """The flood process: random bytes to 127.0.0.1:port (udp or tcp) at about rate_bps for `seconds`; a TCP
    piece the boat does not take at once is dropped, so the offered rate holds whatever the boat reads."""
    blob = os.urandom(1 << 20)
    if kind == "tcp":
        sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        sock.setblocking(False)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0, offered, taken, k = time.monotonic(), 0, 0, 0
    while time.monotonic() - t0 < seconds:
        size = 1024 + (k * 2731) % 7168
        start = (k * 7919) % (len(blob) - size)
        try:
            if kind == "tcp":
                taken += sock.send(blob[start:start + size])
            else:
                taken += sock.sendto(blob[start:start + size], ("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            if kind == "tcp":
                break
        offered += size
        k += 1
        ahead = offered / rate_bps - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    dt = time.monotonic() - t0
    print(f"{kind}: offered {offered / dt / 1e6:.2f} MB/s, the socket took {taken / dt / 1e6:.2f} MB/s", flush=True)


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb() -> float:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phase-s", type=float, default=15.0)
    ap.add_argument("--rate", type=float, default=2.5, help="MB/s offered to each of the two ports")
    ap.add_argument("--flood", nargs=4, metavar=("KIND", "PORT", "RATE", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.flood:
        kind, port, rate, seconds = args.flood
        flood_main(kind, int(port), float(rate), float(seconds))
        return

    from autopilot.cli.stand_ins import register_all
    from autopilot.files.boat import BoatConfig
    from autopilot.mavlink.server import LoopCalls, MavlinkServer
    from autopilot.runtime.boat_runtime import BoatRuntime
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import build

    register_all()
    vessel = load_vessel("foka")
    mission = load_mission(REPO / "tests" / "data" / "mavlink_pond.yaml")
    udp_port, tcp_port = _free_port(socket.SOCK_DGRAM), _free_port(socket.SOCK_STREAM)
    cfg = build(BoatConfig, {"vessel": "foka", "backend": "sim", "mavlink": {
        "links": [f"udpin:127.0.0.1:{udp_port}", f"tcpin:127.0.0.1:{tcp_port}"]}}, "bench")
    runtime = BoatRuntime(cfg, vessel, mission, now_ns=time.monotonic_ns)
    rec = CycleRecorder(runtime)
    runtime.observers.append(rec)
    runtime.loop_calls = LoopCalls()
    server = MavlinkServer(cfg.mavlink, runtime.desk, runtime.loop_calls)
    runtime.start_loop()
    server.start()
    held: dict = {}
    floods: list = []
    try:
        time.sleep(3.0)                                 # the estimate converges; not measured
        rec.phase = "no flood"
        time.sleep(args.phase_s)
        held["no flood"] = "overrun" in runtime.autopilot.failsafe.active
        rss0 = _rss_mb()
        floods = [subprocess.Popen([sys.executable, __file__, "--flood", kind, str(port), str(args.rate * 1e6),
                                    str(args.phase_s + 1.0)], stdout=subprocess.PIPE, text=True, cwd=REPO)
                  for kind, port in (("udp", udp_port), ("tcp", tcp_port))]
        rec.phase = "(flood starts)"
        time.sleep(1.0)
        phase = f"flood {2 * args.rate:g} MB/s"
        rec.phase = phase
        time.sleep(args.phase_s)
        held[phase] = "overrun" in runtime.autopilot.failsafe.active
        grown_mb = _rss_mb() - rss0
        rec.phase = "(end)"
        outs = [p.communicate(timeout=30)[0].strip() for p in floods]
    finally:
        for p in floods:
            if p.poll() is None:
                p.kill()
        server.stop()
        runtime.stop("benchmark over")
        runtime.close()
    period = 1.0 / vessel.control.loop_rate_hz
    late_s = vessel.failsafe.overrun.late_s
    print(f"loop {vessel.control.loop_rate_hz:g} Hz (period {1e3 * period:.0f} ms), phases of {args.phase_s:g} s; "
          f"a missed deadline is a cycle {1e3 * late_s:.0f} ms late")
    for line in outs:
        print(f"flood {line}")
    print(f"the boat's process grew by {grown_mb:.1f} MB during the flood")
    budgets = getattr(server, "budgets", [])
    print(f"server: {server.stats['received']} messages parsed ({server.stats['bad_data']} bad data)"
          + (", budget spent " + ", ".join(f"{b.shut_count} times on {b.name}" for b in budgets) if budgets else
             ", no input budget"))
    print(f"{'phase':18s} {'cycles':>6s} {'cost p50':>9s} {'p99':>7s} {'max':>7s} {'interval p50':>13s} {'p99':>7s} "
          f"{'max':>7s} {'missed':>6s} {'held':>5s}")
    for phase in ("no flood", f"flood {2 * args.rate:g} MB/s"):
        rows = [r for r in rec.rows if r[0] == phase]
        cost = [r[1] for r in rows]
        iv = [r[2] for r in rows if r[2] is not None]
        missed = sum(1 for c, i in zip(cost, iv) if max(c, i) - period >= late_s)
        print(f"{phase:18s} {len(rows):6d} {pct_ms(cost, 50):8.2f}ms {pct_ms(cost, 99):6.2f} {1e3 * max(cost):7.2f} "
              f"{pct_ms(iv, 50):12.2f}ms {pct_ms(iv, 99):6.2f} {1e3 * max(iv):7.2f} {missed:6d} "
              f"{'yes' if held.get(phase) else 'no':>5s}")


if __name__ == "__main__":
    main()
