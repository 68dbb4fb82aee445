#!/usr/bin/env python3
"""Cost of the GNSS byte path: formatting an L76K epoch, parsing one, and the sim's GNSS source per second.

Prints microseconds (best of several repeats, so a busy machine disturbs it less):
- emit: L76KEmitter.epoch() with noise, factory sentence set (~890 bytes) and GGA + RMC only;
- parse: NmeaFramer + EpochAssembler on one epoch's bytes -> one GpsFix (clean, and with CASIC frames and
  corruption), and on the real gpsd L76K capture;
- sim source: GnssSimSource.poll at 50 Hz for one simulated second (one 1 Hz epoch), memory and pty
  transports, and the real-time factor the GNSS path alone would allow.

Usage: python benchmarks/bench_gnss.py [--repeat R]
"""
from __future__ import annotations

import argparse
import timeit
from pathlib import Path

from autopilot.vocab.config import GnssConfig
from drivers.gnss import l76k_commands as cmd
from drivers.gnss.l76k_epoch import EpochAssembler
from drivers.gnss.nmea_stream import NmeaFramer
from hil.devices.gnss_device import GnssSimSource
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter

CAPTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "gpsd" / "quectel-l76k-nmea.log"
TRUTH = GnssTruth(lat_deg=51.1079, lon_deg=17.0385, alt_m=120.0, sog_mps=1.5, cog_rad=0.7)


def best_us(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def emit_us(selection, repeat):
    em = L76KEmitter(seed=1, selection=selection)
    t = [0.0]

    def one():
        t[0] += 1.0
        return em.epoch(t[0], TRUTH)
    size = sum(len(s) for s in one())
    return best_us(one, 2000, repeat), size


def parse_us(epochs, repeat):
    """Per epoch: framer + assembler over pre-made epoch byte strings (one GpsFix each)."""
    def run():
        fr, asm = NmeaFramer(), EpochAssembler()
        n = 0
        for k, data in enumerate(epochs):
            for s, gap in zip(fr.feed(data), fr.gaps):
                n += len(asm.feed(s, float(k), gap))
        return n
    fixes = run()
    return min(timeit.repeat(run, number=1, repeat=repeat)) / len(epochs) * 1e6, fixes


def epochs_from(emitter, n):
    return [b"".join(emitter.epoch(float(k), TRUTH)) for k in range(n)]


def sim_second_us(transport, repeat):
    def run():
        src = GnssSimSource(GnssConfig(), lambda t: TRUTH, transport=transport, seed=2)
        for k in range(50 * 20):
            src.poll(k * 0.02)
        src.close()
    return min(timeit.repeat(run, number=1, repeat=repeat)) / 20 * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    r = args.repeat

    print("GNSS byte path (best of %d)" % r)
    us, size = emit_us(cmd.FACTORY_SELECTION, r)
    print(f"  emit one epoch, factory set ({size} B):          {us:8.1f} us")
    us, size = emit_us(cmd.FAST_SELECTION, r)
    print(f"  emit one epoch, GGA + RMC ({size} B):            {us:8.1f} us")

    clean = epochs_from(L76KEmitter(seed=3), 300)
    us, n = parse_us(clean, r)
    print(f"  parse one epoch, factory set -> GpsFix:        {us:8.1f} us  ({n} fixes / 300)")
    fast = epochs_from(L76KEmitter(seed=3, selection=cmd.FAST_SELECTION), 300)
    us, n = parse_us(fast, r)
    print(f"  parse one epoch, GGA + RMC -> GpsFix:          {us:8.1f} us  ({n} fixes / 300)")
    dirty = epochs_from(L76KEmitter(seed=3, casic_per_epoch=2.0, corrupt_per_byte=5e-4), 300)
    us, n = parse_us(dirty, r)
    print(f"  parse one epoch, 2 CASIC frames + corruption:  {us:8.1f} us  ({n} fixes / 300)")
    if CAPTURE.exists():
        lines = CAPTURE.read_bytes().splitlines(keepends=True)
        raw = b"".join(line for line in lines if not line.startswith(b"#"))
        chunks = [raw[i:i + 880] for i in range(0, len(raw), 880)]     # about one epoch a chunk
        us, n = parse_us(chunks, r)
        print(f"  parse the gpsd L76K capture, per epoch:        {us:8.1f} us  ({n} fixes)")

    for transport in ("memory", "pty"):
        us = sim_second_us(transport, r)
        print(f"  sim source, 1 s at 50 Hz polls ({transport:6s}):     {us:8.1f} us"
              f"  -> GNSS alone allows {1e6 / us:7.0f}x real time")


if __name__ == "__main__":
    main()
