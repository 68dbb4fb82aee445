"""NMEA sentences out of a raw serial byte stream that may also carry CASIC binary frames.

An L76K (CASIC AT6558R) ships emitting CASIC binary frames between - and sometimes inside - its NMEA lines,
and a serial line cuts, doubles and corrupts bytes. `NmeaFramer.feed(data)` takes bytes in chunks of any size
and returns the sentences whose checksum is right; everything else is dropped and counted. It never raises.

Framing rules:
- A sentence starts at '$' and ends at CR or LF. Its body is printable ASCII; '*HH' (hex XOR of the body)
  must close it. No checksum, a wrong checksum, a non-ASCII byte inside, a new '$' before the line end, or
  more than `max_sentence_len` bytes: dropped and counted.
- A CASIC frame is 0xBA 0xCE, payload length (u16 LE), class, id, payload, checksum (u32 LE):
  checksum = (id << 24) + (class << 16) + length, plus the payload as little-endian u32 words, mod 2**32.
  A frame whose checksum is right is cut out of the stream wherever it sits, even inside a sentence, so the
  sentence around it survives. A header whose frame does not check out is treated as stray bytes.
- Bytes belonging to no sentence and no valid frame are garbage (CR, LF and spaces between lines are not).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, fields
from functools import reduce
from operator import xor
from typing import List

CASIC_SYNC = b"\xba\xce"
CASIC_OVERHEAD = 10            # sync 2 + length 2 + class 1 + id 1 + checksum 4
CASIC_MAX_PAYLOAD = 1024       # longer declared payloads are taken as corruption, not waited for
NMEA_MAX_LEN = 255             # '$' to the last checksum digit; NMEA says 82, MTK's PMTKCHN runs to 202

_HEX = b"0123456789ABCDEF"
_HEX_DIGITS = frozenset(b"0123456789ABCDEFabcdef")
_START = re.compile(rb"[$\xba]")
# First byte that cannot continue a sentence body: anything outside printable ASCII, or '$'.
_SENTENCE_STOP = re.compile(rb"[^\x20-\x23\x25-\x7e]")
_WHITESPACE = b"\r\n "
_LINE_ENDS = (b"\r\n", b"\n", b"\r")


def nmea_checksum(body) -> int:
    """XOR of the bytes between '$' and '*' (str or bytes)."""
    if isinstance(body, str):
        body = body.encode("ascii")
    return reduce(xor, body, 0)


def nmea_sentence(body: str) -> bytes:
    """'$' + body + '*HH' + CRLF, the wire form of a sentence body such as 'PCAS01,5'."""
    raw = body.encode("ascii")
    c = reduce(xor, raw, 0)
    return b"$" + raw + b"*" + bytes((_HEX[c >> 4], _HEX[c & 15])) + b"\r\n"


def casic_checksum(msg_class: int, msg_id: int, payload: bytes) -> int:
    """CASIC frame checksum over class, id, length and the payload taken as u32 LE words."""
    n = len(payload)
    total = (msg_id << 24) + (msg_class << 16) + n
    if n % 4:
        payload = payload + b"\x00" * (4 - n % 4)
    for (word,) in struct.iter_unpack("<I", payload):
        total += word
    return total & 0xFFFFFFFF


def casic_frame(msg_class: int, msg_id: int, payload: bytes) -> bytes:
    """A complete CASIC binary frame (payload length must be a multiple of 4, as the protocol requires)."""
    if len(payload) % 4 or len(payload) > CASIC_MAX_PAYLOAD:
        raise ValueError(f"CASIC payload length {len(payload)}: must be a multiple of 4 and <= {CASIC_MAX_PAYLOAD}")
    return (CASIC_SYNC + struct.pack("<HBB", len(payload), msg_class, msg_id) + payload
            + struct.pack("<I", casic_checksum(msg_class, msg_id, payload)))


@dataclass
class FramerCounters:
    """What the framer has seen since it was created (counts only grow)."""

    sentences: int = 0          # sentences with a correct checksum, returned to the caller
    bad_checksum: int = 0       # well-formed '*HH' that does not match the body
    no_checksum: int = 0        # line without '*HH' (some receivers' proprietary sentences, or a cut '*')
    truncated: int = 0          # sentence cut by a new '$', a stray binary byte, or overlong
    binary_frames: int = 0      # CASIC frames with a correct checksum, cut out
    binary_bytes: int = 0       # bytes of those frames
    garbage_bytes: int = 0      # bytes in no sentence and no valid frame (bad baud, noise, broken frames)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class NmeaFramer:
    """Incremental framer: `feed(bytes) -> [sentence, ...]`, each sentence a str without its line ending.

    Returned strings keep the leading '$' and the '*HH' checksum (what pynmea2.parse expects) and have
    their checksum verified. After each feed, `gaps[i]` tells whether anything was dropped (a bad line,
    stray bytes, a reset) between sentence i and the good sentence before it - binary frames cut out
    cleanly do not count. Bytes that might still start a sentence or a frame are held until more arrive
    (at most `max_sentence_len` or one CASIC frame).
    """

    def __init__(self, max_sentence_len: int = NMEA_MAX_LEN):
        self.max_sentence_len = max_sentence_len
        self.counters = FramerCounters()
        self.gaps: List[bool] = []     # per sentence of the last feed(): was anything lost just before it?
        self._buf = bytearray()
        self._drops_seen = 0
        self._force_gap = False

    def reset(self) -> None:
        """Forget held bytes (after reopening the port or changing baud); counters are kept."""
        self._buf.clear()
        self._force_gap = True

    def _drops(self) -> int:
        c = self.counters
        return c.garbage_bytes + c.truncated + c.bad_checksum + c.no_checksum

    def feed(self, data: bytes) -> List[str]:
        if data:
            self._buf += data
        buf = self._buf
        out: List[str] = []
        self.gaps = []
        c = self.counters
        i = 0
        n = len(buf)
        while i < n:
            m = _START.search(buf, i)
            if m is None:
                self._count_garbage(buf, i, n)
                i = n
                break
            j = m.start()
            if j > i and not (j - i <= 2 and buf[i:j] in _LINE_ENDS):     # the usual case: just CRLF
                self._count_garbage(buf, i, j)
            i = j
            if buf[i] == 0xBA:
                size = self._frame_at(buf, i)
                if size is None:                 # might still become a frame: wait for more bytes
                    break
                if size > 0:
                    c.binary_frames += 1
                    c.binary_bytes += size
                    i += size
                else:
                    c.garbage_bytes += 1
                    i += 1
                continue
            # A sentence starts at i.
            k = i + 1
            done = False
            while True:
                s = _SENTENCE_STOP.search(buf, k, min(n, i + self.max_sentence_len + 1))
                if s is None:
                    if n - i > self.max_sentence_len:
                        # Overlong: nothing in the window can start a sentence or a frame, so skip it whole.
                        c.truncated += 1
                        i += self.max_sentence_len + 1
                        done = True
                    break                        # else wait for the rest of the line
                k = s.start()
                b = buf[k]
                if b in (0x0D, 0x0A):
                    self._finish(bytes(buf[i:k]), out)
                    i = k + 1
                    done = True
                    break
                if b == 0xBA:
                    size = self._frame_at(buf, k)
                    if size is None:
                        break                    # wait: a frame may be arriving in the middle of this line
                    if size > 0:                 # excise the frame; the sentence continues after it
                        c.binary_frames += 1
                        c.binary_bytes += size
                        del buf[k:k + size]
                        n -= size
                        continue
                c.truncated += 1                 # '$' or a stray byte cut the sentence
                i = k
                done = True
                break
            if not done:
                break
        del buf[:i]
        return out

    # -- helpers -------------------------------------------------------------------------------------
    def _count_garbage(self, buf: bytearray, i: int, j: int) -> None:
        chunk = bytes(buf[i:j])
        self.counters.garbage_bytes += len(chunk.translate(None, _WHITESPACE))

    @staticmethod
    def _frame_at(buf: bytearray, i: int):
        """Size of a valid CASIC frame at i, 0 if there is none, None if more bytes are needed to tell."""
        n = len(buf)
        if i + 1 >= n:
            return None
        if buf[i + 1] != 0xCE:
            return 0
        if i + 4 > n:
            return None
        length = buf[i + 2] | (buf[i + 3] << 8)
        if length > CASIC_MAX_PAYLOAD or length % 4:
            return 0
        size = length + CASIC_OVERHEAD
        if i + size > n:
            return None
        msg_class, msg_id = buf[i + 4], buf[i + 5]
        payload = bytes(buf[i + 6:i + 6 + length])
        (given,) = struct.unpack_from("<I", buf, i + 6 + length)
        return size if casic_checksum(msg_class, msg_id, payload) == given else 0

    def _finish(self, raw: bytes, out: List[str]) -> None:
        c = self.counters
        star = len(raw) - 3
        if star < 1 or raw[star] != 0x2A:        # '*'
            c.no_checksum += 1
            return
        if raw[star + 1] not in _HEX_DIGITS or raw[star + 2] not in _HEX_DIGITS:
            c.bad_checksum += 1
            return
        given = int(raw[star + 1:], 16)
        if reduce(xor, raw[1:star], 0) != given:
            c.bad_checksum += 1
            return
        c.sentences += 1
        out.append(raw.decode("ascii"))
        drops = self._drops()
        self.gaps.append(self._force_gap or drops != self._drops_seen)
        self._drops_seen = drops
        self._force_gap = False
