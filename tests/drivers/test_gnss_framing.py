"""NMEA framing out of a byte stream with CASIC binary, cut, doubled and corrupted lines; PCAS checksums."""
import random

import pytest

from drivers.gnss import l76k_commands as cmd
from drivers.gnss.nmea_stream import NmeaFramer, casic_checksum, casic_frame, nmea_checksum, nmea_sentence

GGA = b"$GNGGA,055234.200,4739.71890,N,12219.58362,W,1,14,0.9,76.5,M,-21.6,M,,*4A\r\n"
RMC = b"$GNRMC,055234.200,A,4739.71890,N,12219.58362,W,0.00,286.35,050826,,,A,V*11\r\n"
NAV_PV = casic_frame(0x01, 0x03, bytes(range(80)))


def feed_all(framer, data, chunk=None, seed=0):
    out = []
    if chunk is None:
        return framer.feed(data)
    rng = random.Random(seed)
    i = 0
    while i < len(data):
        k = rng.randint(1, chunk)
        out += framer.feed(data[i:i + k])
        i += k
    return out


def test_checksums_match_the_real_capture_and_the_l76k_manual():
    assert nmea_sentence("GNGGA,055234.200,4739.71890,N,12219.58362,W,1,14,0.9,76.5,M,-21.6,M,,") == GGA
    assert cmd.pcas01_baud(115200) == b"$PCAS01,5*19\r\n"      # as printed in the L76K manual
    assert cmd.pcas00_save() == b"$PCAS00*01\r\n"
    for c in (cmd.pcas01_baud(9600), cmd.pcas02_rate(5), cmd.pcas03_output(cmd.FAST_SELECTION),
              cmd.pcas04_constellations(cmd.GPS | cmd.GLONASS), cmd.pcas10_restart("cold")):
        body, ck = c[1:].split(b"*")
        assert int(ck.strip(), 16) == nmea_checksum(body)
    assert cmd.pcas02_rate(2) == nmea_sentence("PCAS02,500")
    assert cmd.pcas03_output(cmd.FAST_SELECTION).startswith(b"$PCAS03,1,0,0,0,1,0,0,0,")


def test_bad_pcas_arguments_say_what_is_allowed():
    with pytest.raises(cmd.GnssSetupError, match="4800"):
        cmd.pcas01_baud(14400)
    with pytest.raises(cmd.GnssSetupError, match="1000, 500 or 200"):
        cmd.pcas02_rate(10)
    with pytest.raises(cmd.GnssSetupError, match="GLONASS"):
        cmd.pcas04_constellations(0)
    with pytest.raises(cmd.GnssSetupError, match="115200"):
        cmd.check_link(5, 9600)
    with pytest.raises(cmd.GnssSetupError, match="GGA \\+ RMC"):
        cmd.check_link(1, 4800)                 # the factory sentence set does not fit 4800 baud
    cmd.check_link(1, 9600)                     # the factory state is deliverable
    cmd.check_link(5, 115200)


def test_casic_frame_checksum_is_word_sum():
    payload = bytes([1, 0, 0, 0, 2, 0, 0, 0])
    assert casic_checksum(0x05, 0x01, payload) == (0x01 << 24) + (0x05 << 16) + 8 + 1 + 2
    assert NAV_PV[:2] == b"\xba\xce" and len(NAV_PV) == 90


def test_clean_sentences_pass_in_any_chunking():
    for chunk in (None, 1, 7, 64):
        f = NmeaFramer()
        out = feed_all(f, GGA + RMC, chunk)
        assert out == [GGA.decode().strip(), RMC.decode().strip()]
        assert f.counters.sentences == 2 and f.counters.garbage_bytes == 0


def test_binary_frames_between_and_inside_sentences_are_cut_out_and_counted():
    stream = NAV_PV + GGA[:20] + NAV_PV + GGA[20:] + NAV_PV + NAV_PV + RMC + NAV_PV
    for chunk in (None, 1, 13):
        f = NmeaFramer()
        out = feed_all(f, stream, chunk)
        assert out == [GGA.decode().strip(), RMC.decode().strip()]
        assert f.counters.binary_frames == 5
        assert f.counters.binary_bytes == 5 * len(NAV_PV)
        assert f.counters.garbage_bytes == 0


def test_cut_doubled_and_corrupted_lines_are_dropped_and_counted():
    corrupted = bytearray(RMC)
    corrupted[30] ^= 0x01                                       # one digit of the latitude
    stream = (GGA[:40] + GGA                                    # cut line, then the line again
              + GGA                                             # doubled line
              + bytes(corrupted)                                # bad checksum
              + b"$POLYN,TIME,RESTART\r\n"                       # no checksum
              + b"$GNRMC,055234.200,A*ZZ\r\n"                    # checksum not hex
              + RMC[:-12] + b"\x85" + RMC[-11:]                 # stray binary byte inside a line
              + RMC)
    f = NmeaFramer()
    out = f.feed(stream)
    assert out == [GGA.decode().strip()] * 2 + [RMC.decode().strip()]
    c = f.counters
    assert (c.truncated, c.bad_checksum, c.no_checksum) == (2, 2, 1)


def test_corrupted_binary_frame_is_garbage_but_the_next_sentence_survives():
    broken = bytearray(NAV_PV)
    broken[40] ^= 0xFF
    f = NmeaFramer()
    out = f.feed(bytes(broken) + GGA)
    assert out == [GGA.decode().strip()]
    assert f.counters.binary_frames == 0 and f.counters.garbage_bytes > 0


def test_overlong_line_is_dropped_without_swallowing_the_next():
    f = NmeaFramer()
    out = f.feed(b"$GPXXX," + b"A" * 400 + b"\r\n" + GGA)
    assert out == [GGA.decode().strip()]
    assert f.counters.truncated == 1


def test_random_bytes_never_raise_and_never_grow_the_buffer():
    rng = random.Random(1234)
    for _ in range(300):
        f = NmeaFramer()
        for _ in range(20):
            data = rng.randbytes(rng.randint(0, 400))
            if rng.random() < 0.3:                               # sprinkle protocol bytes
                data += rng.choice([b"$", b"\xba\xce", b"*", b"\r\n", GGA[:30], NAV_PV[:8]])
            for s in f.feed(data):
                assert s.startswith("$") and int(s[-2:], 16) == nmea_checksum(s[1:-3])
        assert len(f._buf) <= 1034 + 255


def test_random_bytes_between_sentences_keep_every_sentence():
    rng = random.Random(99)
    lines = [GGA, RMC] * 50
    stream = b"".join(rng.randbytes(rng.randint(0, 40)).replace(b"$", b"#") + line for line in lines)
    f = NmeaFramer()
    out = feed_all(f, stream, 50)
    # Random bytes right before a '$' can only add a truncated pseudo-sentence, never eat a real one.
    assert out == [line.decode().strip() for line in lines]


def test_driver_survives_random_bytes_and_random_checksummed_sentences():
    """Fuzz the whole driver (framer, pynmea2, epoch merge): real sentences with random fields, correctly
    checksummed, and random bytes between them. Nothing may raise; positions stay on the globe."""
    from drivers.gnss.l76k import L76K
    from hil.devices.serial_ports import InMemorySerial

    templates = [x.decode().strip()[1:-3] for x in (GGA, RMC)] + [
        "GNGLL,4739.71890,N,12219.58362,W,055234.200,A,A", "GNVTG,286.35,T,,M,0.00,N,0.00,K,A",
        "GNZDA,055234.200,05,08,2026,00,00", "GNGSA,A,3,02,07,14,15,17,20,22,30,,,,,1.5,0.9,1.2,1"]
    junk = ["", "-", ".", "..", "1e5", "nan", "inf", "-0", "99999999", "0.0.0", "A", "V", "N", "x", ",",
            "235960.000", "240000", "9060.0", "320299", "000000", "-12.5", "1" * 40]
    rng = random.Random(2024)
    port = InMemorySerial(9600)
    t = [0.0]
    drv = L76K(port.opener, baud=9600, clock=lambda: t[0])
    drv.open()
    fixes = []
    for n in range(6000):
        hms = f"{n // 36000 % 24:02d}{n // 600 % 60:02d}{n // 10 % 60:02d}.000"     # a new epoch every 6
        fields = templates[n % len(templates)].replace("055234.200", hms).split(",")
        for _ in range(rng.choice([0, 0, 1, 2])):
            k = rng.randrange(1, len(fields))
            fields[k] = rng.choice(junk) if rng.random() < 0.7 else "".join(
                rng.choice("0123456789.-NSEWAV") for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.1:
            fields = fields[:rng.randrange(1, len(fields))]
        port.device_write(nmea_sentence(",".join(fields)))
        if rng.random() < 0.1:
            port.device_write(rng.randbytes(rng.randint(1, 50)))
        t[0] += 0.05
        fixes += drv.poll()
    drv.close()
    fixes += drv.poll()
    st = drv.stats()
    assert st["parse_errors"] > 500 and st["fixes"] > 500          # both paths were exercised
    for f in fixes:
        if f.valid:
            assert -90 <= f.lat_deg <= 90 and -180 <= f.lon_deg <= 180
            assert f.sog_mps is None or 0 <= f.sog_mps < 1e6
