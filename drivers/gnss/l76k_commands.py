"""The L76K's own configuration sentences (CASIC `$PCASnn`) and the rules for choosing baud, rate and output.

Commands (from the CASIC / Quectel L76K protocol; every one ends in the usual NMEA '*HH' XOR checksum):
  $PCAS00                save the current configuration to flash
  $PCAS01,br             baud: 0=4800 1=9600 2=19200 3=38400 4=57600 5=115200
  $PCAS02,ms             fix interval in ms: 1000, 500 or 200 (1, 2, 5 Hz)
  $PCAS03,nGGA,nGLL,nGSA,nGSV,nRMC,nVTG,nZDA,nANT,nDHV,nLPS,,,nUTC,nGST,,,,nTIM
                         output each sentence every n fixes (0 = off, 1..9), empty field = unchanged
  $PCAS04,mode           constellations, a bit set: 1 GPS, 2 BeiDou, 4 GLONASS (7 = all three)
  $PCAS10,rs             restart: 0 hot, 1 warm, 2 cold, 3 factory reset and cold

The module starts at 9600 baud, 1 Hz, all standard sentences, which nearly fills the line. Rates above 1 Hz
therefore need 115200 baud and a reduced sentence set (GGA + RMC carry everything the autopilot uses).
Why: docs/design-notes/estimation-and-drivers.md, "GNSS driver".
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import List, Tuple

from drivers.gnss.nmea_stream import nmea_sentence

BAUD_CODES = {4800: 0, 9600: 1, 19200: 2, 38400: 3, 57600: 4, 115200: 5}
CODE_BAUDS = {v: k for k, v in BAUD_CODES.items()}
FIX_INTERVALS_MS = {1.0: 1000, 2.0: 500, 5.0: 200}
DEFAULT_BAUD = 9600
FAST_BAUD = 115200
# Order in which auto-detection tries bauds: the factory default, the fast one, then the rest.
BAUD_SEARCH_ORDER = (9600, 115200, 38400, 57600, 19200, 4800)

GPS, BEIDOU, GLONASS = 1, 2, 4
RESTART_KINDS = {"hot": 0, "warm": 1, "cold": 2, "factory": 3}

# Mean bytes per epoch of each output, measured on the gpsd L76K capture (GSA: three lines, GSV: seven lines
# for 20-odd satellites, ANT: the 31-byte antenna TXT, which the module repeats every fifth epoch).
SENTENCE_BYTES = {"gga": 74, "gll": 52, "gsa": 150, "gsv": 448, "rmc": 75, "vtg": 38, "zda": 38, "ant": 6}
MAX_LINE_LOAD = 0.95    # fraction of the line's capacity an output set may fill (factory set at 9600: 0.92)


class GnssSetupError(ValueError):
    """A GNSS baud / rate / output combination the L76K cannot deliver, with what to do instead."""


@dataclass(frozen=True)
class SentenceSelection:
    """How often (every n fixes, 0 = off) the L76K outputs each sentence: the PCAS03 fields we use."""

    gga: int = 1
    gll: int = 1
    gsa: int = 1
    gsv: int = 1
    rmc: int = 1
    vtg: int = 1
    zda: int = 1
    ant: int = 1

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or not 0 <= v <= 9:
                raise GnssSetupError(f"PCAS03 {f.name}: {v!r} is not an output period 0..9 (every n fixes)")

    def bytes_per_epoch(self) -> float:
        return sum(SENTENCE_BYTES[f.name] / getattr(self, f.name) for f in fields(self) if getattr(self, f.name))


FACTORY_SELECTION = SentenceSelection()
FAST_SELECTION = SentenceSelection(gga=1, gll=0, gsa=0, gsv=0, rmc=1, vtg=0, zda=0, ant=0)


def pcas00_save() -> bytes:
    return nmea_sentence("PCAS00")


def pcas01_baud(baud: int) -> bytes:
    if baud not in BAUD_CODES:
        raise GnssSetupError(f"baud {baud}: the L76K supports {sorted(BAUD_CODES)}")
    return nmea_sentence(f"PCAS01,{BAUD_CODES[baud]}")


def fix_interval_ms(rate_hz: float) -> int:
    ms = FIX_INTERVALS_MS.get(float(rate_hz))
    if ms is None:
        raise GnssSetupError(f"rate_hz {rate_hz}: the L76K fix interval may be 1000, 500 or 200 ms "
                             f"(rate_hz 1, 2 or 5)")
    return ms


def pcas02_rate(rate_hz: float) -> bytes:
    return nmea_sentence(f"PCAS02,{fix_interval_ms(rate_hz)}")


def pcas03_output(sel: SentenceSelection) -> bytes:
    f = (sel.gga, sel.gll, sel.gsa, sel.gsv, sel.rmc, sel.vtg, sel.zda, sel.ant)
    return nmea_sentence("PCAS03," + ",".join(str(v) for v in f) + ",0,0,,,0,0,,,,0")


def pcas04_constellations(mask: int) -> bytes:
    if not isinstance(mask, int) or not 1 <= mask <= 7:
        raise GnssSetupError(f"constellation mask {mask!r}: use a sum of GPS=1, BEIDOU=2, GLONASS=4 (1..7)")
    return nmea_sentence(f"PCAS04,{mask}")


def pcas10_restart(kind: str = "hot") -> bytes:
    if kind not in RESTART_KINDS:
        raise GnssSetupError(f"restart {kind!r}: choose one of {sorted(RESTART_KINDS)}")
    return nmea_sentence(f"PCAS10,{RESTART_KINDS[kind]}")


def line_load(rate_hz: float, baud: int, sel: SentenceSelection) -> float:
    """Fraction of a baud's capacity (8N1: 10 bits a byte) the output set needs at a rate."""
    return sel.bytes_per_epoch() * rate_hz * 10.0 / baud


def check_link(rate_hz: float, baud: int, sel: SentenceSelection = FACTORY_SELECTION) -> None:
    """Raise GnssSetupError, naming the fix, when the module cannot send `sel` at `rate_hz` over `baud`."""
    fix_interval_ms(rate_hz)
    if baud not in BAUD_CODES:
        raise GnssSetupError(f"baud {baud}: the L76K supports {sorted(BAUD_CODES)}")
    if rate_hz > 1.0 and baud < FAST_BAUD:
        raise GnssSetupError(
            f"rate_hz {rate_hz:g} needs {FAST_BAUD} baud, the port is set to {baud}: set sensors.gnss.baud to "
            f"{FAST_BAUD} and let the driver configure the module (`autopilot bench gps --configure`), or use "
            f"rate_hz 1")
    load = line_load(rate_hz, baud, sel)
    if load > MAX_LINE_LOAD:
        raise GnssSetupError(
            f"the selected sentences (~{sel.bytes_per_epoch():.0f} bytes an epoch) at {rate_hz:g} Hz need "
            f"{load:.0%} of {baud} baud: reduce the output to GGA + RMC (PCAS03) or lower the rate")


def configuration_plan(rate_hz: float, baud: int) -> Tuple[SentenceSelection, List[bytes]]:
    """What to send, after the baud is set, for a rate: (output selection, commands in order).

    1 Hz keeps the factory sentence set; faster rates switch to GGA + RMC first so the line never overfills
    while the rate changes.
    """
    sel = FACTORY_SELECTION if rate_hz <= 1.0 else FAST_SELECTION
    check_link(rate_hz, baud, sel)
    return sel, [pcas03_output(sel), pcas02_rate(rate_hz)]
