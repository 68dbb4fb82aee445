"""run.mcap: the run as the ROS 2 messages the boat publishes live, written without a ROS install.

Topics, types, frames and offered QoS are those of the live graph, from THE table autopilot.ros.interface (names
resolved with the boat config's ros section: namespace, topic names, frame ids; defaults without one): the
sensors (gnss/fix, gnss/vel, imu/data, imu/mag), the estimate (odometry/filtered, gnss/filtered), guidance/*,
one thrusters/{name}/thrust and pulse_us per thruster, autopilot/state and autopilot/events, /diagnostics,
/rosout, /tf (map -> odom -> base_link) and /tf_static (base_link -> gnss_link, imu_link), and in a simulation
sim/truth/odometry. Every live topic's channel is declared when the file opens, so the bag lists the whole
interface even for topics that stay silent; sim/truth/odometry only once a row carries truth. Channels carry rosbag2's
`offered_qos_profiles` metadata; the logger writes
metadata.yaml beside the file at a clean close (autopilot.runlog.bag_metadata), which makes the run directory a
rosbag2 bag. Frames per REP-103/105 (autopilot.ros.frames).

Log times never go backwards (readers of an unindexed MCAP need that): a message whose time is earlier than the
last one written is logged at that last time; its header stamp keeps its own time.

Crash safety. The file is written *unchunked*: every record goes straight to the output stream, which the
logger flushes and fsyncs about every half second, so after a SIGKILL or a power cut the file holds every
message up to the last flush followed at most by one cut record, and no summary or footer. That is a valid
MCAP data section read front to back: `read_mcap` here and mcap's own `NonSeekingReader` read it (stopping
with EndOfFile at the cut); `mcap.reader.make_reader`, rosbags and `ros2 bag` need it repaired:
`recover_mcap` (`autopilot log recover RUN_DIR`) rewrites it complete and indexed and writes metadata.yaml.
mcap-ros2-support's own Writer always chunks (up to a chunk held in memory and lost on a kill), so the records
are written with mcap's Writer and encoded with mcap-ros2-support's CDR encoder.
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
from autopilot.ros.interface import qos_depth, resolved_topics
from autopilot.runlog.bag_metadata import BagStats, TopicStats, offered_qos_yaml
from autopilot.runlog.columns import mode_text
from autopilot.runlog.ros2_schemas import schema_text

LIBRARY = "boat-autopilot runlog"
UNOBSERVED_VARIANCE = 1.0e6          # as autopilot.ros.messages (which imports rclpy types)
STATE_PERIOD_S = 1.0                 # autopilot/state: on change, else this often
_LOG_LEVELS = {"debug": 10, "info": 20, "warn": 30, "warning": 30, "error": 40, "fatal": 50}
_NAVSAT_STATUS = {0: -1, 1: 0, 2: 1, 3: 0, 4: 2, 5: 2, 6: 0}      # GGA quality -> NavSatStatus (as messages.py)


class McapRunWriter:
    """Turns state rows, sensor samples, fixes, the mission path and events into the live graph's ROS 2
    messages on an unchunked MCAP stream.

    `stream` is a binary file the caller owns, flushes and fsyncs. `ros` is the boat config's RosConfig (None:
    the defaults), `thruster_names` the vessel's thrusters in order, `vessel` (optional) gives the sensor
    placement for /tf_static and the sensor noise for the Imu / MagneticField covariances. Times are MCAP log
    times [ns since the Unix epoch]. Not thread-safe: one writer thread calls it. `stats` counts what was written
    (for metadata.yaml).
    """

    def __init__(self, stream: IO[bytes], ros=None, thruster_names: Sequence[str] = (), vessel=None,
                 diagnostics_period_s: float = 1.0):
        if ros is None:
            from autopilot.files.boat import RosConfig
            ros = RosConfig()
        self._w = McapWriter(stream, use_chunking=False, compression=CompressionType.NONE,
                             index_types=IndexType.NONE)
        self._w.start(profile="ros2", library=LIBRARY)
        self.frames = ros.frames
        self.vessel = vessel
        self._diag_period_ns = int(diagnostics_period_s * 1e9)
        self._next_diag_ns: Optional[int] = None
        self._next_state_ns: Optional[int] = None
        self._last_state = ""
        self._last_ns = 0
        self._static_written = False
        self._schemas: Dict[str, int] = {}
        self._encoders: Dict[str, Any] = {}
        self._channels: Dict[str, int] = {}
        self._types: Dict[str, str] = {}
        self.stats = BagStats()
        self.name: Dict[str, str] = {}              # table key -> topic name (per-thruster: key/index)
        self._pending: Dict[str, tuple] = {}         # log-only topics: declared on first use
        for rt in resolved_topics(ros, list(thruster_names)):
            key = rt.topic.key if rt.thruster_index < 0 else f"{rt.topic.key}/{rt.thruster_index}"
            self.name[key] = rt.name
            meta = {"offered_qos_profiles": offered_qos_yaml(rt.topic.qos, qos_depth(rt.topic.qos, ros))}
            if rt.thruster:
                meta["thruster"] = rt.thruster
            if rt.topic.live == "log":
                self._pending[rt.name] = (rt.topic.type, meta)
            else:
                self._declare(rt.name, rt.topic.type, meta)
        self.messages = 0
        self._n_thrusters = len(thruster_names)
        s = getattr(vessel, "sensors", None)
        self._gyro_var = s.imu.gyro_noise_rps ** 2 if s is not None else 0.0
        self._accel_var = s.imu.accel_noise_mps2 ** 2 if s is not None else 0.0
        self._mag_var = s.mag.noise_t ** 2 if s is not None else 0.0
        self._speed_var = s.gnss.speed_noise_mps ** 2 if s is not None else 0.0

    # -------------------------------------------------------------------------------- input kinds
    def write_row(self, t_ns: int, row: dict, thruster_names: Sequence[str] = ()) -> None:
        """All the topics one state row feeds (those whose columns are present)."""
        stamp = _stamp(t_ns)
        fr = self.frames
        n, e, hdg = _num(row, "north_m"), _num(row, "east_m"), _num(row, "heading_deg")
        if n is not None and e is not None and hdg is not None:
            odom = self._odometry(stamp, row, n, e, hdg)
            self._put("odometry", t_ns, odom)
            p, q = odom["pose"]["pose"]["position"], odom["pose"]["pose"]["orientation"]
            self._put("/tf", t_ns, {"transforms": [
                _transform(stamp, fr.map, fr.odom, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
                _transform(stamp, fr.odom, fr.base_link, (p["x"], p["y"], 0.0), (q["x"], q["y"], q["z"], q["w"]))]})
            lat, lon = _num(row, "lat_deg"), _num(row, "lon_deg")
            if lat is not None and lon is not None:
                std = _num(row, "pos_std_m")
                self._put("filtered_fix", t_ns, _navsatfix(stamp, fr.base_link, lat, lon, 0.0, std, status=0))
        if hdg is not None:
            self._put("heading", t_ns, {"data": hdg % 360.0})
            self._put("yaw", t_ns, {"data": frames.heading_to_enu_yaw(math.radians(hdg))})
        surge = _num(row, "surge_mps")
        if surge is not None:
            self._put("speed", t_ns, {"data": surge})
        ref = _num(row, "heading_ref_deg")
        if ref is not None:
            self._put("desired_heading", t_ns, {"data": ref % 360.0})
            self._put("desired_yaw", t_ns, {"data": frames.heading_to_enu_yaw(math.radians(ref))})
        for key, col in (("desired_speed", "speed_ref_mps"), ("cross_track_error", "xte_m")):
            v = _num(row, col)
            if v is not None:
                self._put(key, t_ns, {"data": v})
        wp = _num(row, "waypoint_index")
        if wp is not None:
            self._put("waypoint_index", t_ns, {"data": int(wp)})
        for i in range(self._n_thrusters):
            f, pw = _num(row, f"thrust_n_{i}"), _num(row, f"pulse_us_{i}")
            if f is not None:
                self._put(f"thrust/{i}", t_ns, {"data": f})
            if pw is not None:
                self._put(f"pulse/{i}", t_ns, {"data": max(0, min(65535, int(round(pw))))})
        tn, te, th = _num(row, "truth_north_m"), _num(row, "truth_east_m"), _num(row, "truth_heading_deg")
        if tn is not None and te is not None and th is not None:
            truth = {"surge_mps": row.get("truth_surge_mps"), "sway_mps": row.get("truth_sway_mps"),
                     "yaw_rate_dps": row.get("truth_yaw_rate_dps")}
            self._put("sim/truth/odometry", t_ns, self._odometry(stamp, truth, tn, te, th))
        state = json.dumps({"mode": _text(row.get("mode")), "armed": bool(row.get("armed")),
                            "waypoint_index": None if wp is None else int(wp)}, sort_keys=True)
        if state != self._last_state or self._next_state_ns is None or t_ns >= self._next_state_ns:
            self._last_state = state
            self._next_state_ns = t_ns + int(STATE_PERIOD_S * 1e9)
            d = json.loads(state)
            d["time_s"] = _num(row, "time_s")
            self._put("state", t_ns, {"data": json.dumps(d, sort_keys=True)})
        if self._next_diag_ns is None or t_ns >= self._next_diag_ns:
            self._next_diag_ns = t_ns + self._diag_period_ns
            self._put("diagnostics", t_ns, {"header": {"stamp": stamp, "frame_id": ""}, "status": [{
                "level": 0, "name": "autopilot: state", "hardware_id": "",
                "message": f"{_text(row.get('mode'))} {'armed' if row.get('armed') else 'disarmed'}",
                "values": [{"key": k, "value": _text(v)} for k, v in row.items()]}]})

    def write_gnss(self, t_ns: int, fix) -> None:
        """A raw receiver fix (autopilot.vocab.types.GpsFix) as gnss/fix, and gnss/vel when it has a velocity."""
        stamp = _stamp(t_ns)
        usable = fix.valid and fix.fix_quality > 0
        status = _NAVSAT_STATUS.get(fix.fix_quality, 0) if usable else -1
        nan = math.nan
        msg = _navsatfix(stamp, self.frames.gnss, fix.lat_deg if usable else nan, fix.lon_deg if usable else nan,
                         fix.alt_m if usable else nan, fix.pos_std_m, status)
        self._put("gnss_fix", t_ns, msg)
        if fix.valid and fix.sog_mps is not None and fix.cog_rad is not None:
            vn, ve = fix.sog_mps * math.cos(fix.cog_rad), fix.sog_mps * math.sin(fix.cog_rad)
            x, y, _ = frames.ned_to_enu((vn, ve, 0.0))
            cov = [0.0] * 36
            cov[0] = cov[7] = self._speed_var
            cov[14] = cov[21] = cov[28] = cov[35] = UNOBSERVED_VARIANCE
            self._put("gnss_vel", t_ns, {"header": {"stamp": stamp, "frame_id": self.frames.odom}, "twist": {
                "twist": {"linear": _vec((x, y, 0.0)), "angular": _vec((0.0, 0.0, 0.0))}, "covariance": cov}})

    def write_imu(self, t_ns: int, sample) -> None:
        """An IMU sample (autopilot.vocab.types.ImuSample, FRD) as imu/data (FLU, no orientation); `t_ns` its time."""
        stamp = _stamp(t_ns)
        g, a = self._gyro_var, self._accel_var
        self._put("imu", t_ns, {
            "header": {"stamp": stamp, "frame_id": self.frames.imu},
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
            "orientation_covariance": [-1.0] + [0.0] * 8,
            "angular_velocity": _vec(frames.frd_to_flu(sample.gyro_rps)),
            "angular_velocity_covariance": [g, 0.0, 0.0, 0.0, g, 0.0, 0.0, 0.0, g],
            "linear_acceleration": _vec(frames.frd_to_flu(sample.accel_mps2)),
            "linear_acceleration_covariance": [a, 0.0, 0.0, 0.0, a, 0.0, 0.0, 0.0, a]})

    def write_mag(self, t_ns: int, sample) -> None:
        """A magnetometer sample (autopilot.vocab.types.MagSample, FRD, T) as imu/mag (FLU)."""
        m = self._mag_var
        self._put("mag", t_ns, {"header": {"stamp": _stamp(t_ns), "frame_id": self.frames.imu},
                                "magnetic_field": _vec(frames.frd_to_flu(sample.field_t)),
                                "magnetic_field_covariance": [m, 0.0, 0.0, 0.0, m, 0.0, 0.0, 0.0, m]})

    def write_path(self, t_ns: int, waypoints_ned, start_ned=None) -> None:
        """The mission as guidance/path (ENU, each pose facing along the leg that reaches it), as the node does."""
        stamp = _stamp(t_ns)
        header = {"stamp": stamp, "frame_id": self.frames.odom}
        pts = [tuple(map(float, p[:2])) for p in waypoints_ned]
        prev = tuple(start_ned[:2]) if start_ned is not None else None
        poses = []
        for i, (n, e) in enumerate(pts):
            if prev is None or math.hypot(n - prev[0], e - prev[1]) < 1e-6:
                nxt = pts[i + 1] if i + 1 < len(pts) else None
                heading = math.atan2(nxt[1] - e, nxt[0] - n) if nxt is not None else 0.0
            else:
                heading = math.atan2(e - prev[1], n - prev[0])
            x, y, z = frames.ned_to_enu((n, e, 0.0))
            qx, qy, qz, qw = frames.heading_to_quat_enu(heading)
            poses.append({"header": header, "pose": {"position": {"x": x, "y": y, "z": z},
                                                     "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}}})
            prev = (n, e)
        self._put("path", t_ns, {"header": header, "poses": poses})

    def write_event(self, t_ns: int, event: dict) -> None:
        """An event (as written to events.jsonl) on autopilot/events ("[kind] message", as the node publishes)
        and as a /rosout log line."""
        extra = {k: v for k, v in event.items() if k not in ("time_s", "kind", "message", "level")}
        text = f"{event.get('kind', '')}: {event.get('message', '')}"
        if extra:
            text += " " + json.dumps(extra, default=str, sort_keys=True)
        self._put("events", t_ns, {"data": f"[{event.get('kind', '')}] {event.get('message', '')}"})
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
        pcov[14] = pcov[21] = pcov[28] = UNOBSERVED_VARIANCE
        u, v, r = (_num(row, "surge_mps") or 0.0, _num(row, "sway_mps") or 0.0, _num(row, "yaw_rate_dps") or 0.0)
        lx, ly, _ = frames.frd_to_flu((u, v, 0.0))
        return {"header": {"stamp": stamp, "frame_id": self.frames.odom}, "child_frame_id": self.frames.base_link,
                "pose": {"pose": {"position": {"x": x, "y": y, "z": 0.0},
                                  "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                         "covariance": pcov},
                "twist": {"twist": {"linear": {"x": lx, "y": ly, "z": 0.0},
                                    "angular": {"x": 0.0, "y": 0.0,
                                                "z": frames.yaw_rate_frd_to_flu(math.radians(r))}},
                          "covariance": [0.0] * 36}}

    def _static_tf(self, t_ns: int) -> None:
        self._static_written = True
        if self.vessel is None:
            return
        stamp = _stamp(t_ns)
        self._put("/tf_static", t_ns, {"transforms": [
            _transform(stamp, parent, child, xyz, q)
            for parent, child, xyz, q in frames.sensor_transforms(self.vessel, self.frames)]})

    def _declare(self, topic: str, type_name: str, metadata: Dict[str, str]) -> int:
        if type_name not in self._schemas:
            text = schema_text(type_name)
            self._schemas[type_name] = self._w.register_schema(type_name, SchemaEncoding.ROS2, text.encode())
            self._encoders[type_name] = serialize_dynamic(type_name, text)[type_name]
        ch = self._w.register_channel(topic, MessageEncoding.CDR, self._schemas[type_name], metadata)
        self._channels[topic] = ch
        self._types[topic] = type_name
        self.stats.topics[topic] = TopicStats(topic, type_name, metadata.get("offered_qos_profiles", ""))
        return ch

    def _put(self, key: str, t_ns: int, msg: dict) -> None:
        if not self._static_written:
            self._static_tf(t_ns)
        topic = self.name[key]
        ch = self._channels.get(topic)
        if ch is None:
            ch = self._declare(topic, *self._pending.pop(topic))
        log_ns = max(int(t_ns), self._last_ns)
        self._last_ns = log_ns
        data = self._encoders[self._types[topic]](msg)
        self._w.add_message(ch, log_time=log_ns, data=data, publish_time=log_ns)
        self.stats.add(topic, log_ns)
        self.messages += 1


def _stamp(t_ns: int) -> dict:
    return {"sec": int(t_ns // 1_000_000_000), "nanosec": int(t_ns % 1_000_000_000)}


def _vec(v) -> dict:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def _transform(stamp, parent: str, child: str, xyz, q) -> dict:
    return {"header": {"stamp": stamp, "frame_id": parent}, "child_frame_id": child,
            "transform": {"translation": _vec(xyz),
                          "rotation": {"x": float(q[0]), "y": float(q[1]), "z": float(q[2]), "w": float(q[3])}}}


def _num(row: dict, key: str) -> Optional[float]:
    v = row.get(key)
    if v is None or isinstance(v, str):
        return None
    v = float(v)
    return None if math.isnan(v) else v


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


def mcap_stats(path) -> BagStats:
    """Topics, types, offered QoS, counts and time span of a complete MCAP file (from its summary), for
    metadata.yaml."""
    stats = BagStats()
    with open(path, "rb") as f:
        summary = make_reader(f).get_summary()
    if summary is None:
        raise ValueError(f"{path}: no summary (recover it first)")
    counts = summary.statistics.channel_message_counts if summary.statistics else {}
    for cid, ch in sorted(summary.channels.items()):
        schema = summary.schemas.get(ch.schema_id)
        stats.topics[ch.topic] = TopicStats(ch.topic, schema.name if schema else "",
                                            ch.metadata.get("offered_qos_profiles", ""), int(counts.get(cid, 0)))
    st = summary.statistics
    if st is not None and st.message_count:
        stats.start_ns, stats.end_ns, stats.message_count = st.message_start_time, st.message_end_time, \
            st.message_count
    return stats


def recover_mcap(src, dst, stats: Optional[BagStats] = None) -> int:
    """Rewrite the readable part of a cut MCAP file as a complete, chunked and indexed one; returns messages.

    Reads records front to back until the cut, keeps header profile, schemas, channels, messages, metadata and
    attachments, and writes them with a summary and footer (zstd chunks) to `dst` (must differ from `src`).
    `stats`, when given, is filled with what metadata.yaml needs (topics, types, QoS, counts, time span).
    """
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("recover_mcap: dst must differ from src")
    schemas: Dict[int, Schema] = {}
    topics: Dict[int, str] = {}
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
                topics[rec.id] = rec.topic
                if stats is not None:
                    sc = schemas.get(rec.schema_id)
                    stats.topics[rec.topic] = TopicStats(rec.topic, sc.name if sc else "",
                                                         rec.metadata.get("offered_qos_profiles", ""))
            elif isinstance(rec, Message):
                w.add_message(channel_map[rec.channel_id], rec.log_time, rec.data, rec.publish_time, rec.sequence)
                if stats is not None:
                    stats.add(topics[rec.channel_id], rec.log_time)
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
