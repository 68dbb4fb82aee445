"""An emulated Wi-Fi link between two ROS domains: the PC's (simulator) and the Pi's (autopilot).

Nothing crosses between the two domains but what this relay forwards, so a bench on one machine behaves like
two machines joined by a poor link. Each forwarded message is delayed by `delay_ms` +- `jitter_ms` (uniform),
lost with probability `loss`, and dropped during `outages`; order is kept per topic (a DDS reader never takes an
older sample after a newer one). Loss is per message, after DDS: on a topic reliable at both ends DDS would
resend a lost packet, so a lost message there arrives `repair_ms` late instead (an assumed repair time, not a
measured one) and holds up the messages behind it; on a best-effort path (the sensors: the autopilot subscribes
best effort) it is gone. During an outage a reliable topic keeps its last `depth` messages and sends them when
the link returns, as a DDS writer's keep-last history would.

This is a message-level model, not a packet-level one (no fragmentation, no shared queue between topics); for
the packet level see hil/links/tun_link.py. Why: docs/design-notes/simulator-and-rims.md, "HIL links".

    python -m hil.ros.link_relay --config BOAT.yaml --pc-domain 41 --pi-domain 42 --delay-ms 20 --jitter-ms 10 --loss
    0.01
"""
from __future__ import annotations

import argparse
import heapq
import random
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

UP, DOWN = "up", "down"          # Pi -> PC, PC -> Pi


@dataclass(frozen=True)
class LinkSpec:
    """One direction-agnostic link: delay and jitter [ms], loss [0..1], outages [(start_s, duration_s)] counted
    from the first /clock that crosses (the simulation's start), and `drop_first` {"TOPIC": n} or {"TOPIC~TEXT": n}:
    the first n messages of a topic
    (that contain TEXT) are lost, whatever the QoS (a test's fault)."""
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    repair_ms: float = 100.0
    outages: tuple = ()
    drop_first: dict = field(default_factory=dict)
    seed: int = 1

    def __post_init__(self):
        if self.delay_ms < 0 or self.jitter_ms < 0 or self.jitter_ms > self.delay_ms:
            raise ValueError(f"link: need 0 <= jitter_ms <= delay_ms; got {self.delay_ms} +- {self.jitter_ms} ms")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"link: loss must be in [0, 1); got {self.loss}")
        for o in self.outages:
            if len(o) != 2 or o[0] < 0 or o[1] <= 0:
                raise ValueError(f"link: an outage is (start_s >= 0, duration_s > 0); got {o!r}")

    def in_outage(self, t_s: float) -> Optional[float]:
        """The end [s] of the outage covering t_s, else None."""
        for start, dur in self.outages:
            if start <= t_s < start + dur:
                return start + dur
        return None


@dataclass(frozen=True)
class Route:
    topic: str
    msg_type: type
    direction: str          # UP or DOWN
    reliable: bool          # reliable at both ends (a lost message is repaired late)
    latched: bool = False
    is_clock: bool = False  # /clock: the first one starts the outage schedule


def routes_for(cfg, vessel) -> list:
    """What crosses the link for a boat config with a gazebo section: sensors, /clock and commands down; thrust,
    its stamps, link reports, state, events and odometry up."""
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu, JointState, MagneticField, NavSatFix
    from std_msgs.msg import Float64, String

    from autopilot.files.boat import resolve_topic
    ns, g, t = cfg.ros.namespace, cfg.gazebo, cfg.ros.topics
    r = [Route(resolve_topic(ns, g.gnss.topic), NavSatFix, DOWN, False),
         Route(resolve_topic(ns, g.imu.topic), Imu, DOWN, False),
         Route(g.clock_topic, Clock, DOWN, True, is_clock=True),
         Route(resolve_topic(ns, t.command), String, DOWN, True)]
    if g.mag.topic:
        r.append(Route(resolve_topic(ns, g.mag.topic), MagneticField, DOWN, False))
    by_name = {th.name: th for th in g.thrusters}
    r += [Route(resolve_topic(ns, by_name[th.name].topic), Float64, UP, True) for th in vessel.thrusters]
    r += [Route(resolve_topic(ns, g.thrust_stamp_topic), JointState, UP, True),
          Route(resolve_topic(ns, g.link_report_topic), String, UP, True),
          Route(resolve_topic(ns, t.state), String, UP, True, latched=True),
          Route(resolve_topic(ns, t.events), String, UP, True),
          Route(resolve_topic(ns, t.odometry), Odometry, UP, True)]
    return r


class LinkRelay:
    """Forward `routes` between the PC's and the Pi's domain through `link` (one spec for both directions)."""

    DEPTH = 10

    def __init__(self, routes: list, pc_domain: int, pi_domain: int, link: LinkSpec):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from autopilot.ros.qos import command_qos, latched_qos
        self.link = link
        self._rng = random.Random(link.seed)
        self._heap: list = []
        self._seq = 0
        self._cv = threading.Condition()
        self._last_due: dict = {}
        self._held: dict = {}              # topic -> deque of (pub, data) kept through an outage (reliable only)
        self._seen: dict = {}
        self.counts = {"forwarded": 0, "lost": 0, "repaired": 0, "outage_dropped": 0, "outage_held": 0}
        self._stop = threading.Event()
        self._contexts, self._executors, self._nodes = {}, {}, {}
        for side, dom in (("pc", pc_domain), ("pi", pi_domain)):
            c = rclpy.Context()
            rclpy.init(context=c, domain_id=dom)
            n = rclpy.create_node(f"link_relay_{side}", context=c, start_parameter_services=False)
            e = SingleThreadedExecutor(context=c)
            e.add_node(n)
            self._contexts[side], self._nodes[side], self._executors[side] = c, n, e
        self._keep = []
        for r in routes:
            src, dst = ("pi", "pc") if r.direction == UP else ("pc", "pi")
            qos = latched_qos() if r.latched else command_qos(self.DEPTH)
            if not r.reliable:
                from autopilot.ros.qos import sensor_qos
                sub_qos = sensor_qos(self.DEPTH)
            else:
                sub_qos = qos
            pub = self._nodes[dst].create_publisher(r.msg_type, r.topic, qos)
            sub = self._nodes[src].create_subscription(r.msg_type, r.topic,
                                                       lambda data, r=r, pub=pub: self._on_msg(r, pub, data),
                                                       sub_qos, raw=True)
            self._keep += [pub, sub]
        self.t0: Optional[float] = None       # monotonic time of the first /clock forwarded
        self._threads = [threading.Thread(target=self._spin, args=(s,), daemon=True, name=f"relay-{s}")
                         for s in ("pc", "pi")]
        self._threads.append(threading.Thread(target=self._deliver, daemon=True, name="relay-deliver"))
        for th in self._threads:
            th.start()

    # ------------------------------------------------------------------ the link's model
    def _on_msg(self, r: Route, pub, data: bytes) -> None:
        with self._cv:           # both sides' spin threads and the delivery thread share the model's state
            self._model(r, pub, data)

    def _dropped_by_test(self, topic: str, data: bytes) -> bool:
        for key, n in self.link.drop_first.items():
            want_topic, _, text = key.partition("~")
            if want_topic != topic or (text and text.encode() not in data):
                continue
            seen = self._seen[key] = self._seen.get(key, 0) + 1
            if seen <= n:
                return True
        return False

    def _model(self, r: Route, pub, data: bytes) -> None:
        now = time.monotonic()
        if self.link.drop_first and self._dropped_by_test(r.topic, data):
            self.counts["lost"] += 1
            return
        if self.t0 is None and r.is_clock:
            self.t0 = now                       # outages count from the simulation's first /clock
        outage_end = None if self.t0 is None else self.link.in_outage(now - self.t0)
        if outage_end is not None:
            assert self.t0 is not None              # outage_end is None without it
            if not r.reliable:
                self.counts["outage_dropped"] += 1
                return
            held = self._held.setdefault(r.topic, deque(maxlen=1 if r.latched else self.DEPTH))
            held.append((pub, data))
            self.counts["outage_held"] += 1
            with self._cv:
                self._push(self.t0 + outage_end, ("flush", r))
            return
        due = now + self._delay_s()
        if self._rng.random() < self.link.loss:
            if not r.reliable:
                self.counts["lost"] += 1
                return
            due += self.link.repair_ms / 1e3
            self.counts["repaired"] += 1
        self._schedule(r, pub, data, due)

    def _delay_s(self) -> float:
        lk = self.link
        return (lk.delay_ms + self._rng.uniform(-lk.jitter_ms, lk.jitter_ms)) / 1e3

    def _schedule(self, r: Route, pub, data, due: float) -> None:
        due = max(due, self._last_due.get(r.topic, 0.0))     # in order per topic
        self._last_due[r.topic] = due
        with self._cv:
            self._push(due, ("send", pub, data))

    def _push(self, due: float, item) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, item))
        self._cv.notify()

    # ------------------------------------------------------------------ threads
    def _spin(self, side: str) -> None:
        e, c = self._executors[side], self._contexts[side]
        while not self._stop.is_set() and c.ok():
            try:
                e.spin_once(timeout_sec=0.05)
            except Exception:
                if self._stop.is_set() or not c.ok():
                    return
                raise

    def _deliver(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = None if not self._heap else self._heap[0][0] - time.monotonic()
                    self._cv.wait(timeout=0.1 if wait is None else min(wait, 0.1))
                    if self._stop.is_set():
                        return
                _, _, item = heapq.heappop(self._heap)
            if item[0] == "send":
                _, pub, data = item
                try:
                    pub.publish(data)
                    self.counts["forwarded"] += 1
                except Exception:
                    if self._stop.is_set():
                        return
                    raise
            else:                                  # an outage ended: what a reliable writer still holds goes out
                r = item[1]
                held = self._held.pop(r.topic, None)
                now = time.monotonic()
                for pub, data in held or ():
                    self._schedule(r, pub, data, now + self._delay_s())

    def close(self) -> None:
        import rclpy
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        for th in self._threads:
            th.join(timeout=2.0)
        for side in ("pc", "pi"):
            self._executors[side].shutdown()
            self._nodes[side].destroy_node()
            rclpy.shutdown(context=self._contexts[side])


def parse_outage(text: str) -> tuple:
    """'START:DURATION' [s] -> (start, duration)."""
    try:
        a, b = text.split(":")
        return float(a), float(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an outage is START_S:DURATION_S, e.g. 20:3; got {text!r}") from None


def main(argv=None) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.schema import ConfigError

    p = argparse.ArgumentParser(prog="python -m hil.ros.link_relay", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the boat config (gazebo section) whose topics cross the link")
    p.add_argument("--pc-domain", type=int, required=True)
    p.add_argument("--pi-domain", type=int, required=True)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--loss", type=float, default=0.0)
    p.add_argument("--repair-ms", type=float, default=100.0, help="assumed DDS repair time of a lost reliable message")
    p.add_argument("--outage", type=parse_outage, action="append", default=[],
                   help="START_S:DURATION_S after the first /clock crosses (repeatable)")
    p.add_argument("--drop-first", action="append", default=[], metavar="TOPIC[~TEXT]=N",
                   help="lose the first N messages of TOPIC (containing TEXT) (a test's fault; repeatable)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    try:
        cfg = load_boat_config(args.config)
        vessel = load_vessel(str(cfg.vessel_path()))
        drop = {}
        for d in args.drop_first:
            topic, _, n = d.rpartition("=")
            if not topic or not n.isdigit():
                raise ValueError(f"--drop-first: give TOPIC=N; got {d!r}")
            drop[topic] = int(n)
        link = LinkSpec(args.delay_ms, args.jitter_ms, args.loss, args.repair_ms, tuple(args.outage), drop,
                        args.seed)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if cfg.gazebo is None:
        print(f"error: {args.config}: has no gazebo section (the relay carries the gazebo bridge's topics)",
              file=sys.stderr)
        return 2
    relay = LinkRelay(routes_for(cfg, vessel), args.pc_domain, args.pi_domain, link)
    print("link relay up", flush=True)
    stop = threading.Event()
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    finally:
        relay.close()
        print(f"link relay: {relay.counts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
