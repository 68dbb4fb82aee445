"""run.mcap: the run as ROS 2 messages (Foxglove, `ros2 bag`, the `mcap` tools), written without a ROS install.

Topics (frames per REP-103/105, converted by autopilot.ros.frames; odom is ENU about the mission origin):

    /autopilot/odometry        nav_msgs/msg/Odometry            estimate: pose in odom, twist in base_link (FLU)
    /autopilot/filtered_fix    sensor_msgs/msg/NavSatFix        estimate in WGS84 (Foxglove's map)
    /autopilot/gnss/fix        sensor_msgs/msg/NavSatFix        raw receiver fixes (`RunLogger.log_gnss`)
    /autopilot/setpoint        std_msgs/msg/Float64MultiArray   heading_ref_deg, speed_ref_mps, xte_m,
                                                                waypoint_index (names in the channel metadata)
    /autopilot/wrench          geometry_msgs/msg/WrenchStamped  surge force, yaw moment (base_link FLU)
    /autopilot/thrust          std_msgs/msg/Float64MultiArray   thrust per thruster [N]
    /autopilot/pulse_us        std_msgs/msg/Float64MultiArray   ESC pulse per thruster [us]
    /autopilot/truth/odometry  nav_msgs/msg/Odometry            simulation only: the plant's true pose
    /diagnostics               diagnostic_msgs/msg/DiagnosticArray  the whole state row as key/values, 1 Hz
    /rosout                    rcl_interfaces/msg/Log           events (mode changes, failsafes, warnings)

Crash safety. The file is written *unchunked*: every record goes straight to the output stream, which the
logger flushes and fsyncs about every half second, so after a SIGKILL or a power cut the file holds every
message up to the last flush followed at most by one cut record, and no summary or footer. That is a valid
MCAP data section read front to back: `read_mcap` here and mcap's own `NonSeekingReader` read it (stopping
with EndOfFile at the cut); `mcap.reader.make_reader` and tools that seek to the footer first need it repaired:
`recover_mcap` (`autopilot log recover RUN_DIR`, or the Go CLI's `mcap recover`) rewrites it complete and
indexed. mcap-ros2-support's own Writer always chunks (up to a chunk held in memory and lost on a kill), so
the records are written with mcap's Writer and encoded with mcap-ros2-support's CDR encoder.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterator, List, Optional, Sequence, Tuple

from mcap.exceptions import McapError
from mcap.reader import NonSeekingReader, make_reader
from mcap.records import Attachment, Channel, Footer, Header, Message, Metadata, Schema
from mcap.stream_reader import StreamReader
from mcap.well_known import MessageEncoding, SchemaEncoding
from mcap.writer import CompressionType, IndexType
from mcap.writer import Writer as McapWriter
from mcap_ros2._dynamic import serialize_dynamic
from mcap_ros2.decoder import DecoderFactory

from autopilot.ros import frames
from autopilot.runlog.columns import mode_text
from autopilot.runlog.ros2_schemas import ros2_name, schema_text

LIBRARY = "boat-autopilot runlog"
SETPOINT_FIELDS = ("heading_ref_deg", "speed_ref_mps", "xte_m", "waypoint_index")

TOPICS: Dict[str, str] = {
    "/autopilot/odometry": "nav_msgs/Odometry",
    "/autopilot/filtered_fix": "sensor_msgs/NavSatFix",
    "/autopilot/gnss/fix": "sensor_msgs/NavSatFix",
    "/autopilot/setpoint": "std_msgs/Float64MultiArray",
    "/autopilot/wrench": "geometry_msgs/WrenchStamped",
    "/autopilot/thrust": "std_msgs/Float64MultiArray",
    "/autopilot/pulse_us": "std_msgs/Float64MultiArray",
    "/autopilot/truth/odometry": "nav_msgs/Odometry",
    "/diagnostics": "diagnostic_msgs/DiagnosticArray",
    "/rosout": "rcl_interfaces/Log",
}

_LOG_LEVELS = {"debug": 10, "info": 20, "warn": 30, "warning": 30, "error": 40, "fatal": 50}


class McapRunWriter:
    """Turns state rows, GNSS fixes and events into ROS 2 messages on an unchunked MCAP stream.

    `stream` is a binary file the caller owns, flushes and fsyncs. Times are MCAP log times [ns since the Unix
    epoch]; headers carry the same stamp. Not thread-safe: one writer thread calls it.
    """

    def __init__(self, stream: IO[bytes], odom_frame: str = "odom", base_frame: str = "base_link",
                 diagnostics_period_s: float = 1.0):
        self._w = McapWriter(stream, use_chunking=False, compression=CompressionType.NONE,
                             index_types=IndexType.NONE)
        self._w.start(profile="ros2", library=LIBRARY)
        self.odom_frame, self.base_frame = odom_frame, base_frame
        self._diag_period_ns = int(diagnostics_period_s * 1e9)
        self._next_diag_ns: Optional[int] = None
        self._schemas: Dict[str, int] = {}
        self._encoders: Dict[str, Any] = {}
        self._channels: Dict[str, int] = {}
        self.messages = 0

    # -------------------------------------------------------------------------------- input kinds
    def write_row(self, t_ns: int, row: dict, thruster_names: Sequence[str] = ()) -> None:
        """All the topics one state row feeds (those whose columns are present)."""
        stamp = _stamp(t_ns)
        n, e, hdg = _num(row, "north_m"), _num(row, "east_m"), _num(row, "heading_deg")
        if n is not None and e is not None and hdg is not None:
            self._put("/autopilot/odometry", t_ns, self._odometry(stamp, row, n, e, hdg))
        lat, lon = _num(row, "lat_deg"), _num(row, "lon_deg")
        if lat is not None and lon is not None:
            std = _num(row, "pos_std_m")
            self._put("/autopilot/filtered_fix", t_ns,
                      _navsatfix(stamp, self.base_frame, lat, lon, 0.0, std, status=0))
        sp = [_num(row, k) for k in SETPOINT_FIELDS]
        if any(v is not None for v in sp):
            self._put("/autopilot/setpoint", t_ns, _array("setpoint", [math.nan if v is None else v for v in sp]),
                      {"fields": ",".join(SETPOINT_FIELDS)})
        fx, mz = _num(row, "surge_force_n"), _num(row, "yaw_moment_nm")
        if fx is not None or mz is not None:
            self._put("/autopilot/wrench", t_ns, {
                "header": {"stamp": stamp, "frame_id": self.base_frame},
                # FRD -> FLU: x unchanged; a starboard-positive yaw moment is a negative torque about +z up
                "wrench": {"force": {"x": fx or 0.0, "y": 0.0, "z": 0.0},
                           "torque": {"x": 0.0, "y": 0.0, "z": frames.yaw_rate_frd_to_flu(mz or 0.0)}}})
        for topic, prefix in (("/autopilot/thrust", "thrust_n_"), ("/autopilot/pulse_us", "pulse_us_")):
            vals = _indexed(row, prefix)
            if vals:
                names = ",".join(thruster_names) if thruster_names else ""
                self._put(topic, t_ns, _array("thruster", vals), {"thrusters": names})
        tn, te, th = _num(row, "truth_north_m"), _num(row, "truth_east_m"), _num(row, "truth_heading_deg")
        if tn is not None and te is not None and th is not None:
            self._put("/autopilot/truth/odometry", t_ns, self._odometry(stamp, {}, tn, te, th))
        if self._next_diag_ns is None or t_ns >= self._next_diag_ns:
            self._next_diag_ns = t_ns + self._diag_period_ns
            self._put("/diagnostics", t_ns, {"header": {"stamp": stamp, "frame_id": ""}, "status": [{
                "level": 0, "name": "autopilot: state", "hardware_id": "",
                "message": f"{_text(row.get('mode'))} {'armed' if row.get('armed') else 'disarmed'}",
                "values": [{"key": k, "value": _text(v)} for k, v in row.items()]}]})

    def write_gnss(self, t_ns: int, fix) -> None:
        """A raw receiver fix (autopilot.types.GpsFix)."""
        status = -1 if not fix.valid or fix.fix_quality == 0 else {2: 1, 4: 2, 5: 2}.get(fix.fix_quality, 0)
        self._put("/autopilot/gnss/fix", t_ns, _navsatfix(_stamp(t_ns), "gnss_link", fix.lat_deg, fix.lon_deg,
                                                          fix.alt_m, fix.pos_std_m, status))

    def write_event(self, t_ns: int, event: dict) -> None:
        """An event (as written to events.jsonl) as a /rosout log line."""
        extra = {k: v for k, v in event.items() if k not in ("time_s", "kind", "message", "level")}
        text = f"{event.get('kind', '')}: {event.get('message', '')}"
        if extra:
            text += " " + json.dumps(extra, default=str, sort_keys=True)
        level = _LOG_LEVELS.get(str(event.get("level", "info")).lower(), 20)
        self._put("/rosout", t_ns, {"stamp": _stamp(t_ns), "level": level, "name": "autopilot", "msg": text,
                                    "file": "", "function": str(event.get("kind", "")), "line": 0})

    def add_metadata(self, name: str, data: Dict[str, str]) -> None:
        self._w.add_metadata(name, {str(k): str(v) for k, v in data.items()})

    def finish(self) -> None:
        """Write the summary and footer (a clean close). The caller then flushes and closes the stream."""
        self._w.finish()

    # -------------------------------------------------------------------------------- internals
    def _odometry(self, stamp, row, n, e, hdg_deg) -> dict:
        x, y, _ = frames.ned_to_enu((n, e, 0.0))
        qx, qy, qz, qw = frames.heading_to_quat_enu(math.radians(hdg_deg))
        std = _num(row, "pos_std_m")
        pcov = [0.0] * 36
        if std is not None:
            pcov[0] = pcov[7] = std * std
        u, v, r = (_num(row, "surge_mps") or 0.0, _num(row, "sway_mps") or 0.0, _num(row, "yaw_rate_dps") or 0.0)
        lx, ly, _ = frames.frd_to_flu((u, v, 0.0))
        return {"header": {"stamp": stamp, "frame_id": self.odom_frame}, "child_frame_id": self.base_frame,
                "pose": {"pose": {"position": {"x": x, "y": y, "z": 0.0},
                                  "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                         "covariance": pcov},
                "twist": {"twist": {"linear": {"x": lx, "y": ly, "z": 0.0},
                                    "angular": {"x": 0.0, "y": 0.0,
                                                "z": frames.yaw_rate_frd_to_flu(math.radians(r))}},
                          "covariance": [0.0] * 36}}

    def _put(self, topic: str, t_ns: int, msg: dict, metadata: Optional[Dict[str, str]] = None) -> None:
        ch = self._channels.get(topic)
        if ch is None:
            name = TOPICS[topic]
            if name not in self._schemas:
                full = ros2_name(name)
                text = schema_text(name)
                self._schemas[name] = self._w.register_schema(full, SchemaEncoding.ROS2, text.encode())
                self._encoders[name] = serialize_dynamic(full, text)[full]
            ch = self._w.register_channel(topic, MessageEncoding.CDR, self._schemas[name], metadata or {})
            self._channels[topic] = ch
        data = self._encoders[TOPICS[topic]](msg)
        self._w.add_message(ch, log_time=t_ns, data=data, publish_time=t_ns)
        self.messages += 1


def _stamp(t_ns: int) -> dict:
    return {"sec": int(t_ns // 1_000_000_000), "nanosec": int(t_ns % 1_000_000_000)}


def _num(row: dict, key: str) -> Optional[float]:
    v = row.get(key)
    if v is None or isinstance(v, str):
        return None
    v = float(v)
    return None if math.isnan(v) else v


def _indexed(row: dict, prefix: str) -> List[float]:
    out = {}
    for k, v in row.items():
        if k.startswith(prefix) and k[len(prefix):].isdigit():
            f = _num(row, k)
            out[int(k[len(prefix):])] = math.nan if f is None else f
    return [out.get(i, math.nan) for i in range(max(out) + 1)] if out else []


def _array(label: str, values: Sequence[float]) -> dict:
    return {"layout": {"dim": [{"label": label, "size": len(values), "stride": len(values)}], "data_offset": 0},
            "data": [float(v) for v in values]}


def _navsatfix(stamp, frame_id, lat, lon, alt, std_m, status) -> dict:
    cov = [0.0] * 9
    ctype = 0
    if std_m is not None:
        cov[0] = cov[4] = std_m * std_m
        cov[8] = (2.0 * std_m) ** 2
        ctype = 1
    return {"header": {"stamp": stamp, "frame_id": frame_id}, "status": {"status": status, "service": 1},
            "latitude": float(lat), "longitude": float(lon), "altitude": float(alt),
            "position_covariance": cov, "position_covariance_type": ctype}


def _text(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return "" if v is None else mode_text(v)


# ------------------------------------------------------------------------------------------- reading
@dataclass
class McapContents:
    """Messages of a run.mcap, in file order: (topic, log_time_ns, decoded message)."""

    messages: List[Tuple[str, int, Any]] = field(default_factory=list)
    complete: bool = False        # True when the file ends with a summary and footer (closed cleanly)
    cut_tail: bool = False        # True when reading stopped at a cut record (a crash)

    def topic(self, name: str) -> List[Tuple[int, Any]]:
        return [(t, m) for tp, t, m in self.messages if tp == name]


def iter_mcap(path, topics: Optional[Sequence[str]] = None) -> Iterator[Tuple[str, int, Any]]:
    """Decoded messages front to back with mcap's NonSeekingReader; stops quietly at a cut tail."""
    contents = McapContents()
    yield from _iter(path, topics, contents)


def read_mcap(path, topics: Optional[Sequence[str]] = None) -> McapContents:
    """All decoded messages of a run.mcap, complete or cut short by a crash."""
    contents = McapContents()
    for item in _iter(path, topics, contents):
        contents.messages.append(item)
    return contents


def _iter(path, topics, contents: McapContents):
    with open(path, "rb") as f:
        reader = NonSeekingReader(f, decoder_factories=[DecoderFactory()])
        try:
            for _schema, channel, message, decoded in reader.iter_decoded_messages(topics, log_time_order=False):
                yield channel.topic, message.log_time, decoded
        except (McapError, EOFError, ValueError):
            # A record cut by a crash fails only when the reader runs into the end of the file; the same error
            # with data left after it is a damaged file, not a cut one.
            if f.tell() < os.fstat(f.fileno()).st_size:
                raise
            contents.cut_tail = True
            return
    contents.complete = mcap_is_complete(path)


def mcap_is_complete(path) -> bool:
    """True when the file has a footer (a reader that seeks to the summary can open it)."""
    try:
        with open(path, "rb") as f:
            make_reader(f).get_summary()
        return True
    except Exception:      # noqa: BLE001 -- any failure to find a footer means "not complete"
        return False


def recover_mcap(src, dst) -> int:
    """Rewrite the readable part of a cut MCAP file as a complete, chunked and indexed one; returns messages.

    Reads records front to back until the cut, keeps header profile, schemas, channels, messages, metadata and
    attachments, and writes them with a summary and footer (zstd chunks) to `dst` (must differ from `src`).
    """
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("recover_mcap: dst must differ from src")
    schemas: Dict[int, Schema] = {}
    n = 0
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        w = None
        schema_map: Dict[int, int] = {}
        channel_map: Dict[int, int] = {}
        records = StreamReader(fin).records
        while True:
            try:
                rec = next(records)
            except StopIteration:
                break
            except (McapError, EOFError, ValueError):
                break                                   # the cut
            if isinstance(rec, Header):
                w = McapWriter(fout, compression=CompressionType.ZSTD)
                w.start(profile=rec.profile, library=rec.library)
            elif w is None:
                raise ValueError(f"{src}: no MCAP header record")
            elif isinstance(rec, Schema):
                schemas[rec.id] = rec
                schema_map[rec.id] = w.register_schema(rec.name, rec.encoding, rec.data)
            elif isinstance(rec, Channel):
                channel_map[rec.id] = w.register_channel(rec.topic, rec.message_encoding,
                                                         schema_map.get(rec.schema_id, 0), dict(rec.metadata))
            elif isinstance(rec, Message):
                w.add_message(channel_map[rec.channel_id], rec.log_time, rec.data, rec.publish_time, rec.sequence)
                n += 1
            elif isinstance(rec, Metadata):
                w.add_metadata(rec.name, dict(rec.metadata))
            elif isinstance(rec, Attachment):
                w.add_attachment(rec.create_time, rec.log_time, rec.name, rec.media_type, rec.data)
            elif isinstance(rec, Footer):
                break
        if w is None:
            raise ValueError(f"{src}: not an MCAP file (no header)")
        w.finish()
    return n
