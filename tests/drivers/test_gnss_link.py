"""The L76K driver against the emulated module on a pseudo-terminal: baud switch, baud search, wrong baud,
rate configuration, reconnection after the device disappears, stale fixes; the sim source; the bench CLI.

On a pty the baud is not physical: the emulated module compares its own baud with the speed pyserial
programmed on the line (tcgetattr on the pty master) and sends random bytes / ignores commands when they
differ (see hil/devices/gnss_device.py).
"""
import argparse
import json
import random
import threading
import time

import pytest

from autopilot.vocab.config import GnssConfig
from drivers.gnss import l76k_commands as cmd
from drivers.gnss.l76k import L76K
from drivers.gnss.l76k_epoch import EpochAssembler
from drivers.gnss.nmea_stream import NmeaFramer, casic_frame
from hil.devices.gnss_device import DeviceThread, EmulatedL76K, GnssSimSource
from hil.devices.gnss_emitter import GnssTruth, L76KEmitter
from hil.devices.serial_ports import PtyPair
from tests.support.gnss_captures import raw_bytes


def truth(t):
    return GnssTruth(lat_deg=54.35 + 1e-5 * t, lon_deg=18.65, alt_m=3.0, sog_mps=1.1, cog_rad=0.0)


def wait_for(cond, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return False


class Collector:
    """Polls a started driver like the control loop would."""

    def __init__(self, drv):
        self.drv, self.fixes = drv, []

    def __call__(self, n):
        self.fixes += self.drv.poll()
        return len(self.fixes) >= n


def test_switch_to_115200_sends_pcas01_reopens_and_reads(tmp_path):
    with PtyPair() as pty:
        dev = EmulatedL76K(pty, L76KEmitter(seed=1), baud=9600)
        with DeviceThread(dev, truth, speedup=5.0):
            drv = L76K(pty.path, baud=9600, verify_window_s=3.0)
            assert drv.open() == 9600
            done = drv.set_baud(115200)
            assert "9600 -> 115200" in done[0]
            assert [c[1] for c in dev.commands] == ["$PCAS01,5*19"]
            assert dev.baud == 115200 and pty.line_baud() == 115200
            drv.start()
            got = Collector(drv)
            assert wait_for(lambda: got(3))
            garbage = drv.stats()["garbage_bytes"]
            assert wait_for(lambda: got(6))
            drv.close()
        assert drv.stats()["garbage_bytes"] == garbage       # nothing but clean NMEA after the switch
        assert all(f.valid for f in got.fixes)


def test_wrong_baud_gives_garbage_and_the_module_ignores_commands():
    with PtyPair() as pty:
        dev = EmulatedL76K(pty, L76KEmitter(seed=2), baud=9600)
        with DeviceThread(dev, truth, speedup=5.0):
            drv = L76K(pty.path, baud=115200)
            drv.open()
            drv.send(cmd.pcas02_rate(5))
            drv.start()
            assert wait_for(lambda: drv.stats()["garbage_bytes"] > 500)
            drv.close()
        assert drv.poll() == [] and drv.stats()["sentences"] == 0
        assert dev.interval_s == 1.0 and dev.commands == [] and dev.ignored_rx_bytes > 0


def test_auto_baud_finds_a_module_left_at_38400():
    with PtyPair() as pty:
        dev = EmulatedL76K(pty, L76KEmitter(seed=3), baud=38400)
        with DeviceThread(dev, truth, speedup=5.0):
            drv = L76K(pty.path, baud="auto", detect_window_s=0.5)
            t0 = time.monotonic()
            assert drv.open() == 38400
            searched_s = time.monotonic() - t0
            drv.start()
            got = Collector(drv)
            assert wait_for(lambda: got(2))
            drv.close()
        assert drv.stats()["baud_detections"] == 1
        assert searched_s < 3 * 0.5 + 1.0                    # 9600 and 115200 tried first, then 38400


@pytest.mark.slow
def test_configure_5hz_switches_baud_thins_output_and_sets_interval():
    with PtyPair() as pty:
        dev = EmulatedL76K(pty, L76KEmitter(seed=4), baud=9600)
        with DeviceThread(dev, truth):                        # real time: 1 Hz, then 5 Hz
            drv = L76K(pty.path, baud=9600)
            done = drv.configure(5.0)
            assert dev.baud == 115200 and dev.interval_s == pytest.approx(0.2)
            assert dev.emitter.selection == cmd.FAST_SELECTION
            assert any("GGA + RMC" in line for line in done)
            drv.start()
            got = Collector(drv)
            assert wait_for(lambda: got(8), timeout_s=5.0)
            drv.close()
        utc = [f.utc for f in got.fixes[-6:]]
        ms = [int(u[17:19]) * 1000 + int(u[20:23]) for u in utc]
        steps = {(b - a) % 60000 for a, b in zip(ms, ms[1:])}
        assert steps == {200}


def test_config_that_cannot_work_is_refused_with_what_to_do():
    with pytest.raises(cmd.GnssSetupError, match="needs 115200 baud.*sensors.gnss.baud"):
        L76K.from_config(GnssConfig(rate_hz=5.0, baud=9600))
    with pytest.raises(cmd.GnssSetupError, match="1000, 500 or 200"):
        L76K.from_config(GnssConfig(rate_hz=4.0, baud=115200))
    with pytest.raises(cmd.GnssSetupError, match="4800"):
        L76K("/dev/null", baud=12345)


@pytest.mark.slow
def test_reader_reconnects_after_unplug_and_reports_stale_meanwhile(tmp_path):
    link = str(tmp_path / "ttyGNSS")                          # like /dev/serial/by-id/...
    pty = PtyPair(link)
    dev = EmulatedL76K(pty, L76KEmitter(seed=5), baud=115200, rate_hz=5.0)
    th = DeviceThread(dev, truth).start()
    drv = L76K(link, baud=115200, stale_timeout_s=0.5, reopen_backoff_s=(0.05, 0.4))
    try:
        drv.start()
        got = Collector(drv)
        assert wait_for(lambda: got(3))
        assert drv.position_ok()
        pty.unplug()                                          # USB unplug: EIO, and the name disappears
        assert wait_for(lambda: not drv.connected, 2.0)
        assert wait_for(lambda: not drv.position_ok(), 2.0)
        time.sleep(0.5)                                       # several failed reopen attempts
        assert drv.link.open_failures >= 2 and "No such file" in (drv.last_error or "")
        n_before = len(got.fixes + drv.poll())
        pty = PtyPair(link)                                   # plugged back in: a new /dev/pts/N, same name
        with th.lock:
            dev.link = pty
        got = Collector(drv)
        assert wait_for(lambda: got(3), 5.0)
        assert drv.position_ok() and drv.link.reconnects == 1
        assert n_before >= 3 and drv._thread.is_alive()
    finally:
        drv.close()
        th.stop()
        pty.unplug()


def test_auto_mode_searches_again_when_the_module_forgets_its_baud():
    with PtyPair() as pty:
        dev = EmulatedL76K(pty, L76KEmitter(seed=6), baud=9600)
        with DeviceThread(dev, truth, speedup=5.0) as th:
            drv = L76K(pty.path, baud="auto", detect_window_s=0.5)
            drv.open()
            drv.set_baud(115200)                              # not saved with PCAS00
            drv.start()
            got = Collector(drv)
            assert wait_for(lambda: got(2))
            with th.lock:
                dev.power_cycle(th.now_s())                   # back to 9600: the driver now reads garbage
            assert wait_for(lambda: drv.baud == 9600, 8.0)
            n = len(got.fixes)
            assert wait_for(lambda: got(n + 2), 5.0)
            drv.close()
        assert drv.stats()["baud_detections"] == 2 and drv.link.reconnects == 1   # start-up, then the relock


def test_sim_source_memory_is_fast_deterministic_and_goes_stale_without_fix():
    cfg = GnssConfig(stale_timeout_s=2.5)
    src = GnssSimSource(cfg, truth, transport="memory", seed=9)
    ok = {}
    fixes = []
    for k in range(0, 50 * 30):
        t = k * 0.02
        if k == 50 * 10:
            src.emitter.has_fix = False                       # antenna covered at t = 10 s
        if k == 50 * 20:
            src.emitter.has_fix = True
        fixes += src.poll(t).gps
        ok[round(t, 2)] = src.position_ok(t)
    assert ok[9.0] and not ok[13.5] and ok[25.0]
    assert sum(not f.valid for f in fixes) in (9, 10, 11)
    # Stamped when the epoch's GGA is through 9600 baud (75 bytes: 78 ms, next 20 ms poll; a no-fix GGA is
    # shorter), in order.
    assert all(0.04 < f.time_s - i < 0.1 for i, f in enumerate(fixes))
    again = GnssSimSource(cfg, truth, transport="memory", seed=9)
    first = []
    for k in range(0, 50 * 8):
        first += again.poll(k * 0.02).gps
    assert first == fixes[:len(first)]


def test_sim_source_pty_delivers_the_same_fixes_as_memory():
    cfg = GnssConfig(baud=115200, rate_hz=5.0)
    out = {}
    for transport in ("memory", "pty"):
        src = GnssSimSource(cfg, truth, transport=transport, seed=4)
        fixes = []
        for k in range(50 * 6):
            fixes += src.poll(k * 0.02).gps
        src.close()
        out[transport] = fixes
    assert len(out["memory"]) >= 28
    assert out["pty"] == out["memory"]


def test_sim_source_recovers_from_an_unplugged_in_memory_port():
    src = GnssSimSource(GnssConfig(stale_timeout_s=2.5), truth, transport="memory", seed=1)
    fixes = []
    for k in range(50 * 20):
        t = k * 0.02
        if k == 50 * 5:
            src.link.unplug()
        if k == 50 * 9:
            src.link.replug()
        fixes += src.poll(t).gps
        if k == 50 * 8:
            assert not src.position_ok(t)
    assert src.driver.link.reconnects == 1
    assert src.position_ok(20.0) and fixes[-1].time_s > 18.0


def bench_parser():
    from autopilot.bringup import gps

    parser = argparse.ArgumentParser(prog="autopilot")
    gps.register(parser.add_subparsers(dest="command"))
    return parser


def test_bench_gps_prints_json_fixes_and_counts(capsys):
    raw = raw_bytes("quectel-l76k-nmea.log")
    lines = raw.splitlines(keepends=True)
    rng = random.Random(8)
    dirty = bytearray()
    for line in lines:
        if rng.random() < 0.05:
            dirty += casic_frame(0x01, 0x03, rng.randbytes(80))
        if line.startswith(b"$GPGSV") and rng.random() < 0.2:
            line = line.replace(b",", b";", 1)                 # a bad checksum
        dirty += line
    stop = threading.Event()
    with PtyPair() as pty:
        def device():
            while not stop.is_set():                          # loop the capture at ~3x 115200 baud
                for i in range(0, len(dirty), 1024):
                    if stop.is_set():
                        return
                    pty.device_write(bytes(dirty[i:i + 1024]))
                    time.sleep(1024 / 11520 / 3)
        feeder = threading.Thread(target=device, daemon=True)
        feeder.start()
        try:
            args = bench_parser().parse_args(["bench", "gps", "--port", pty.path, "--baud", "115200",
                                              "--count", "25", "--json", "--timeout-s", "10"])
            code = args.func(args)
        finally:
            stop.set()
            feeder.join()
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    fixes, counts = out[:-1], out[-1]
    assert len(fixes) == 25
    keys = ["time", "lat", "lon", "alt_m", "fix_quality", "sats", "hdop", "sog_mps", "cog_deg"]
    assert all(list(f)[:9] == keys for f in fixes)
    full = [f for f in fixes if f["sats"]]
    assert full and all(f["time"].startswith("2026-08-05T05:5") and f["time"].endswith("Z") for f in fixes)
    reference = {}                                           # the capture decoded offline, by UTC
    framer, asm = NmeaFramer(), EpochAssembler()
    for sentence in framer.feed(raw):
        for f in asm.feed(sentence, 0.0):
            reference[f.utc] = (f.lat_deg, f.lon_deg)
    for f in fixes:
        lat, lon = reference[f["time"]]
        assert abs(f["lat"] - lat) < 1e-8 and abs(f["lon"] - lon) < 1e-8
    assert all(f["fix_quality"] == 1 and f["hdop"] == 0.9 and f["alt_m"] == 76.5
               for f in full if f["sog_mps"] is not None)
    assert all(f["cog_deg"] == 286.35 and f["sog_mps"] == 0.0 for f in fixes if f["sog_mps"] is not None)
    assert counts["good_sentences"] > 200 and counts["bad_checksums"] > 0 and counts["binary_bytes_skipped"] > 0
    assert counts["binary_bytes_skipped"] % 90 == 0


def test_bench_gps_on_a_missing_port_says_so(capsys):
    args = bench_parser().parse_args(["bench", "gps", "--port", "/dev/does-not-exist", "--baud", "9600"])
    assert args.func(args) == 1
    assert "cannot open /dev/does-not-exist" in capsys.readouterr().err
