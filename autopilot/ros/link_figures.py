"""Honest figures for a HIL link: sensor->thrust latency from stamps, and message loss per topic by stamp.

Latency: the simulator notes the wall time [ns] at which it published each sensor stamp (the last of the
messages carrying it); the autopilot's gazebo
backend sends, with each cycle's thrust, the stamp of the newest sensor sample that cycle consumed
(`thrust_stamp_topic`). The latency of a stamp is the DDS reception time of the FIRST thrust carrying it minus
the wall time it was published: two link crossings plus the autopilot's queueing and cycle. It does not depend
on the simulator's step (a thrust arriving after the next step is still credited to its own stamp). Both times
are taken on the simulator's machine, so no clock offset enters it.

Loss: both sides count the messages of each topic by stamp, so a count up to a stamp that is well in the past
(`settled_upto`) does not include messages still in flight. The autopilot side reports its counts on
`link_report_topic`; the simulator compares them with what it published up to the same stamp.

Clock offset (the autopilot's machine minus the simulator's): DDS stamps each message with the writer's clock at
sending and the reader's at reception. The smallest (reception - source) simulator->autopilot is offset + the
shortest delay down, the smallest autopilot->simulator is -offset + the shortest delay up; half their difference
is the offset, exact when the shortest delays are equal (NTP's assumption). Latency needs no offset (both of its
times are taken on the simulator's machine); the offset says whether the two machines' clocks agree, which
signed commands (max_age_s) and log comparisons need.

Lockstep cost (`lockstep_breakdown_ms`): per step, the simulator's own work and its wait for the answer; the
wait is a round trip, so a link bounds lockstep's speed whatever the CPU.
"""
from __future__ import annotations

import bisect
import math
from typing import Optional

NS = 1_000_000_000
SETTLE_S = 1.0      # counts are reported up to this long before the newest stamp: later ones may be in flight


class StampCounts:
    """Messages per topic counted by stamp, settled incrementally (bounded memory for a long run on the boat)."""

    def __init__(self) -> None:
        self._pending: dict = {}        # topic -> [stamp_ns] not settled yet
        self._settled: dict = {}        # topic -> messages with stamp <= the last settle point
        self.first_ns: dict = {}        # topic -> the first stamp counted (loss is counted from there)
        self.newest_ns: Optional[int] = None

    def add(self, topic: str, stamp_ns: int) -> None:
        self._pending.setdefault(topic, []).append(stamp_ns)
        self._settled.setdefault(topic, 0)
        self.first_ns.setdefault(topic, stamp_ns)
        if self.newest_ns is None or stamp_ns > self.newest_ns:
            self.newest_ns = stamp_ns

    def settle(self, upto_ns: int) -> dict:
        """Cumulative counts of messages with stamp <= upto_ns (call with a non-decreasing upto_ns)."""
        for topic, stamps in self._pending.items():
            keep = [s for s in stamps if s > upto_ns]
            self._settled[topic] += len(stamps) - len(keep)
            self._pending[topic] = keep
        return dict(self._settled)


class PublishedStamps:
    """The simulator's side: every stamp published per topic (a bench run is minutes: kept whole)."""

    def __init__(self) -> None:
        self._stamps: dict = {}         # topic -> sorted stamps [ns] (published in stamp order)

    def add(self, topic: str, stamp_ns: int) -> None:
        self._stamps.setdefault(topic, []).append(stamp_ns)

    def count_upto(self, topic: str, upto_ns: int, from_ns: Optional[int] = None) -> int:
        """Messages published with from_ns <= stamp <= upto_ns."""
        stamps = self._stamps.get(topic, [])
        lo = bisect.bisect_left(stamps, from_ns) if from_ns is not None else 0
        return max(0, bisect.bisect_right(stamps, upto_ns) - lo)

    def topics(self) -> list:
        return list(self._stamps)


class StampedLatency:
    """Sensor publish wall time [ns] -> first thrust reception [ns] carrying that stamp."""

    def __init__(self) -> None:
        self._published: dict = {}      # stamp_ns -> wall ns of its latest publication, until answered
        self._answered_stamps: set = set()
        self.latencies_s: list = []
        self.records: list = []         # (stamp_ns, published wall ns, thrust received wall ns) per answered stamp
        self.answered = 0
        self.repeats = 0                # thrust messages whose stamp was already answered (cycles without news)
        self.unknown = 0                # thrust stamps this side never published (a stale or foreign stamp)

    def published(self, stamp_ns: int, wall_ns: int) -> None:
        """A message carrying stamp_ns was handed to DDS at wall_ns. Several sensors share a stamp (the 10 Hz
        magnetometer's and the GNSS's are also IMU stamps): the latest counts, when the stamp's samples are all
        out. Why: docs/design-notes/simulator-and-rims.md, "HIL links"."""
        self._published[stamp_ns] = wall_ns

    def thrust_received(self, stamp_ns: int, recv_wall_ns: int) -> Optional[float]:
        """Credit a thrust to its stamp; returns the latency [s] when this is the stamp's first thrust."""
        sent = self._published.pop(stamp_ns, None)
        if sent is None:
            if stamp_ns in self._answered_stamps:
                self.repeats += 1
            else:
                self.unknown += 1
            return None
        self._answered_stamps.add(stamp_ns)
        lat = (recv_wall_ns - sent) / NS
        self.latencies_s.append(lat)
        self.records.append((stamp_ns, sent, recv_wall_ns))
        self.answered += 1
        return lat

    def write_csv(self, path) -> None:
        """Per answered stamp, in answer order: stamp_ns, published_ns, thrust_received_ns (wall clock, ns) and
        latency_ms: what the percentiles are taken over, for a witness to pair stamp by stamp."""
        with open(path, "w") as f:
            f.write("stamp_ns,published_ns,thrust_received_ns,latency_ms\n")
            for stamp, sent, recv in self.records:
                f.write(f"{stamp},{sent},{recv},{(recv - sent) / 1e6:.6f}\n")

    def unanswered(self, before_ns: Optional[int] = None) -> int:
        """Published stamps no thrust carried (before `before_ns`: later ones may still be answered)."""
        return sum(1 for s in self._published if before_ns is None or s <= before_ns)

    def summary(self) -> dict:
        """p50, p99 and max [ms] (nearest-rank percentiles), with the count they are taken over."""
        lat = sorted(self.latencies_s)

        def pct(q: float) -> float:
            if not lat:
                return float("nan")
            return 1e3 * lat[min(len(lat) - 1, max(0, int(math.ceil(q / 100.0 * len(lat))) - 1))]

        return {"latency_p50_ms": round(pct(50), 3), "latency_p90_ms": round(pct(90), 3),
                "latency_p99_ms": round(pct(99), 3),
                "latency_max_ms": round(1e3 * lat[-1], 3) if lat else float("nan"),
                "latency_samples": len(lat)}


def loss_per_topic(published: PublishedStamps, report: Optional[dict], received: Optional[dict] = None,
                   sent_by_pi: Optional[dict] = None) -> dict:
    """Fraction lost per topic, both directions, from counts up to the autopilot's settled stamp.

    `report`: the autopilot side's last link report ({"upto_ns", "first_ns": {topic: ns}, "rx": {topic: n},
    "tx": {topic: n}}); `received`: this side's counts of what the autopilot sent, settled to the same stamp
    ({topic: n}). A downlink topic counts from the first stamp the autopilot received on it: what was published
    before both ends of the link had matched is not the link's loss."""
    out: dict = {}
    if not report:
        return out
    upto = int(report["upto_ns"])
    first = report.get("first_ns", {})
    for topic, n_rx in report.get("rx", {}).items():
        n_tx = published.count_upto(topic, upto, first.get(topic))
        if n_tx:
            out[topic] = round(max(0.0, 1.0 - n_rx / n_tx), 4)
    for topic, n_tx in report.get("tx", {}).items():
        n_rx = (received or {}).get(topic, 0)
        if n_tx:
            out[topic] = round(max(0.0, 1.0 - n_rx / n_tx), 4)
    return out


def clock_offset_ms(down_min_ns: Optional[int], up_min_ns: Optional[int]) -> Optional[float]:
    """The autopilot machine's clock minus the simulator's [ms] (None until both directions were seen)."""
    if down_min_ns is None or up_min_ns is None:
        return None
    return round((down_min_ns - up_min_ns) / 2e6, 3)


def lockstep_breakdown_ms(step_s: list, wait_s: list, sim_step_s: float) -> dict:
    """Where a lockstep step's wall time goes [ms] (p50, p99 of `step_s`, our step, and `wait_s`, the wait for the
    autopilot's answer) and the real-time factor they allow: each step costs one round trip, so a link of
    D ms each way bounds lockstep at sim_step / (2 D + the rest) whatever the CPU."""
    import numpy as np

    step, wait = np.asarray(step_s), np.asarray(wait_s)
    per_step = float(np.mean(step + wait))
    return {"steps": int(len(wait)), "step_p50": round(1e3 * float(np.percentile(step, 50)), 2),
            "step_p99": round(1e3 * float(np.percentile(step, 99)), 2),
            "wait_p50": round(1e3 * float(np.percentile(wait, 50)), 2),
            "wait_p99": round(1e3 * float(np.percentile(wait, 99)), 2),
            "wait_max": round(1e3 * float(wait.max()), 1), "per_step_mean": round(1e3 * per_step, 2),
            "realtime_factor": round(sim_step_s / per_step, 2) if per_step > 0 else None}
