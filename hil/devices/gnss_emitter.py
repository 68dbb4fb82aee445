"""The L76K's NMEA output, formatted from plant truth plus a receiver noise model (pure: no I/O, no clock).

One epoch, in the order and with the talkers of the real module (gpsd capture quectel-l76k-nmea.log):
    GNGGA, GNGLL, GNGSA x3 (GPS, BeiDou, GLONASS; NMEA 4.1 system id), GPGSV.., BDGSV.., GLGSV..,
    GNRMC (with the 4.1 navigation-status field), GNVTG, GNZDA, and GPTXT "ANTENNA OK" every 5th epoch.
Each output can be thinned or switched off like the module's PCAS03, constellations chosen like PCAS04.

Noise, per horizontal axis: the datasheet figure CEP = 2.0 m (config `cep_m`) means a per-axis sigma of
cep_m / 1.1774 * HDOP in total - the same rule the driver reports as pos_std_m. Of that, a first-order
Gauss-Markov bias carries `bias_sigma_m` (correlation time `bias_tau_s`) and white noise the rest
(sqrt(sigma^2 - bias^2), or none when the bias alone exceeds sigma). Velocity north/east get white noise
`speed_noise_mps`; altitude gets white noise 1.5x the horizontal sigma.

Options for testing the driver: `casic_per_epoch` CASIC binary frames (NAV-PV sized) inserted at random
byte positions of an epoch - also inside sentences - and `corrupt_per_byte`, the probability that a byte is
replaced by a different random byte. Both are drawn from the emitter's seeded generator.

Speed: the sky (GSV, GSA) is formatted once per constellation change and reused; an epoch costs a few
string formats and checksums (see benchmarks/bench_gnss.py).
"""
from __future__ import annotations

import datetime as _dt
import math
import random
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from autopilot.vocab.config import GnssConfig
from drivers.gnss import l76k_commands as cmd
from drivers.gnss.l76k_commands import SentenceSelection
from drivers.gnss.l76k_epoch import CEP_TO_SIGMA, KNOT_MPS
from drivers.gnss.nmea_stream import casic_frame, nmea_checksum

EARTH_RADIUS_M = 6_371_008.8
_HEX = "0123456789ABCDEF"
DEFAULT_UTC_START = _dt.datetime(2026, 8, 5, 5, 52, 34, tzinfo=_dt.timezone.utc)

# A fixed sky like the capture's: (prn, elevation deg, azimuth deg, SNR dB-Hz or None), per constellation.
_Satellite = Tuple[int, Optional[int], Optional[int], Optional[int]]
_SKY: Dict[int, Tuple[str, int, List[_Satellite]]] = {
    cmd.GPS: ("GP", 1, [(1, 17, 83, 3), (2, 20, 56, 27), (7, 18, 123, 25), (8, None, None, 15), (14, 79, 41, 29),
                        (15, 31, 297, 21), (17, 54, 166, 28), (19, 24, 192, 23), (20, 47, 263, 22),
                        (22, 78, 280, 15), (24, 7, 305, None), (30, 57, 127, 31)]),
    cmd.BEIDOU: ("BD", 4, [(13, 19, 43, 17), (27, 38, 127, 33), (37, 36, 91, 24)]),
    cmd.GLONASS: ("GL", 2, [(74, 52, 302, None), (82, 25, 34, 33), (73, 59, 49, 31), (80, 10, 81, 21),
                            (75, 7, 276, None), (65, 19, 333, None), (84, 12, 149, 26), (83, 37, 97, 19),
                            (71, 23, 216, None), (72, 43, 277, None)]),
}


@dataclass(frozen=True)
class GnssTruth:
    """The antenna's true state for one epoch (the plant's truth channel)."""

    lat_deg: float
    lon_deg: float
    alt_m: float = 0.0
    sog_mps: float = 0.0            # speed over ground [m/s]
    cog_rad: float = 0.0            # course over ground, clockwise from true north [rad]


def antenna_truth(frame, cfg: GnssConfig, north_m: float, east_m: float, heading_rad: float,
                  surge_mps: float, sway_mps: float, yaw_rate_rps: float, alt_m: float = 0.0) -> GnssTruth:
    """GnssTruth at the antenna from the plant's CG state.

    frame: autopilot.vocab.geodesy.LocalFrame of the NED origin; north_m/east_m: CG position [m]; heading [rad];
    surge/sway: velocity over ground in body FRD [m/s]; yaw rate [rad/s]. The antenna sits at
    (cfg.antenna_x_m, cfg.antenna_y_m) in body FRD, so it moves by r x lever arm on top of the CG."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    ax, ay = cfg.antenna_x_m, cfg.antenna_y_m
    lat, lon = frame.to_wgs84(north_m + c * ax - s * ay, east_m + s * ax + c * ay)
    u, v = surge_mps - yaw_rate_rps * ay, sway_mps + yaw_rate_rps * ax
    vn, ve = c * u - s * v, s * u + c * v
    return GnssTruth(lat_deg=lat, lon_deg=lon, alt_m=alt_m, sog_mps=math.hypot(vn, ve),
                     cog_rad=math.atan2(ve, vn))


def _sentence(body: str) -> bytes:
    c = nmea_checksum(body)
    return f"${body}*{_HEX[c >> 4]}{_HEX[c & 15]}\r\n".encode("ascii")


def _lat_field(lat_deg: float) -> str:
    units = round(abs(lat_deg) * 6_000_000)          # 1e-5 minute units, exact integer formatting
    deg, rem = divmod(units, 6_000_000)
    return f"{deg:02d}{rem // 100_000:02d}.{rem % 100_000:05d},{'N' if lat_deg >= 0 else 'S'}"


def _lon_field(lon_deg: float) -> str:
    units = round(abs(lon_deg) * 6_000_000)
    deg, rem = divmod(units, 6_000_000)
    return f"{deg:03d}{rem // 100_000:02d}.{rem % 100_000:05d},{'E' if lon_deg >= 0 else 'W'}"


class L76KEmitter:
    """Formats L76K epochs. `epoch(t_s, truth)` -> list of byte segments (sentences, maybe binary frames).

    Position errors have sigma = cfg.cep_m / 1.1774 * hdop per axis. The default HDOP of 1.0 gives the
    receiver's datasheet CEP (2.0 m for the L76K), which is also what the driver reports as pos_std_m.
    """

    def __init__(self, cfg: Optional[GnssConfig] = None, *, seed: int = 0,
                 utc_start: _dt.datetime = DEFAULT_UTC_START, noise: bool = True, hdop: float = 1.0,
                 sats: int = 14, geoid_sep_m: float = -21.6, selection: SentenceSelection = cmd.FACTORY_SELECTION,
                 constellations: int = cmd.GPS | cmd.BEIDOU | cmd.GLONASS,
                 casic_per_epoch: float = 0.0, corrupt_per_byte: float = 0.0):
        self.cfg = cfg if cfg is not None else GnssConfig()
        self.rng = random.Random(seed)
        self.utc_start = utc_start
        self.noise = noise
        self.hdop = hdop
        self.sats = sats
        self.geoid_sep_m = geoid_sep_m
        self.selection = selection
        self.casic_per_epoch = casic_per_epoch
        self.corrupt_per_byte = corrupt_per_byte
        self.has_fix = True                           # False: the receiver reports no position (q 0, V)
        self.forger = None                            # hil.devices.nmea_forgery.NmeaForger: forged epochs (gps-forge)
        self.forged_epochs = 0
        self.epochs = 0
        self._bias = [0.0, 0.0]
        self._bias_t: Optional[float] = None
        self._utc_start_ms = round(utc_start.timestamp() * 1000.0)
        self._day_cache: Tuple[Optional[int], str, str] = (None, "", "")
        self._set_constellations(constellations)

    # -- configuration (what PCAS03/04 change) -------------------------------------------------------------
    def _set_constellations(self, mask: int) -> None:
        self.constellations = mask
        gsa, gsv = [], []
        for system in (cmd.GPS, cmd.BEIDOU, cmd.GLONASS):
            if not mask & system:
                continue
            talker, system_id, sky = _SKY[system]
            used = [prn for prn, el, az, snr in sky if snr is not None and el is not None][:12]
            ids = ",".join([f"{p:02d}" for p in used] + [""] * (12 - len(used)))
            gsa.append(f"GNGSA,A,3,{ids},{{pdop}},{{hdop}},{{vdop}},{system_id}")
            n_msgs = (len(sky) + 3) // 4
            for k in range(n_msgs):
                chunk = sky[4 * k:4 * k + 4]
                sats = ",".join(f"{prn:02d},{'' if el is None else f'{el:02d}'},"
                                f"{'' if az is None else f'{az:03d}'},{'' if snr is None else f'{snr:02d}'}"
                                for prn, el, az, snr in chunk)
                gsv.append(_sentence(f"{talker}GSV,{n_msgs},{k + 1},{len(sky):02d},{sats},0"))
        self._gsa_templates = gsa
        self._gsv = gsv
        self._gsa_cache: dict = {}

    def _gsa(self, hdop: float) -> List[bytes]:
        key = round(hdop, 1)
        out = self._gsa_cache.get(key)
        if out is None:
            pdop, vdop = 1.6 * key + 0.06, 1.3 * key
            out = [_sentence(t.format(pdop=f"{pdop:.1f}", hdop=f"{key:.1f}", vdop=f"{vdop:.1f}"))
                   for t in self._gsa_templates]
            self._gsa_cache[key] = out
        return out

    # -- noise ------------------------------------------------------------------------------------------------
    def _position_error(self, t_s: float):
        """(north, east, up) error [m] at t_s; the bias evolves with the time since the previous epoch."""
        if not self.noise:
            return 0.0, 0.0, 0.0
        g = self.rng.gauss
        sigma = self.cfg.cep_m * CEP_TO_SIGMA * self.hdop
        sb = self.cfg.bias_sigma_m
        if self._bias_t is None:
            self._bias = [g(0.0, sb), g(0.0, sb)]
        else:
            phi = math.exp(-max(0.0, t_s - self._bias_t) / self.cfg.bias_tau_s)
            q = sb * math.sqrt(max(0.0, 1.0 - phi * phi))
            self._bias = [phi * self._bias[0] + g(0.0, q), phi * self._bias[1] + g(0.0, q)]
        self._bias_t = t_s
        sw = math.sqrt(max(0.0, sigma * sigma - sb * sb))
        return self._bias[0] + g(0.0, sw), self._bias[1] + g(0.0, sw), g(0.0, 1.5 * sigma)

    # -- one epoch ------------------------------------------------------------------------------------------
    def utc_ms(self, t_s: float) -> int:
        """UTC (ms since the Unix epoch) of the runner time t_s."""
        return self._utc_start_ms + round(t_s * 1000.0)

    def epoch(self, t_s: float, truth: GnssTruth) -> List[bytes]:
        """The sentences of the epoch at runner time t_s, as wire bytes (CRLF included), in output order."""
        k = self.epochs
        self.epochs += 1
        sel = self.selection
        utc = self.utc_ms(t_s)
        day, ms = divmod(utc, 86_400_000)
        if self._day_cache[0] != day:
            d = _dt.date(1970, 1, 1) + _dt.timedelta(days=day)
            self._day_cache = (day, f"{d.day:02d}{d.month:02d}{d.year % 100:02d}",
                               f"{d.day:02d},{d.month:02d},{d.year:04d}")
        _, ddmmyy, zda_date = self._day_cache
        h, ms = divmod(ms, 3_600_000)
        m, ms = divmod(ms, 60_000)
        s, ms = divmod(ms, 1000)
        hms = f"{h:02d}{m:02d}{s:02d}.{ms:03d}"

        if self.has_fix:
            dn, de, du = self._position_error(t_s)
            lat = truth.lat_deg + math.degrees(dn / EARTH_RADIUS_M)
            lon = truth.lon_deg + math.degrees(de / (EARTH_RADIUS_M * max(1e-6, math.cos(math.radians(lat)))))
            vn = truth.sog_mps * math.cos(truth.cog_rad)
            ve = truth.sog_mps * math.sin(truth.cog_rad)
            if self.noise and self.cfg.speed_noise_mps > 0.0:
                vn += self.rng.gauss(0.0, self.cfg.speed_noise_mps)
                ve += self.rng.gauss(0.0, self.cfg.speed_noise_mps)
            sog_kn = math.hypot(vn, ve) / KNOT_MPS
            cog_deg = math.degrees(math.atan2(ve, vn)) % 360.0
            pos = f"{_lat_field(lat)},{_lon_field(lon)}"
            alt = f"{truth.alt_m + du:.1f}"
            quality, status, mode, sats, hdop = "1", "A", "A", f"{self.sats:02d}", f"{self.hdop:.1f}"
            spd, crs = f"{sog_kn:.2f}", f"{cog_deg:.2f}"
            vtg = f"GNVTG,{crs},T,,M,{spd},N,{sog_kn * 1.852:.2f},K,A"
        else:
            pos, alt, quality, status, mode, sats, hdop = ",,,", "", "0", "V", "N", "00", "25.5"
            spd = crs = ""
            vtg = "GNVTG,,T,,M,,N,,K,N"

        out: List[bytes] = []
        if sel.gga and k % sel.gga == 0:
            out.append(_sentence(f"GNGGA,{hms},{pos},{quality},{sats},{hdop},{alt},M,"
                                 f"{self.geoid_sep_m:.1f},M,,"))
        if sel.gll and k % sel.gll == 0:
            out.append(_sentence(f"GNGLL,{pos},{hms},{status},{mode}"))
        if sel.gsa and k % sel.gsa == 0:
            out += self._gsa(self.hdop)
        if sel.gsv and k % sel.gsv == 0:
            out += self._gsv
        if sel.rmc and k % sel.rmc == 0:
            out.append(_sentence(f"GNRMC,{hms},{status},{pos},{spd},{crs},{ddmmyy},,,{mode},V"))
        if sel.vtg and k % sel.vtg == 0:
            out.append(_sentence(vtg))
        if sel.zda and k % sel.zda == 0:
            out.append(_sentence(f"GNZDA,{hms},{zda_date},00,00"))
        if sel.ant and k % (5 * sel.ant) == 0:
            out.append(b"$GPTXT,01,01,01,ANTENNA OK*35\r\n")
        if self.forger is not None:
            forged = self.forger.forge(out)
            self.forged_epochs += forged is not out
            out = forged
        if self.casic_per_epoch > 0.0:
            out = self._interleave_casic(out)
        if self.corrupt_per_byte > 0.0:
            out = [self._corrupt(seg) for seg in out]
        return out

    def _interleave_casic(self, segs: List[bytes]) -> List[bytes]:
        r = self.rng
        n = int(self.casic_per_epoch) + (1 if r.random() < self.casic_per_epoch % 1.0 else 0)
        for _ in range(n):
            i = r.randrange(len(segs)) if segs else 0
            frame = casic_frame(0x01, 0x03, r.randbytes(80))          # NAV-PV sized payload
            if not segs:
                segs = [frame]
                continue
            seg = segs[i]
            cut = r.randrange(len(seg) + 1)
            segs[i] = seg[:cut] + frame + seg[cut:]
        return segs

    def _corrupt(self, seg: bytes) -> bytes:
        p = self.corrupt_per_byte
        r = self.rng
        buf = None
        pos = -1
        while True:
            u = r.random()
            pos += 1 + (int(math.log(u) / math.log1p(-p)) if 0.0 < u and p < 1.0 else 0)
            if pos >= len(seg):
                break
            if buf is None:
                buf = bytearray(seg)
            buf[pos] ^= r.randrange(1, 256)
        return seg if buf is None else bytes(buf)

    # -- commands ----------------------------------------------------------------------------------------
    def apply_command(self, sentence: str) -> Optional[dict]:
        """Apply a checksummed '$PCASnn,...*HH' sentence; returns the device-level changes, None if not one.

        Returned keys: 'baud' (PCAS01), 'interval_ms' (PCAS02), 'restart' (PCAS10 kind), 'save' (PCAS00);
        output selection (PCAS03) and constellations (PCAS04) are applied here."""
        if not sentence.startswith("$PCAS") or len(sentence) < 9 or sentence[-3] != "*":
            return None
        body = sentence[1:-3]
        try:
            if int(sentence[-2:], 16) != nmea_checksum(body):
                return None
        except ValueError:
            return None
        parts = body.split(",")
        num, args = parts[0][4:], parts[1:]
        try:
            if num == "00":
                return {"save": True}
            if num == "01":
                return {"baud": cmd.CODE_BAUDS[int(args[0])]}
            if num == "02":
                ms = int(args[0])
                return {"interval_ms": ms} if ms in (1000, 500, 250, 200, 100) else None
            if num == "03":
                names = ("gga", "gll", "gsa", "gsv", "rmc", "vtg", "zda", "ant")
                changes = {n: int(v) for n, v in zip(names, args) if v != ""}
                self.selection = replace(self.selection, **changes)
                return {"selection": self.selection}
            if num == "04":
                mask = int(args[0])
                if not 1 <= mask <= 7:
                    return None
                self._set_constellations(mask)
                return {"constellations": mask}
            if num == "10":
                kind = int(args[0])
                if kind == 3:
                    self.selection = cmd.FACTORY_SELECTION
                    self._set_constellations(cmd.GPS | cmd.BEIDOU | cmd.GLONASS)
                return {"restart": kind}
        except (ValueError, KeyError, IndexError, cmd.GnssSetupError):
            return None
        return None
