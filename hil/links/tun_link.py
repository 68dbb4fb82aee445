"""An emulated Wi-Fi link at the IP level: every packet routed through a TUN device is held for delay +- jitter,
dropped with a probability, or dropped during an outage, then written back for the kernel to forward on.

For kernels without netem (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"). Run it in the
router namespace between two machines (hil/links/netns_link.py sets up the policy routing that sends the forwarded
traffic through the device); it impairs everything, DDS discovery included, as Wi-Fi would.

    python -m hil.links.tun_link --dev tl0 [--delay-ms 20 --jitter-ms 10 --loss 0.01 --outage 60:3 --stats OUT.json]

Timing contract (pure functions below, unit-tested without a device):
- a packet's delay is drawn uniformly from [delay - jitter, delay + jitter] ms (clipped at 0);
- packets are NOT reordered: Wi-Fi's link layer retries a frame rather than let a later one overtake it, so a
  packet leaves no earlier than the one before it in the same direction (source, destination address pair);
  with jitter this adds a little queueing to the drawn delay (the held time, which the counts report, is what
  the packet really waited);
- a packet is lost with probability `loss` (independently of the others);
- during an outage (start_s, length_s, counted from the link's start) every packet is lost.

With --rt-priority it runs under SCHED_FIFO (it only blocks in select(), so it cannot starve the machine).
On SIGINT or SIGTERM it stops, prints one JSON line of counts (packets, dropped by loss, dropped by outage,
forwarded, held time p50/p99/max in ms) and writes it to --stats when given. Stdlib only.
"""
from __future__ import annotations

import argparse
import fcntl
import heapq
import json
import math
import os
import random
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, Optional

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
MAX_PACKET = 65_535


@dataclass(frozen=True)
class TunLinkSpec:
    """delay_ms and jitter_ms >= 0 [ms]; loss in [0, 1]; outages ((start_s, length_s), ...) from the link's start."""
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    outages: tuple = field(default_factory=tuple)

    def __post_init__(self):
        if not (self.delay_ms >= 0 and self.jitter_ms >= 0 and 0.0 <= self.loss <= 1.0):
            raise ValueError(f"link: delay_ms and jitter_ms must be >= 0 and loss in [0, 1] (got {self})")
        for start_s, length_s in self.outages:
            if not (start_s >= 0 and length_s > 0):
                raise ValueError(f"link outage ({start_s}, {length_s}): start must be >= 0 s, length > 0 s")


def in_outage(t_s: float, outages) -> bool:
    """True when t_s [s from the link's start] falls in [start_s, start_s + length_s) of an outage."""
    return any(start <= t_s < start + length for start, length in outages)


def draw_delay_s(rng: random.Random, spec: TunLinkSpec) -> float:
    """One packet's drawn delay [s]: uniform in [delay - jitter, delay + jitter] ms, never below 0."""
    return max(0.0, (spec.delay_ms + rng.uniform(-spec.jitter_ms, spec.jitter_ms)) / 1e3)


def release_time_s(arrival_s: float, drawn_delay_s: float, previous_release_s: Optional[float]) -> float:
    """When a packet leaves [s]: its arrival plus its drawn delay, but not before the previous packet of its
    direction (no reordering)."""
    t = arrival_s + drawn_delay_s
    return t if previous_release_s is None or t >= previous_release_s else previous_release_s


class LinkSchedule:
    """Decides each packet's fate: None (dropped) or the time [s] to write it back. `key` names its direction."""

    def __init__(self, spec: TunLinkSpec, seed: Optional[int] = None, start_s: float = 0.0):
        self.spec = spec
        self.rng = random.Random(seed)
        self.start_s = start_s
        self._last_release: dict = {}
        self.counts = {"packets": 0, "dropped_loss": 0, "dropped_outage": 0, "forwarded": 0}

    def admit(self, arrival_s: float, key) -> Optional[float]:
        self.counts["packets"] += 1
        if in_outage(arrival_s - self.start_s, self.spec.outages):
            self.counts["dropped_outage"] += 1
            return None
        if self.spec.loss > 0.0 and self.rng.random() < self.spec.loss:
            self.counts["dropped_loss"] += 1
            return None
        t = release_time_s(arrival_s, draw_delay_s(self.rng, self.spec), self._last_release.get(key))
        self._last_release[key] = t
        return t


def percentile_ms(held_s: list, q: float) -> Optional[float]:
    """Nearest-rank percentile q (0-100] of held times [s], in ms; None when there are none."""
    if not held_s:
        return None
    v = sorted(held_s)
    return round(1e3 * v[min(len(v) - 1, max(0, int(math.ceil(q / 100.0 * len(v))) - 1))], 3)


def direction_key(packet: bytes):
    """(source, destination) IPv4 addresses of a packet, or its IP version for anything else."""
    if len(packet) >= 20 and packet[0] >> 4 == 4:
        return packet[12:16], packet[16:20]
    return packet[:1]


def open_tun(name: str) -> int:
    """Attach to (or create) TUN device `name` without packet info; returns its file descriptor."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    os.set_blocking(fd, False)
    return fd


def run(fd: int, spec: TunLinkSpec, seed: Optional[int] = None, stop_fd: Optional[int] = None) -> dict:
    """Relay packets on `fd` until `stop_fd` becomes readable; returns the counts."""
    clock = time.monotonic
    sched = LinkSchedule(spec, seed, start_s=clock())
    queue: list = []                  # (release_s, seq, arrival_s, packet)
    held_s: list = []
    seq = 0
    watch = [fd] + ([stop_fd] if stop_fd is not None else [])
    while True:
        timeout = None if not queue else max(0.0, queue[0][0] - clock())
        readable, _, _ = select.select(watch, [], [], timeout)
        if stop_fd is not None and stop_fd in readable:
            break
        if fd in readable:
            while True:
                try:
                    pkt = os.read(fd, MAX_PACKET)
                except BlockingIOError:
                    break
                now = clock()
                t = sched.admit(now, direction_key(pkt))
                if t is not None:
                    heapq.heappush(queue, (t, seq, now, pkt))
                    seq += 1
        now = clock()
        while queue and queue[0][0] <= now:
            _, _, arrived, pkt = heapq.heappop(queue)
            try:
                os.write(fd, pkt)
                sched.counts["forwarded"] += 1
                held_s.append(now - arrived)
            except OSError:           # the kernel refused it (e.g. no route): a packet the link lost
                sched.counts["dropped_loss"] += 1
    out: Dict[str, Optional[float]] = dict(sched.counts)
    out["in_flight_at_stop"] = len(queue)
    out.update({"held_p50_ms": percentile_ms(held_s, 50), "held_p99_ms": percentile_ms(held_s, 99),
                "held_max_ms": percentile_ms(held_s, 100)})
    return out


def parse_outage(text: str) -> tuple:
    """'START_S:LENGTH_S' -> (start_s, length_s)."""
    try:
        start, length = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"outage {text!r}: expected START_S:LENGTH_S, e.g. 60:3") from None
    return start, length


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dev", required=True, help="TUN device name (created if absent)")
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--loss", type=float, default=0.0, help="probability a packet is lost, 0..1")
    p.add_argument("--outage", type=parse_outage, action="append", default=[],
                   help="START_S:LENGTH_S from the link's start (repeatable)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--stats", help="also write the counts to this JSON file on exit")
    p.add_argument("--rt-priority", type=int, metavar="N",
                   help="run under SCHED_FIFO priority N (1-99): the link's own hold times then do not grow with "
                        "the machine's load (the bench's processes compete for the CPU; a Wi-Fi link does not)")
    args = p.parse_args(argv)
    try:
        spec = TunLinkSpec(args.delay_ms, args.jitter_ms, args.loss, tuple(args.outage))
    except ValueError as e:
        p.error(str(e))
    if not 0 < len(args.dev.encode()) <= 15 or "/" in args.dev or any(c.isspace() for c in args.dev):
        p.error(f"--dev {args.dev!r}: a network device name is 1 to 15 characters, no '/' or spaces")
    try:
        fd = open_tun(args.dev)
    except OSError as e:
        print(f"error: cannot open TUN device {args.dev!r}: {e} (needs CAP_NET_ADMIN and /dev/net/tun)",
              file=sys.stderr)
        return 2
    if args.rt_priority is not None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
        except (OSError, ValueError) as e:
            print(f"warning: --rt-priority {args.rt_priority}: {e}; running at normal priority", file=sys.stderr)
    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_w, False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    signal.set_wakeup_fd(stop_w)
    print(f"tun link up on {args.dev}: {spec}", flush=True)
    try:
        counts = run(fd, spec, args.seed, stop_fd=stop_r)
    finally:
        os.close(fd)
    line = json.dumps(counts)
    print(line, flush=True)
    if args.stats:
        with open(args.stats, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
