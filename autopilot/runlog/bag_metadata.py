"""metadata.yaml: what makes a run directory a rosbag2 directory (`ros2 bag info RUN_DIR`, `ros2 bag play`,
rosbags.rosbag2.Reader).

Written in rosbag2's version 5 layout (what ROS 2 Humble records; Iron and Jazzy read it too): storage_identifier
mcap, the MCAP's name in relative_file_paths and files, duration and starting_time [ns], message counts per topic,
and each topic's name, type, serialization_format cdr and offered_qos_profiles as the YAML text rosbag2 embeds.
The same QoS text is in each MCAP channel's metadata (key offered_qos_profiles, as rosbag2's MCAP plugin writes
it), so `autopilot log recover` can rebuild this file from a cut MCAP alone.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

import yaml

from autopilot.ros.interface import QOS

FILE_NAME = "metadata.yaml"
VERSION = 5
_RELIABILITY = {"reliable": 1, "best_effort": 2}          # rmw_qos_reliability_policy_e
_DURABILITY = {"transient_local": 1, "volatile": 2}       # rmw_qos_durability_policy_e
_KEEP_LAST, _LIVELINESS_AUTOMATIC = 1, 1


def offered_qos_yaml(kind: str, depth: int) -> str:
    """The offered_qos_profiles text of one publisher of QoS kind `kind` (autopilot.ros.interface.QOS)."""
    q = QOS[kind]
    zero = {"sec": 0, "nsec": 0}             # rmw's "default" deadline, lifespan and lease (none set)
    profile = {"history": _KEEP_LAST, "depth": int(depth), "reliability": _RELIABILITY[q.reliability],
               "durability": _DURABILITY[q.durability], "deadline": dict(zero), "lifespan": dict(zero),
               "liveliness": _LIVELINESS_AUTOMATIC, "liveliness_lease_duration": dict(zero),
               "avoid_ros_namespace_conventions": False}
    return yaml.safe_dump([profile], sort_keys=False)


@dataclass
class TopicStats:
    """One topic of a bag: name, type (pkg/msg/Name), its offered QoS text and how many messages it has."""

    name: str
    type: str
    offered_qos_profiles: str = ""
    message_count: int = 0


@dataclass
class BagStats:
    """What metadata.yaml summarises; `add` counts a message of a topic at log time t_ns."""

    topics: Dict[str, TopicStats] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0
    message_count: int = 0

    def add(self, topic: str, t_ns: int) -> None:
        self.topics[topic].message_count += 1
        if self.message_count == 0 or t_ns < self.start_ns:
            self.start_ns = t_ns
        self.end_ns = max(self.end_ns, t_ns)
        self.message_count += 1


def metadata_dict(mcap_name: str, stats: BagStats) -> dict:
    duration = stats.end_ns - stats.start_ns if stats.message_count else 0
    topics: List[dict] = [{"topic_metadata": {"name": t.name, "type": t.type, "serialization_format": "cdr",
                                              "offered_qos_profiles": t.offered_qos_profiles},
                           "message_count": t.message_count} for t in stats.topics.values()]
    return {"rosbag2_bagfile_information": {
        "version": VERSION, "storage_identifier": "mcap", "duration": {"nanoseconds": int(duration)},
        "starting_time": {"nanoseconds_since_epoch": int(stats.start_ns)},
        "message_count": int(stats.message_count), "topics_with_message_count": topics,
        "compression_format": "", "compression_mode": "", "relative_file_paths": [mcap_name],
        "files": [{"path": mcap_name, "starting_time": {"nanoseconds_since_epoch": int(stats.start_ns)},
                   "duration": {"nanoseconds": int(duration)}, "message_count": int(stats.message_count)}]}}


def write_metadata(run_dir, mcap_name: str, stats: BagStats) -> Path:
    """Write RUN_DIR/metadata.yaml atomically (temporary file, fsync, rename); returns its path."""
    path = Path(run_dir) / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        yaml.safe_dump(metadata_dict(mcap_name, stats), f, sort_keys=False, width=1000)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path
