"""Play a run directory's bag (run.mcap) onto the live ROS graph at recorded speed: `autopilot log play`.

Every message goes out as the CDR bytes the log holds (rclpy publishes serialized bytes as they are), on its
recorded topic with the QoS the recording offered (the channel's `offered_qos_profiles`), so a subscriber sees
what the boat published: same names, types, stamps. A topic whose message type is not installed here (tf2_msgs
without a system ROS 2) is skipped and named. Optionally /clock follows the log time, so nodes with
use_sim_time run on the recording's clock. The MCAP is read front to back without its index, so a run cut short
by a crash plays too.

Timing: message k is sent when (log_time_k - log_time_0) / rate seconds of wall time have passed since the
first; `rate` > 0 (2 = twice as fast). A player that falls behind sends at once and does not skip.
"""
from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Optional

import yaml

# looked up by whatever a recording's YAML holds (an unknown value keeps the default)
_RELIABILITY: Dict[object, str] = {1: "reliable", 2: "best_effort"}
_DURABILITY: Dict[object, str] = {1: "transient_local", 2: "volatile"}
CLOCK_PERIOD_NS = 10_000_000          # /clock at most every 10 ms of log time


@dataclass
class PlayStats:
    sent: Dict[str, int] = field(default_factory=dict)        # topic -> messages published
    skipped: Dict[str, str] = field(default_factory=dict)     # topic -> why it was not played
    duration_s: float = 0.0                                   # log time from the first to the last message
    late_max_s: float = 0.0                                   # worst lateness of a send against the schedule
    stopped: bool = False                                     # ended early by `stop` (SIGINT, SIGTERM)


def message_class(type_name: str):
    """The rclpy class of `pkg/msg/Name` (or `pkg/Name`); ImportError when the package is not installed."""
    parts = type_name.split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or not all(parts):
        raise ImportError(f"not a ROS message type name: {type_name!r}")
    module = importlib.import_module(f"{parts[0]}.{parts[1]}")
    try:
        return getattr(module, parts[2])
    except AttributeError:
        raise ImportError(f"{parts[0]}.{parts[1]} has no {parts[2]}") from None


def qos_of_channel(metadata: dict):
    """The QoSProfile a recording's channel offered (rosbag2's offered_qos_profiles YAML); reliable, volatile,
    depth 10 when it says nothing."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    reliability, durability, depth = "reliable", "volatile", 10
    try:
        profiles = yaml.safe_load(metadata.get("offered_qos_profiles", "") or "[]") or []
        if profiles and isinstance(profiles[0], dict):
            p = profiles[0]
            reliability = _RELIABILITY.get(p.get("reliability"), reliability)
            durability = _DURABILITY.get(p.get("durability"), durability)
            depth = max(1, int(p.get("depth") or depth))
    except (yaml.YAMLError, TypeError, ValueError):
        pass
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliability == "reliable" else
                      ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if durability == "transient_local" else
                      DurabilityPolicy.VOLATILE)


def run_mcap(path) -> Path:
    p = Path(path)
    mcap = p / "run.mcap" if p.is_dir() else p
    if not mcap.is_file():
        raise FileNotFoundError(f"{mcap}: no run.mcap to play")
    return mcap


def _declared_channels(mcap: Path) -> dict:
    """{channel id: (topic, type name, metadata)} of every channel in the file: from its summary when it has
    one (a cleanly closed log), else by reading it through (a crashed one)."""
    from mcap.exceptions import McapError
    from mcap.reader import SeekingReader
    from mcap.records import Channel, Schema
    from mcap.stream_reader import StreamReader
    try:
        with open(mcap, "rb") as f:
            summary = SeekingReader(f, validate_crcs=False).get_summary()
        if summary is not None and summary.channels:
            return {cid: (ch.topic, summary.schemas[ch.schema_id].name if ch.schema_id in summary.schemas else "",
                          ch.metadata) for cid, ch in summary.channels.items()}
    except (McapError, OSError, ValueError, KeyError, EOFError):
        pass
    schemas, out = {}, {}
    with open(mcap, "rb") as f:
        try:
            for rec in StreamReader(f, skip_magic=False).records:
                if isinstance(rec, Schema):
                    schemas[rec.id] = rec.name
                elif isinstance(rec, Channel):
                    out[rec.id] = (rec.topic, schemas.get(rec.schema_id, ""), rec.metadata)
        except (McapError, EOFError, ValueError):
            pass                               # a crashed file ends mid-record: what came before counts
    return out


def play(node, path, rate: float = 1.0, clock: bool = False, stop: Optional[threading.Event] = None,
         on_message: Optional[Callable[[str, float], None]] = None, sleep=time.sleep,
         monotonic=time.monotonic, discovery_s: float = 1.0) -> PlayStats:
    """Publish the bag at `path` (a run directory or its run.mcap) through `node`; see the module docstring.
    The publishers of the channels the file declares up front are made first and given `discovery_s` to be
    matched by subscribers before the first message goes out. `stop` ends it early; `on_message(topic,
    log_time_s)` is called after each send."""
    from mcap.reader import NonSeekingReader
    if not rate > 0.0:
        raise ValueError(f"rate must be > 0, got {rate!r}")
    mcap = run_mcap(path)
    stats = PlayStats()
    pubs: dict = {}
    for cid, (topic, type_name, metadata) in _declared_channels(mcap).items():
        try:
            pubs[cid] = node.create_publisher(message_class(type_name), topic, qos_of_channel(metadata))
        except ImportError as e:
            stats.skipped[topic] = f"{type_name}: {e}"
    if pubs and discovery_s > 0.0:
        sleep(discovery_s)
    clock_pub = None
    if clock:
        from rclpy.qos import QoSProfile
        from rosgraph_msgs.msg import Clock
        clock_pub = node.create_publisher(Clock, "/clock", QoSProfile(depth=10))
    t0_log = t0_wall = None
    last_log = 0
    next_clock = 0
    with open(mcap, "rb") as f:
        for schema, channel, message in NonSeekingReader(f, validate_crcs=False).iter_messages():
            if stop is not None and stop.is_set():
                stats.stopped = True
                break
            topic = channel.topic
            if topic in stats.skipped:
                continue
            pub = pubs.get(channel.id)
            if pub is None:
                type_name = schema.name if schema is not None else ""
                try:
                    cls = message_class(type_name)
                except ImportError as e:
                    stats.skipped[topic] = f"{type_name}: {e}"
                    continue
                pub = pubs[channel.id] = node.create_publisher(cls, topic, qos_of_channel(channel.metadata))
            if t0_log is None:
                t0_log, t0_wall = message.log_time, monotonic()
            assert t0_wall is not None      # set with t0_log at the first message
            due = t0_wall + (message.log_time - t0_log) / 1e9 / rate
            wait = due - monotonic()
            if wait > 0.0:
                sleep(wait)
            else:
                stats.late_max_s = max(stats.late_max_s, -wait)
            if clock_pub is not None and message.log_time >= next_clock:
                from builtin_interfaces.msg import Time
                from rosgraph_msgs.msg import Clock
                ns = message.log_time
                clock_pub.publish(Clock(clock=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))
                next_clock = ns + CLOCK_PERIOD_NS
            pub.publish(bytes(message.data))
            stats.sent[topic] = stats.sent.get(topic, 0) + 1
            last_log = message.log_time
            if on_message is not None:
                on_message(topic, message.log_time / 1e9)
    if t0_log is not None:
        stats.duration_s = (last_log - t0_log) / 1e9
    return stats


def play_in_own_node(path, rate: float = 1.0, clock: bool = False, delay_s: float = 1.0) -> PlayStats:
    """`play` through a node of its own ("autopilot_log_play") on the default context (initialised and shut
    down here). SIGINT and SIGTERM stop it between two messages (PlayStats.stopped), not rclpy's own handlers,
    which would shut the context down under a publish in progress."""
    import rclpy

    from autopilot.runtime.signals import StopOnSignal
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    except ImportError:                 # an rclpy without signal options installs none
        rclpy.init()
    stop = threading.Event()
    signals = StopOnSignal(stop)
    node = None
    try:
        node = rclpy.create_node("autopilot_log_play")
        stats = play(node, path, rate=rate, clock=clock, stop=stop, sleep=stop.wait,
                     discovery_s=max(0.0, delay_s))
        stats.stopped = stats.stopped or stop.is_set()
        return stats
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        signals.close()
