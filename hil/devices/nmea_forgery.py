"""Forged NMEA epochs: well-formed sentences with a wrong value and a correct checksum.

What gets past NMEA's 8-bit checksum: a multi-bit corruption that happens to keep the XOR (one in 256), a
faulty serial bridge or firmware that rewrites a field and recomputes the checksum, a hostile device on the
line. `NmeaForger.forge(sentences)` changes one value of an epoch and recomputes every checksum. The change is
made the same way in every sentence that carries the value (GGA, GLL and RMC all get the same wrong
latitude), so the driver's cross-check between sentences cannot catch it; in `one_sentence` mode only one
sentence is changed, as a line corruption would.

Kinds (`KINDS`), each a digit or a letter changed to another legal one:
  lat, lon          a digit of the latitude / longitude (degrees or minutes: 0.2 m to 100 km)
  hemisphere        N <-> S or E <-> W
  time              a digit of hhmmss.sss in every timed sentence
  date              a digit of RMC's date (ddmmyy; an epoch with a ZDA takes the date from it)
  speed             a digit of the speed over ground (RMC, VTG)
  course            a digit of the course over ground (RMC, VTG)
  hdop              GGA's HDOP replaced by 0.0, 0.1 or 99.9
  quality           GGA's fix quality changed (1 -> 2, 4, 5, 6)

Its random stream is its own (seeded), so a run with forgeries draws the same receiver noise as one without.
"""
from __future__ import annotations

import random
from typing import Dict, List, Optional, Tuple

from drivers.gnss.nmea_stream import nmea_checksum

KINDS = ("lat", "lon", "hemisphere", "time", "date", "speed", "course", "hdop", "quality")

# (sentence type) -> {value: field index} for the fields a forgery changes
_FIELDS: Dict[str, Dict[str, int]] = {
    "GGA": {"time": 1, "lat": 2, "ns": 3, "lon": 4, "ew": 5, "quality": 6, "hdop": 8},
    "GLL": {"lat": 1, "ns": 2, "lon": 3, "ew": 4, "time": 5},
    "RMC": {"time": 1, "lat": 3, "ns": 4, "lon": 5, "ew": 6, "speed": 7, "course": 8, "date": 9},
    "VTG": {"course": 1, "speed": 5},
    "ZDA": {"time": 1},
}
_HEMI = {"N": "S", "S": "N", "E": "W", "W": "E"}


def _split(sentence: bytes) -> Optional[Tuple[str, List[str]]]:
    """'$GNGGA,...*hh\\r\\n' -> ('GGA', fields) or None for anything else."""
    text = sentence.decode("ascii", "replace").strip()
    if not text.startswith("$") or "*" not in text:
        return None
    body = text[1:text.rindex("*")]
    fields = body.split(",")
    return fields[0][2:5], fields


def _join(fields: List[str]) -> bytes:
    body = ",".join(fields)
    return f"${body}*{nmea_checksum(body):02X}\r\n".encode("ascii")


class NmeaForger:
    """Forges a fraction of epochs. `forge(sentences) -> sentences`; `log` lists (epoch index, kind, detail)."""

    def __init__(self, seed: int = 0, fraction: float = 1.0, kinds=KINDS, one_sentence: bool = False,
                 spacing: int = 0):
        """fraction: chance an epoch is forged; spacing: clean epochs at least between two forged ones (0: none),
        to study lone forgeries; kinds: a subset of KINDS; one_sentence: change one sentence, not all carriers."""
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown forgery kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        self.rng = random.Random(seed)
        self.fraction = fraction
        self.kinds = tuple(kinds)
        self.one_sentence = one_sentence
        self.spacing = spacing
        self.epochs = 0
        self._last_forged = -10 ** 9
        self.log: List[Tuple[int, str, str]] = []

    def forge(self, sentences: List[bytes]) -> List[bytes]:
        k = self.epochs
        self.epochs += 1
        if self.rng.random() >= self.fraction or k - self._last_forged <= self.spacing:
            return sentences
        kind = self.rng.choice(self.kinds)
        parsed = [_split(s) for s in sentences]
        carriers = [i for i, p in enumerate(parsed) if p and self._field(kind, p) is not None]
        if not carriers:
            return sentences
        if self.one_sentence:
            carriers = [self.rng.choice(carriers)]
        edit = self._edit(kind, parsed[carriers[0]])
        if edit is None:
            return sentences
        out = list(sentences)
        for i in carriers:
            carrier = parsed[i]
            assert carrier is not None          # carriers parsed, and hold the field
            typ, fields = carrier
            fields = list(fields)
            idx = self._field(kind, parsed[i])
            assert idx is not None
            fields[idx] = edit(fields[idx], typ)
            out[i] = _join(fields)
        self._last_forged = k
        self.log.append((k, kind, f"{len(carriers)} sentence(s)"))
        return out

    @staticmethod
    def _field(kind: str, p) -> Optional[int]:
        typ, fields = p
        name = {"hemisphere": "ns"}.get(kind, kind)
        idx = _FIELDS.get(typ, {}).get(name)
        return idx if idx is not None and idx < len(fields) and fields[idx] else None

    def _edit(self, kind: str, p):
        """A function (field text, sentence type) -> forged text, the same change for every carrier."""
        r = self.rng
        if kind == "hemisphere":
            return lambda text, typ: _HEMI.get(text, text)
        if kind == "hdop":
            value = r.choice(("0.0", "0.1", "99.9"))
            return lambda text, typ: value
        if kind == "quality":
            value = r.choice(("2", "4", "5", "6"))
            return lambda text, typ: value
        text = p[1][self._field(kind, p)]
        digits = [j for j, ch in enumerate(text) if ch.isdigit()]
        if not digits:
            return None
        j = r.choice(digits)
        new = r.choice([d for d in "0123456789" if d != text[j]])

        def change(t: str, typ: str, j=j, new=new) -> str:
            return t[:j] + new + t[j + 1:] if j < len(t) and t[j].isdigit() else t
        return change
