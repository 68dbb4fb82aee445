"""estimator_inputs.bin: everything the navigation filter consumed, cycle by cycle, so a run can be replayed.

`autopilot log replay` rebuilds the filter from the header and calls `step(t_s, batch, thrust)` with exactly
what the boat gave it; floats are stored as IEEE doubles, so the replay is bit for bit.

File layout (little endian):
    magic  b"APEI" + uint16 format version (FORMAT_VERSION)
    records, each: uint8 kind, uint32 payload length, uint32 CRC-32 of the payload, payload
      kind 1, header (once, first): UTF-8 JSON: schema, version, estimator class, its tuning (EkfTuning
             fields), local frame origin, magnetometer calibration it applies (or null), vessel name, thruster
             count and a fingerprint of the vessel configuration
      kind 2, one estimator step:
             uint32 step (the filter's step count before it: 0 is its first), float64 t_s [s, runner clock],
             uint8 thrust given (0: None, "unknown"), uint8 thrusters, uint32 IMU, mag, GNSS sample counts;
             thrust per thruster [N]; per IMU sample t_s, accel FRD xyz [m/s^2], gyro FRD xyz [rad/s], stale;
             per mag sample t_s, field FRD xyz [T], stale; per GNSS fix uint32 length + UTF-8 JSON of the
             GpsFix fields; then the estimate the filter returned: north, east [m, local NED], heading [rad],
             surge, sway [m/s], yaw rate [rad/s], position std [m], heading std [rad], valid.

Crash safety: the logger's writer thread appends whole records and fsyncs with the other files; a record cut
by a SIGKILL or a power cut fails its length or CRC check and ends the read there (`cut_tail`), everything
before it is intact. A record that fails its CRC with more data after it, or whose length runs past the end with
whole records after it (a damaged length field), is damage, reported by position.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from autopilot.vocab.types import GpsFix, ImuSample, MagSample, NavState, SensorBatch, ThrustCommand

FILE_NAME = "estimator_inputs.bin"
SCHEMA = "autopilot.estimator_inputs"
FORMAT_VERSION = 1
MAGIC = b"APEI"

KIND_HEADER = 1
KIND_STEP = 2

_FILE_HEAD = struct.Struct("<4sH")
_RECORD_HEAD = struct.Struct("<BII")          # kind, payload length, CRC-32
_STEP_HEAD = struct.Struct("<IdBBIII")        # step, t_s, thrust given, thrusters, n_imu, n_mag, n_gps
_IMU = struct.Struct("<7dB")
_MAG = struct.Struct("<4dB")
_NAV = struct.Struct("<8dB")
_U32 = struct.Struct("<I")
_GPS_FIELDS = {f.name for f in dataclasses.fields(GpsFix)}
_MAX_RECORD = 64 << 20                        # a bigger length field is damage, not a record
_RESYNC_WINDOW = 1 << 20                       # how far past a record that runs off the end to look for whole ones


class EstimatorInputsError(ValueError):
    """The estimator inputs of a run cannot be read; str() names the file and the reason."""


@dataclass(frozen=True)
class EstimatorStep:
    """One recorded call `estimator.step(t_s, batch, thrust)` and the estimate it returned."""

    step: int                      # the filter's step count before this call (0: its first step)
    t_s: float                     # runner clock [s]
    batch: SensorBatch
    thrust: Optional[ThrustCommand]
    nav: NavState


@dataclass
class EstimatorInputs:
    path: Path
    header: dict
    steps: List[EstimatorStep] = field(default_factory=list)
    cut_tail: bool = False         # the last record was cut short (a crash): the steps before it are whole
    damaged: Optional[str] = None  # a record in the middle failed its check: reading stopped there (why, where)

    @property
    def gaps(self) -> List[tuple]:
        """(after step, before step) where steps are missing (dropped by a log that fell behind)."""
        return [(a.step, b.step) for a, b in zip(self.steps, self.steps[1:]) if b.step != a.step + 1]


# ------------------------------------------------------------------------------------------------ writing
def vessel_fingerprint(vessel) -> str:
    """A short hash of a VesselConfig (its source path left out): replay warns when the vessel differs."""
    try:
        text = repr(dataclasses.replace(vessel, source_file=""))
    except (TypeError, ValueError):
        text = repr(vessel)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe_estimator(estimator) -> dict:
    """The header of an estimator's inputs: what replay needs to build the same filter."""
    tuning = getattr(estimator, "tuning", None)
    frame = getattr(estimator, "frame", None)
    vessel = getattr(estimator, "vessel", None)
    cal = getattr(estimator, "mag_calibration", None)
    return {
        "schema": SCHEMA, "version": FORMAT_VERSION,
        "estimator": type(estimator).__name__,
        "tuning": (dataclasses.asdict(tuning)  # type: ignore[arg-type]  # tuning: an instance, never a class
                   if dataclasses.is_dataclass(tuning) else None),
        "frame": None if frame is None else {"origin_lat_deg": frame.origin_lat_deg,
                                             "origin_lon_deg": frame.origin_lon_deg},
        "mag_calibration": None if cal is None else {"offset_t": list(cal.offset_t),
                                                     "matrix": [list(r) for r in cal.matrix],
                                                     "method": cal.method},
        "vessel": None if vessel is None else {"name": vessel.name, "thrusters": len(vessel.thrusters),
                                               "fingerprint": vessel_fingerprint(vessel)},
    }


def file_head() -> bytes:
    return _FILE_HEAD.pack(MAGIC, FORMAT_VERSION)


def header_record(header: dict) -> bytes:
    return _record(KIND_HEADER, json.dumps(header, default=_json_default).encode())


def step_record(t_s: float, batch: SensorBatch, result) -> bytes:
    """The record of one cycle's estimator step: `result` is the cycle's CycleResult (its estimator_step,
    estimator_thrust and nav)."""
    thrust = result.estimator_thrust
    values = () if thrust is None else tuple(thrust.thrust_n)
    parts = [_STEP_HEAD.pack(result.estimator_step, _f(t_s), thrust is not None, len(values),
                             len(batch.imu), len(batch.mag), len(batch.gps))]
    if values:
        parts.append(struct.pack(f"<{len(values)}d", *map(_f, values)))
    for s in batch.imu:
        parts.append(_IMU.pack(_f(s.time_s), *_xyz(s.accel_mps2), *_xyz(s.gyro_rps), bool(s.stale)))
    for m in batch.mag:
        parts.append(_MAG.pack(_f(m.time_s), *_xyz(m.field_t), bool(m.stale)))
    for fix in batch.gps:
        text = json.dumps(dataclasses.asdict(fix), default=_json_default).encode()
        parts.append(_U32.pack(len(text)))
        parts.append(text)
    nav = result.nav
    parts.append(_NAV.pack(_f(nav.north_m), _f(nav.east_m), _f(nav.heading_rad), _f(nav.surge_mps),
                           _f(nav.sway_mps), _f(nav.yaw_rate_rps), _f(nav.pos_std_m), _f(nav.heading_std_rad),
                           bool(nav.valid)))
    return _record(KIND_STEP, b"".join(parts))


def _record(kind: int, payload: bytes) -> bytes:
    return _RECORD_HEAD.pack(kind, len(payload), zlib.crc32(payload)) + payload


def _f(v) -> float:
    """A float as the filter saw it; anything that is not a number becomes NaN (the filter drops both)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _xyz(v) -> tuple:
    """Three floats; a vector of another length (which the filter counts as a bad sample) becomes NaNs."""
    try:
        if len(v) == 3:
            return _f(v[0]), _f(v[1]), _f(v[2])
    except TypeError:
        pass
    return math.nan, math.nan, math.nan


def _json_default(v):
    item = getattr(v, "item", None)          # numpy scalars
    if callable(item):
        return item()
    if isinstance(v, tuple):
        return list(v)
    return str(v)


# ------------------------------------------------------------------------------------------------ reading
def read_estimator_inputs(path) -> EstimatorInputs:
    """Read a run's estimator_inputs.bin (or the run directory holding it) whole; see EstimatorInputsReader."""
    with EstimatorInputsReader(path) as reader:
        steps = list(reader.steps())
        return EstimatorInputs(reader.path, reader.header, steps, reader.cut_tail, reader.damaged)


class EstimatorInputsReader:
    """Streams a run's estimator_inputs.bin (or the run directory holding it): `header` on opening, then
    `steps()` one at a time (a day's run need not fit in memory).

    Opening raises EstimatorInputsError when the file is missing, not a regular file, not this format, of a
    newer version, or has no readable header. A cut tail (crash) or a damaged record ends `steps()` there and
    is reported in `cut_tail` / `damaged` once it has ended, never raised.
    """

    def __init__(self, path) -> None:
        p = Path(path)
        if p.is_dir():
            p = p / FILE_NAME
        self.path = p
        self.cut_tail = False
        self.damaged: Optional[str] = None
        if not p.exists():
            raise EstimatorInputsError(f"{p}: not found (this run has no record of the estimator's inputs: it "
                                       f"was logged by an autopilot older than the replay feature)")
        if not p.is_file():
            raise EstimatorInputsError(f"{p}: not a regular file")
        try:
            self._f = open(p, "rb")
        except OSError as e:
            raise EstimatorInputsError(f"{p}: cannot read: {e.strerror or e}") from None
        try:
            self.header = self._open_header()
        except BaseException:
            self._f.close()
            raise
        self._pos = self._f.tell()

    def _open_header(self) -> dict:
        p = self.path
        head = self._f.read(_FILE_HEAD.size)
        if len(head) < _FILE_HEAD.size or head[:4] != MAGIC:
            raise EstimatorInputsError(f"{p}: not an estimator inputs file (no {MAGIC.decode()} header)")
        _magic, version = _FILE_HEAD.unpack(head)
        if version > FORMAT_VERSION:
            raise EstimatorInputsError(f"{p}: format version {version} is newer than this autopilot reads "
                                       f"({FORMAT_VERSION}); update the autopilot")
        self._pos = _FILE_HEAD.size
        rec = self._record()
        why = None
        if rec is None:
            why = self.damaged or ("the file was cut before its header" if self.cut_tail else "the file is empty")
        elif rec[0] != KIND_HEADER:
            why = f"byte {_FILE_HEAD.size}: the first record is not the header"
        else:
            try:
                return _parse_header(rec[1])
            except (ValueError, UnicodeDecodeError) as e:
                why = f"byte {_FILE_HEAD.size}: {e}"
        raise EstimatorInputsError(f"{p}: no readable header ({why})")

    def _record(self):
        """(kind, payload) of the next whole record; None at the end, after setting cut_tail or damaged."""
        pos = self._pos
        head = self._f.read(_RECORD_HEAD.size)
        if len(head) < _RECORD_HEAD.size:
            self.cut_tail = len(head) > 0
            return None
        kind, length, crc = _RECORD_HEAD.unpack(head)
        if length > _MAX_RECORD or kind not in (KIND_HEADER, KIND_STEP):
            self.damaged = f"byte {pos}: not a record (kind {kind}, length {length})"
            return None
        payload = self._f.read(length)
        if len(payload) < length:
            if self._whole_record_follows(pos + 1):
                self.damaged = (f"byte {pos}: record length {length} runs past the end of the file, yet "
                                f"CRC-checked records follow it (a damaged length field)")
            else:
                self.cut_tail = True
            return None
        if zlib.crc32(payload) != crc:
            if not self._f.read(1):
                self.cut_tail = True          # the last record, half on disk
            else:
                self.damaged = f"byte {pos}: record fails its CRC check"
            return None
        self._pos = pos + _RECORD_HEAD.size + length
        return kind, payload

    def _whole_record_follows(self, start: int) -> bool:
        """Whether a whole step record (its head, and a payload that passes its CRC) begins within
        _RESYNC_WINDOW bytes after byte `start`. A crash cuts only the last record; a length field damaged
        mid-file also points past the end, but whole records follow it."""
        self._f.seek(start)
        window = self._f.read(_RESYNC_WINDOW)
        marker = bytes([KIND_STEP])
        head = _RECORD_HEAD.size
        i = window.find(marker)
        while 0 <= i <= len(window) - head:
            _kind, length, crc = _RECORD_HEAD.unpack_from(window, i)
            end = i + head + length
            if end <= len(window) and zlib.crc32(window[i + head:end]) == crc:
                return True
            i = window.find(marker, i + 1)
        return False

    def steps(self):
        """The recorded steps in order, until the end of the file, a cut tail or a damaged record."""
        try:
            while True:
                pos = self._pos
                rec = self._record()
                if rec is None:
                    return
                try:
                    if rec[0] != KIND_STEP:
                        raise ValueError("a second header")
                    step = _parse_step(rec[1])
                except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as e:
                    self.damaged = f"byte {pos}: {e}"
                    return
                yield step
        finally:
            self.close()

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _parse_header(payload: bytes) -> dict:
    header = json.loads(payload.decode())
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        raise ValueError(f"header is not a {SCHEMA} header")
    return header


def _parse_step(payload: bytes) -> EstimatorStep:
    step, t_s, given, n_thr, n_imu, n_mag, n_gps = _STEP_HEAD.unpack_from(payload, 0)
    pos = _STEP_HEAD.size
    thrust = None
    if given:
        thrust = ThrustCommand(struct.unpack_from(f"<{n_thr}d", payload, pos))
    pos += 8 * n_thr
    imu = []
    for _ in range(n_imu):
        t, ax, ay, az, gx, gy, gz, stale = _IMU.unpack_from(payload, pos)
        imu.append(ImuSample(t, (ax, ay, az), (gx, gy, gz), bool(stale)))
        pos += _IMU.size
    mag = []
    for _ in range(n_mag):
        t, mx, my, mz, stale = _MAG.unpack_from(payload, pos)
        mag.append(MagSample(t, (mx, my, mz), bool(stale)))
        pos += _MAG.size
    gps = []
    for _ in range(n_gps):
        (length,) = _U32.unpack_from(payload, pos)
        pos += _U32.size
        d = json.loads(payload[pos:pos + length].decode())
        pos += length
        if not isinstance(d, dict) or not set(d) <= _GPS_FIELDS:
            raise ValueError("a GNSS fix with unknown fields")
        gps.append(GpsFix(**d))
    n, e, psi, u, v, r, pos_std, psi_std, valid = _NAV.unpack_from(payload, pos)
    if pos + _NAV.size != len(payload):
        raise ValueError("a step record of the wrong length")
    nav = NavState(t_s, n, e, psi, u, v, r, pos_std, psi_std, bool(valid))
    return EstimatorStep(step, t_s, SensorBatch(gps=gps, imu=imu, mag=mag), thrust, nav)
