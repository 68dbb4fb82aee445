"""The driver on a damaged stream: CASIC frames at random points, random byte corruption, cut and doubled lines.

The stream is the emulated L76K's (moving boat, 1 Hz, full sentence set). The reference is the driver's
decode of the clean stream. On the damaged stream: no exception, no fix that differs from the reference
for its epoch (a corrupted sentence must never give a wrong position), and every epoch whose GGA and RMC
lines came through undamaged decoded exactly as in the reference.
"""
import math
import random
import time

import pytest

from drivers.gnss.l76k import L76K
from drivers.gnss.nmea_stream import casic_frame
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import InMemorySerial, PtyPair

N_EPOCHS = 400


def truth_at(t):
    return GnssTruth(lat_deg=51.1079 + 2e-5 * t, lon_deg=17.0385 + 1e-5 * math.sin(t / 30),
                     alt_m=120.0, sog_mps=2.0, cog_rad=0.3)


def clean_sentences():
    """[(epoch index, sentence bytes)] of N_EPOCHS epochs."""
    em = L76KEmitter(seed=11)
    out = []
    for k in range(N_EPOCHS):
        for seg in em.epoch(float(k), truth_at(k)):
            out.append((k, seg))
    return out


def damage(sentences, seed, flip_p=1e-3, casic_every=1500, cut_p=0.02, double_p=0.02):
    """Damaged stream bytes and the set of epochs whose GGA and RMC lines are untouched."""
    rng = random.Random(seed)
    stream = bytearray()
    hit = bytearray()                 # 1 where a byte was changed (or a line cut)
    spans = {}                        # epoch -> [(start, end)] of its GGA and RMC lines
    for k, line in sentences:
        kind = line[3:6]
        if rng.random() < double_p:                          # a line doubled, sometimes as a cut prefix
            extra = line if rng.random() < 0.5 else line[:rng.randrange(1, len(line) - 2)]
            stream += extra
            hit += b"\0" * len(extra)
        start = len(stream)
        if rng.random() < cut_p:                             # a line cut short, its CRLF lost
            piece = line[:rng.randrange(1, len(line) - 2)]
            stream += piece
            hit += b"\1" * len(piece)
        else:
            stream += line
            hit += b"\0" * len(line)
        if kind in (b"GGA", b"RMC"):
            spans.setdefault(k, []).append((start, len(stream)))
    # CASIC frames at random byte positions (inside lines too), inserted back to front.
    positions = sorted(rng.sample(range(len(stream)), len(stream) // casic_every), reverse=True)
    inserts = []
    for p in positions:
        frame = casic_frame(0x01, 0x03, rng.randbytes(80))
        stream[p:p] = frame
        hit[p:p] = b"\0" * len(frame)
        inserts.append((p, len(frame)))
    for k in spans:                                          # shift the spans over the inserted frames
        shifted = []
        for a, b in spans[k]:
            da = sum(n for p, n in inserts if p <= a)
            db = sum(n for p, n in inserts if p < b)
            shifted.append((a + da, b + db))
        spans[k] = shifted
    # Random byte corruption anywhere (sentences and frames).
    i = -1
    while True:
        i += 1 + int(math.log(1.0 - rng.random()) / math.log1p(-flip_p))
        if i >= len(stream):
            break
        stream[i] ^= rng.randrange(1, 256)
        hit[i] = 1
    intact = {k for k, sp in spans.items()
              if len(sp) == 2 and not any(any(hit[a:b]) for a, b in sp)}
    return bytes(stream), intact


def decode_memory(data, seed=0):
    port = InMemorySerial(9600)
    t = [0.0]
    drv = L76K(port.opener, baud=9600, clock=lambda: t[0])
    drv.open()
    rng = random.Random(seed)
    fixes = []
    i = 0
    while i < len(data):
        n = rng.randint(1, 700)
        port.device_write(data[i:i + n])
        i += n
        t[0] += n * 10 / 9600.0                             # the bytes' time on a 9600 baud line
        fixes += drv.poll()
    drv.close()
    return drv, fixes + drv.poll()


def decode_pty(data):
    with PtyPair() as pty:
        # written as fast as the pty takes them: UTC runs ahead of the reception clock, which a live receiver
        # cannot do, so the skew check is off
        drv = L76K(pty.path, baud=9600, max_time_skew_s=None)
        drv.open()
        drv.start()
        fixes = []
        for i in range(0, len(data), 4096):                 # the loop polls while the bytes flow
            assert pty.device_write_all(data[i:i + 4096], timeout_s=10.0) == len(data[i:i + 4096])
            fixes += drv.poll()
        deadline = time.monotonic() + 10.0
        while drv.link.rx_bytes < len(data) and time.monotonic() < deadline:
            time.sleep(0.01)
        drv.close()
        assert drv.link.dropped_fixes == 0
        return drv, fixes + drv.poll()


@pytest.fixture(scope="module")
def reference():
    clean = b"".join(line for _, line in clean_sentences())
    drv, fixes = decode_memory(clean)
    assert len(fixes) == N_EPOCHS and all(f.valid for f in fixes)
    return {f.utc: f for f in fixes}


def check_against(reference, fixes, intact):
    by_utc = {}
    for f in fixes:
        if not f.valid:
            continue
        if f.utc is None:                                  # no date seen yet (first RMC/ZDA damaged)
            assert not by_utc, f"date lost after it was known: {f}"
            assert any((r.lat_deg, r.lon_deg) == (f.lat_deg, f.lon_deg) for r in reference.values()), f
            continue
        ref = reference.get(f.utc)
        assert ref is not None, f"fix at a time the receiver never sent: {f}"
        assert (f.lat_deg, f.lon_deg) == (ref.lat_deg, ref.lon_deg), f"false position: {f} vs {ref}"
        if f.sog_mps is not None:
            assert (f.sog_mps, f.cog_rad) == (ref.sog_mps, ref.cog_rad)
        if f.sats:
            assert (f.alt_m, f.sats, f.hdop) == (ref.alt_m, ref.sats, ref.hdop)
        by_utc[f.utc] = f
    utc_of_epoch = sorted(reference)
    missing = [k for k in intact if utc_of_epoch[k] not in by_utc]
    assert not missing, f"intact epochs not decoded: {missing[:10]}"
    for k in intact:                                       # intact epochs are complete, not partial
        f, ref = by_utc[utc_of_epoch[k]], reference[utc_of_epoch[k]]
        assert (f.alt_m, f.sog_mps, f.sats) == (ref.alt_m, ref.sog_mps, ref.sats)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_damaged_stream_in_memory_no_false_fix_every_intact_epoch(reference, seed):
    data, intact = damage(clean_sentences(), seed)
    drv, fixes = decode_memory(data, seed)
    stats = drv.stats()
    assert 0.6 * N_EPOCHS < len(intact) < 0.98 * N_EPOCHS      # the damage is real, and leaves work to do
    check_against(reference, fixes, intact)
    assert stats["bad_checksum"] > 20 and stats["truncated"] > 5
    assert stats["binary_frames"] > 100 and stats["binary_bytes"] == 90 * stats["binary_frames"]


def test_damaged_stream_through_pty_and_pyserial(reference):
    data, intact = damage(clean_sentences(), seed=7)
    drv, fixes = decode_pty(data)
    assert drv.link.rx_bytes == len(data) and drv.stats()["read_errors"] == 0
    check_against(reference, fixes, intact)


def test_heavier_corruption_still_never_gives_a_false_fix(reference):
    data, intact = damage(clean_sentences(), seed=21, flip_p=1e-2, casic_every=300, cut_p=0.1, double_p=0.1)
    drv, fixes = decode_memory(data, 21)
    check_against(reference, fixes, intact)
    assert drv.stats()["valid_fixes"] > 10


def test_emitter_damage_options_feed_the_driver_without_false_fixes():
    """The sim's own noise knobs: CASIC frames and corruption from the emitter itself."""
    clean_em = L76KEmitter(seed=3)
    dirty_em = L76KEmitter(seed=3, casic_per_epoch=2.0, corrupt_per_byte=5e-4)
    dirty_em.rng = random.Random(99)                         # damage draws must not shift the clean noise
    port = InMemorySerial(115200)
    drv = L76K(port.opener, baud=115200, clock=lambda: 0.0)
    drv.open()
    clean_ref = {}
    ref_drv_port = InMemorySerial(115200)
    ref_drv = L76K(ref_drv_port.opener, baud=115200, clock=lambda: 0.0)
    ref_drv.open()
    fixes = []
    for k in range(200):
        clean_em.rng = random.Random(k)
        dirty_em.noise = clean_em.noise = False
        ref_drv_port.device_write(b"".join(clean_em.epoch(float(k), truth_at(k))))
        port.device_write(b"".join(dirty_em.epoch(float(k), truth_at(k))))
        for f in ref_drv.poll():
            clean_ref[f.utc] = f
        fixes += drv.poll()
    assert drv.stats()["binary_frames"] > 300
    good = [f for f in fixes if f.valid]
    assert len(good) > 150
    for f in good:
        assert (f.lat_deg, f.lon_deg) == (clean_ref[f.utc].lat_deg, clean_ref[f.utc].lon_deg)
