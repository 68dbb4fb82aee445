"""Checksummed NMEA sentences -> one GpsFix per receiver epoch (pure logic: no I/O, no clock).

An epoch is every sentence carrying the same UTC time of day. GGA gives position, altitude, quality,
satellites and HDOP; RMC gives position, validity, speed and course over ground and the date; GLL (position,
validity), VTG (speed, course), GSA (HDOP) and ZDA (date) fill in when GGA or RMC is missing. Talkers GN,
GP, GL, BD, GB and GA are accepted; when an epoch has both a combined (GN) and a single-system sentence of
one type, GN wins. VTG and GSA carry no time, so they count for the open epoch only when nothing was lost on
the line since that epoch's last timed sentence (the caller passes the framer's `gap` flag): a VTG whose
RMC was destroyed cannot be told from the next epoch's.

A fix is emitted as soon as its epoch holds both GGA and RMC, otherwise when the next epoch starts or
`flush()` is called (the driver flushes once the line has been idle for a moment), so a receiver set to
send only one of them still gets its fixes, a little later. Sentences of an epoch already emitted are
ignored, unless the epoch already had one of that type: then it is the next epoch arriving with a colliding
(corrupted) time, and it gets its own fix. A fix is `valid=False` (no position) when GGA quality is 0, RMC or GLL
status is V, or the mode
indicator says N; it still carries the decoded time and coordinates for diagnostics.

Guarding against a corrupted sentence that slipped through the 8-bit checksum: every field used is checked
for its NMEA form (ddmm.mmmm, hhmmss.ss, ...), and when GGA, RMC and GLL of one epoch disagree on the
position by more than the coarser field's rounding the epoch yields no fix (counted as a conflict).

Position uncertainty: the L76K's datasheet CEP (50 % circle, open sky) is 2.0 m. For a circular Gaussian
with per-axis standard deviation sigma, CEP = sigma * sqrt(2 ln 2) = 1.1774 sigma, and the datasheet figure
holds at HDOP about 1, so sigma = cep_m / 1.1774 * HDOP / HDOP_REF with HDOP_REF = 1.0 (1.70 m at HDOP 1).
When no HDOP is known (no GGA or GSA in the epoch and none in the last 10 s) the fix reports hdop = nan and
sigma uses a pessimistic HDOP of 5.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Tuple

import pynmea2

from autopilot.vocab.angles import wrap_pi
from autopilot.vocab.types import GpsFix

KNOT_MPS = 0.514444                 # 1 international knot = 1852 m / 3600 s
MAX_SOG_KN = 1000.0                 # civil receivers stop reporting above ~1000 kn (COCOM limit): beyond is junk
CEP_TO_SIGMA = 1.0 / math.sqrt(2.0 * math.log(2.0))   # = 1 / 1.1774
HDOP_REF = 1.0
UNKNOWN_HDOP = 5.0
HDOP_MEMORY_S = 10.0

TALKERS = frozenset(("GN", "GP", "GL", "BD", "GB", "GA"))
_USED_TYPES = frozenset(("GGA", "RMC", "GLL", "VTG", "GSA", "ZDA"))
_POSITION_TYPES = ("GGA", "RMC", "GLL")
# Mode indicator (RMC, GLL, NMEA 2.3+) -> GGA-style quality, for epochs without a GGA.
_MODE_QUALITY = {"A": 1, "D": 2, "P": 1, "R": 4, "F": 5, "E": 6, "M": 7, "S": 8, "N": 0}

_LAT_RE = re.compile(r"^(\d{2})([0-5]\d\.\d+|[0-5]\d)$")
_LON_RE = re.compile(r"^(\d{3})([0-5]\d\.\d+|[0-5]\d)$")
_NUM_RE = re.compile(r"^-?\d+(\.\d*)?$")


def pos_std_from_hdop(hdop: float, cep_m: float = 2.0) -> float:
    """1-sigma horizontal error per axis [m] from HDOP and the receiver's CEP (see module docstring)."""
    if hdop is None or not math.isfinite(hdop) or hdop <= 0.0:
        hdop = UNKNOWN_HDOP
    return cep_m * CEP_TO_SIGMA * hdop / HDOP_REF


class _Bad(ValueError):
    """A field not in its NMEA form."""


def _time_key(ts) -> int:
    """Milliseconds of the day from pynmea2's timestamp (a datetime.time, or the raw text if it did not parse)."""
    if not isinstance(ts, _dt.time):
        raise _Bad(f"time {ts!r}")
    return ((ts.hour * 60 + ts.minute) * 60 + ts.second) * 1000 + round(ts.microsecond / 1000.0)


def _int(text) -> int:
    if isinstance(text, int):
        return text
    if not isinstance(text, str) or not text.isdigit():
        raise _Bad(f"integer {text!r}")
    return int(text)


def _angle(text: str, hemi: str, pattern, positive: str, negative: str, limit: float):
    """(degrees, resolution in degrees) of a ddmm.mmmm / dddmm.mmmm field and its hemisphere."""
    m = pattern.match(text)
    if not m or hemi not in (positive, negative):
        raise _Bad(f"angle {text!r} {hemi!r}")
    minutes = m.group(2)
    deg = int(m.group(1)) + float(minutes) / 60.0
    if deg > limit:
        raise _Bad(f"angle {text!r} beyond {limit}")
    dot = minutes.find(".")
    decimals = len(minutes) - dot - 1 if dot >= 0 else 0
    return (-deg if hemi == negative else deg), 10.0 ** (-decimals) / 60.0


def _num(text: str) -> float:
    if not _NUM_RE.match(text):
        raise _Bad(f"number {text!r}")
    return float(text)


def _opt_float(v) -> Optional[float]:
    """A pynmea2 typed numeric field: None when empty, a finite float, else the field is bad."""
    if v is None:
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    raise _Bad(f"number {v!r}")


def _opt_num(text) -> Optional[float]:
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise _Bad(f"number {text!r}")
    return _num(text)


@dataclass
class _Position:
    lat_deg: float
    lon_deg: float
    res_deg: float                  # rounding of the coarser of the two fields


@dataclass
class _Epoch:
    key_ms: int
    t_first_s: float
    t_last_s: float
    talker: Dict[str, str] = field(default_factory=dict)   # sentence type -> talker used
    text: Dict[str, str] = field(default_factory=dict)     # sentence type -> the sentence used
    pos: Dict[str, Optional[_Position]] = field(default_factory=dict)
    valid: Dict[str, bool] = field(default_factory=dict)
    quality: Optional[int] = None
    mode_quality: Optional[int] = None
    sats: Optional[int] = None
    hdop: Optional[float] = None
    gsa_hdop: Optional[float] = None
    alt_m: Optional[float] = None
    sog_mps: Optional[float] = None
    cog_deg: Optional[float] = None
    vtg_sog_mps: Optional[float] = None
    vtg_cog_deg: Optional[float] = None
    date: Optional[_dt.date] = None


@dataclass
class EpochCounters:
    fixes: int = 0              # fixes emitted (valid or not)
    valid_fixes: int = 0
    conflicts: int = 0          # epochs dropped because their position sentences disagreed
    parse_errors: int = 0       # checksummed sentences whose fields were not in NMEA form
    ignored: int = 0            # other sentence types / talkers, or late sentences of an emitted epoch
    time_collisions: int = 0    # epochs that arrived with the time of one already emitted (a corrupted time)


class EpochAssembler:
    """Feed checksummed sentences in arrival order; get GpsFix objects per epoch.

    `feed(sentence, t_rx_s)` and `flush()` return the fixes completed by that call. `t_rx_s` is the
    caller's clock at reception. A fix's `time_s` is the reception time of its epoch's first timed sentence
    (on the L76K the GGA, which leaves the module first): the closest the line lets us get to the time the
    position refers to. The fix itself becomes available when the epoch completes (its RMC), which on a
    full sentence set at 9600 baud is ~0.8 s later; consumers extrapolate to `time_s`.
    """

    def __init__(self, cep_m: float = 2.0):
        self.cep_m = cep_m
        self.counters = EpochCounters()
        self._epoch: Optional[_Epoch] = None
        # (key, {sentence type: sentence}) of recently emitted epochs
        self._emitted: Deque[Tuple[int, Dict[str, str]]] = deque(maxlen=8)
        self._date: Optional[_dt.date] = None        # last date seen, with the key it belongs to
        self._date_key_ms = 0
        self._gap = False                            # a loss since the open epoch's last timed sentence
        self._last_hdop: Optional[float] = None
        self._last_hdop_t = -math.inf

    @property
    def pending_since_s(self) -> Optional[float]:
        """Reception time of the last sentence of the open epoch, None when no epoch is open."""
        return None if self._epoch is None else self._epoch.t_last_s

    def flush(self) -> List[GpsFix]:
        """Emit the open epoch, complete or not (stream idle, port closing)."""
        ep, self._epoch = self._epoch, None
        return self._finish(ep)

    def feed(self, sentence: str, t_rx_s: float, gap: bool = False) -> List[GpsFix]:
        """`gap`: something was lost on the line just before this sentence (NmeaFramer.gaps)."""
        if gap:
            self._gap = True
        talker, kind = sentence[1:3], sentence[3:6]
        if kind not in _USED_TYPES or talker not in TALKERS:
            self.counters.ignored += 1
            return []
        if (kind == "GSA" and self._epoch is not None and self._epoch.hdop is not None) or \
                (kind == "VTG" and (self._epoch is None or self._gap)):
            self.counters.ignored += 1                   # HDOP already known / no epoch the VTG surely belongs to
            return []
        try:
            # The framer verified the checksum: hand pynmea2 the sentence without it, so it is not redone.
            msg = pynmea2.parse(sentence[:-3] if sentence[-3] == "*" else sentence, check=False)
            return self._dispatch(kind, talker, msg, t_rx_s, sentence)
        except Exception:   # noqa: BLE001 - any field content (bad date, huge number, ...) is a bad sentence
            self.counters.parse_errors += 1
            return []

    # -- per sentence --------------------------------------------------------------------------------
    def _dispatch(self, kind: str, talker: str, msg, t: float, sentence: str) -> List[GpsFix]:
        if kind == "VTG":
            return self._vtg(msg, t)
        if kind == "GSA":
            return self._gsa(msg, t)
        key = _time_key(msg.timestamp)
        out: List[GpsFix] = []
        if kind == "ZDA":
            self._note_date(_dt.date(_int(msg.year), _int(msg.month), _int(msg.day)), key)
        done = next((text for k, text in self._emitted if k == key), None)
        if done is not None:
            used = done.get(kind)
            if used is None or used[1:3] != talker or used == sentence:
                self.counters.ignored += 1       # a late sentence of an emitted epoch, a twin, or a doubled line
                return out
            # a different GGA (RMC, GLL) from the same talker with the time of an emitted epoch is the next
            # epoch, whose time (or the previous one's) was corrupted: an epoch of its own, not dropped
            self.counters.time_collisions += 1
            self._emitted = deque(((k, d) for k, d in self._emitted if k != key), maxlen=self._emitted.maxlen)
        ep = self._epoch
        if ep is not None and ep.key_ms != key:
            out += self.flush()
            ep = None
        if ep is None:
            ep = self._epoch = _Epoch(key_ms=key, t_first_s=t, t_last_s=t)
        ep.t_last_s = t
        self._gap = False
        if kind == "ZDA":
            ep.date = self._date
            return out
        prev = ep.talker.get(kind)
        if prev is not None and (prev == "GN" or talker != "GN"):
            self.counters.ignored += 1          # duplicate, or a single-system twin of a GN sentence
            return out
        getattr(self, "_" + kind.lower())(msg, ep)
        ep.talker[kind] = talker
        ep.text[kind] = sentence
        if self._complete(ep):
            self._epoch = None
            out += self._finish(ep)
        return out

    def _gga(self, msg, ep: _Epoch) -> None:
        quality = msg.gps_qual if msg.gps_qual is not None else 0
        if not isinstance(quality, int) or not 0 <= quality <= 9:
            raise _Bad(f"quality {quality!r}")
        pos = self._position(msg.lat, msg.lat_dir, msg.lon, msg.lon_dir, strict=quality != 0)
        sats = _int(msg.num_sats) if msg.num_sats else None
        if sats is not None and not 0 <= sats <= 99:
            raise _Bad(f"sats {sats!r}")
        ep.pos["GGA"] = pos
        ep.valid["GGA"] = quality != 0 and pos is not None
        ep.quality, ep.sats = quality, sats
        ep.hdop = _opt_num(msg.horizontal_dil)
        if ep.hdop is not None and ep.hdop <= 0.0:
            raise _Bad(f"HDOP {ep.hdop!r}")
        ep.alt_m = _opt_float(msg.altitude)

    def _rmc(self, msg, ep: _Epoch) -> None:
        status = msg.status
        if status not in ("A", "V"):
            raise _Bad(f"RMC status {status!r}")
        pos = self._position(msg.lat, msg.lat_dir, msg.lon, msg.lon_dir, strict=status == "A")
        sog_kn = _opt_float(msg.spd_over_grnd)
        if sog_kn is not None and not 0.0 <= sog_kn <= MAX_SOG_KN:
            raise _Bad(f"speed {sog_kn!r} kn")
        cog = _opt_float(msg.true_course)
        if cog is not None and not 0.0 <= cog <= 360.0:
            raise _Bad(f"course {cog!r}")
        mode = msg.mode_indicator or ""
        date = msg.datestamp          # pynmea2: ddmmyy, two-digit years 69..99 -> 19xx, 00..68 -> 20xx
        if date is not None:
            if not isinstance(date, _dt.date):
                raise _Bad(f"date {date!r}")
            if ep.date is None:          # ZDA's four-digit year wins over RMC's two
                self._note_date(date, ep.key_ms)
                ep.date = date
        ep.pos["RMC"] = pos
        ep.valid["RMC"] = status == "A" and mode != "N" and pos is not None
        ep.sog_mps = None if sog_kn is None else sog_kn * KNOT_MPS
        ep.cog_deg = cog
        if mode in _MODE_QUALITY:
            ep.mode_quality = _MODE_QUALITY[mode]

    def _gll(self, msg, ep: _Epoch) -> None:
        status = msg.status
        if status not in ("A", "V"):
            raise _Bad(f"GLL status {status!r}")
        mode = msg.faa_mode or ""
        pos = self._position(msg.lat, msg.lat_dir, msg.lon, msg.lon_dir, strict=status == "A")
        ep.pos["GLL"] = pos
        ep.valid["GLL"] = status == "A" and mode != "N" and pos is not None
        if ep.mode_quality is None and mode in _MODE_QUALITY:
            ep.mode_quality = _MODE_QUALITY[mode]

    def _vtg(self, msg, t: float) -> List[GpsFix]:
        ep = self._epoch
        if ep is None or self._gap:      # no time field: only trusted right after its epoch's sentences
            self.counters.ignored += 1
            return []
        d = msg.data
        cog = _opt_num(d[0])
        if cog is not None and not 0.0 <= cog <= 360.0:
            raise _Bad(f"course {cog!r}")
        kn = _opt_num(d[4])
        kmh = _opt_num(d[6]) if len(d) > 6 else None
        if kmh is not None and kn is None:
            kn = kmh / 1.852
        if kn is not None and not 0.0 <= kn <= MAX_SOG_KN:
            raise _Bad(f"speed {d[4]!r} kn {d[6] if len(d) > 6 else ''!r} km/h")
        ep.vtg_cog_deg = cog
        ep.vtg_sog_mps = None if kn is None else kn * KNOT_MPS
        ep.t_last_s = t
        return []

    def _gsa(self, msg, t: float) -> List[GpsFix]:
        hdop = _opt_num(msg.hdop or "")
        if hdop is not None and hdop > 0:
            self._last_hdop, self._last_hdop_t = hdop, t
            if self._epoch is not None and self._epoch.gsa_hdop is None and not self._gap:
                self._epoch.gsa_hdop = hdop
        return []

    @staticmethod
    def _position(lat: str, lat_h: str, lon: str, lon_h: str, strict: bool) -> Optional[_Position]:
        """The sentence's position; a malformed one is an error when the sentence claims a fix, and is
        dropped (None) when it does not (MTK chips send 8960.000000,N while searching)."""
        if not lat and not lon:
            return None
        try:
            la, res_la = _angle(lat, lat_h, _LAT_RE, "N", "S", 90.0)
            lo, res_lo = _angle(lon, lon_h, _LON_RE, "E", "W", 180.0)
        except _Bad:
            if strict:
                raise
            return None
        return _Position(la, lo, max(res_la, res_lo))

    def _note_date(self, date: _dt.date, key_ms: int) -> None:
        self._date, self._date_key_ms = date, key_ms

    # -- per epoch ---------------------------------------------------------------------------------------
    @staticmethod
    def _complete(ep: _Epoch) -> bool:
        return "GGA" in ep.talker and "RMC" in ep.talker

    def _finish(self, ep: Optional[_Epoch]) -> List[GpsFix]:
        if ep is None:
            return []
        try:
            return self._make_fix(ep)
        except Exception:   # noqa: BLE001 - e.g. a date at the end of the calendar: drop the epoch
            self.counters.parse_errors += 1
            return []

    def _make_fix(self, ep: _Epoch) -> List[GpsFix]:
        self._emitted.append((ep.key_ms, dict(ep.text)))
        present = [k for k in _POSITION_TYPES if k in ep.talker]
        if not present:                              # only ZDA / VTG: no fix to give
            return []
        positions = [pos for k in present if (pos := ep.pos.get(k)) is not None]
        if positions:
            ref = positions[0]
            for p in positions[1:]:
                tol = 0.5 * max(ref.res_deg, p.res_deg) + 1e-9
                if abs(p.lat_deg - ref.lat_deg) > tol or abs(p.lon_deg - ref.lon_deg) > tol:
                    self.counters.conflicts += 1
                    return []
            lat, lon = ref.lat_deg, ref.lon_deg
        else:
            lat = lon = math.nan
        valid = bool(positions) and all(ep.valid[k] for k in present)

        hdop = ep.hdop if ep.hdop is not None else ep.gsa_hdop
        if hdop is None and self._last_hdop is not None and ep.t_last_s - self._last_hdop_t <= HDOP_MEMORY_S:
            hdop = self._last_hdop
        if ep.hdop is not None:
            self._last_hdop, self._last_hdop_t = ep.hdop, ep.t_last_s
        if ep.quality is not None:
            quality = ep.quality
        elif ep.mode_quality is not None:
            quality = ep.mode_quality
        else:
            quality = 1 if valid else 0
        sog = ep.sog_mps if ep.sog_mps is not None else ep.vtg_sog_mps
        cog_deg = ep.cog_deg if ep.cog_deg is not None else ep.vtg_cog_deg
        fix = GpsFix(
            time_s=ep.t_first_s,
            lat_deg=lat,
            lon_deg=lon,
            alt_m=ep.alt_m if ep.alt_m is not None else math.nan,
            fix_quality=quality,
            sats=ep.sats if ep.sats is not None else 0,
            hdop=hdop if hdop is not None else math.nan,
            sog_mps=sog,
            cog_rad=None if cog_deg is None else wrap_pi(math.radians(cog_deg)),
            pos_std_m=pos_std_from_hdop(hdop if hdop is not None else math.nan, self.cep_m),
            utc=self._utc(ep),
            valid=valid,
        )
        self.counters.fixes += 1
        self.counters.valid_fixes += int(valid)
        return [fix]

    def _utc(self, ep: _Epoch) -> Optional[str]:
        date = ep.date
        if date is None and self._date is not None:
            date = self._date
            if ep.key_ms < self._date_key_ms - 43_200_000:      # time of day wrapped past midnight
                date = date + _dt.timedelta(days=1)
        if date is None:
            return None
        ms = ep.key_ms
        h, ms = divmod(ms, 3_600_000)
        m, ms = divmod(ms, 60_000)
        s, ms = divmod(ms, 1000)
        return f"{date.isoformat()}T{h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"
