"""The log survives the worst: SIGKILL mid-run, and a disk that fills up while the boat drives."""
from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mcap.exceptions import EndOfFile
from mcap.reader import NonSeekingReader, make_reader
from mcap_ros2.decoder import DecoderFactory

from autopilot.runlog import RunLogger, read_run, state_columns
from autopilot.runlog.mcap_log import mcap_is_complete, read_mcap, recover_mcap

WRITER = textwrap.dedent("""
    import sys, time
    from autopilot.runlog import RunLogger, state_columns
    from autopilot.vocab.types import GpsFix
    log = RunLogger(sys.argv[1], rate_hz=50, mission_name="killed")
    print(log.run_dir, flush=True)
    cols = state_columns(2)
    k = 0
    t_next = time.monotonic()
    while True:                                   # a 50 Hz loop, logging wall-clock time
        t = time.time()
        row = {c: 0.0 for c in cols}
        row.update(time_s=t, mode="AUTO", armed=True, north_m=0.01 * k, heading_deg=45.0)
        log.log_cycle(t, row)
        if k % 50 == 0:
            log.log_gnss(t, GpsFix(t, 51.11, 17.06))
        if k % 25 == 0:
            log.event(t, "heartbeat", f"cycle {k}")
        k += 1
        t_next += 0.02
        time.sleep(max(0.0, t_next - time.monotonic()))
""")


@pytest.mark.slow
def test_sigkill_loses_at_most_the_last_second_and_the_rest_opens(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        run_dir = Path(proc.stdout.readline().strip())
        t_start = time.time()
        time.sleep(3.0)
        t_kill = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    run = read_run(run_dir)
    t = run["time_s"]
    assert not run.closed_cleanly
    assert t[-1] >= t_kill - 1.0, f"lost {t_kill - t[-1]:.2f} s"
    assert t[0] <= t_start + 0.5
    assert (t[1:] - t[:-1]).max() < 0.2            # nothing missing before the cut: every 20 ms row is there
    assert run.events[-1]["time_s"] >= t_kill - 1.5 and run.events[-1]["kind"] == "heartbeat"

    mcap_path = run_dir / "run.mcap"
    offset = run.meta["time_offset_s"]
    # mcap's own front-to-back reader reads everything written, then meets the cut
    stamps = []
    with open(mcap_path, "rb") as f:
        reader = NonSeekingReader(f, decoder_factories=[DecoderFactory()])
        with pytest.raises(EndOfFile):
            for _s, ch, msg, ros in reader.iter_decoded_messages(log_time_order=False):
                if ch.topic == "/odometry/filtered":
                    stamps.append(msg.log_time / 1e9 - offset)
    assert stamps[-1] >= t_kill - 1.0 and len(stamps) >= len(t) - 1
    # ours reads the same without an exception
    contents = read_mcap(mcap_path)
    assert contents.cut_tail and not contents.complete
    assert len(contents.topic("/odometry/filtered")) == len(stamps)
    # the seeking reader needs the footer a killed writer never wrote; recovery rewrites the file complete
    assert not mcap_is_complete(mcap_path)
    fixed = tmp_path / "recovered.mcap"
    n = recover_mcap(mcap_path, fixed)
    assert n == len(contents.messages)
    with open(fixed, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_summary().statistics.message_count == n
        odo = [m for _s, ch, m, _r in reader.iter_decoded_messages(topics=["/odometry/filtered"])]
    assert len(odo) == len(stamps) and odo[-1].log_time / 1e9 - offset == pytest.approx(stamps[-1])

    # `autopilot log recover` makes the run directory a rosbag2 bag an independent reader opens
    assert not (run_dir / "metadata.yaml").exists()
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    from autopilot.cli.main import main
    assert main(["log", "recover", str(run_dir)]) == 0
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(run_dir) as bag:
        assert bag.message_count == n
        topics = {c.topic: c for c in bag.connections}
        assert topics["/odometry/filtered"].msgcount == len(stamps)
        assert topics["/odometry/filtered"].ext.offered_qos_profiles[0].depth == 10
        odom = {}
        for conn, t_ns, raw in bag.messages(connections=[topics["/odometry/filtered"], topics["/tf"]]):
            m = store.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == "/tf":
                assert m.transforms[1].child_frame_id == "base_link"
            else:
                odom[round(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 - offset, 3)] = m
    # state.csv's last row is in the bag (run.mcap, many more bytes a row, spills its write buffer to the OS
    # between syncs more often, so after a kill it may reach a little further than state.csv)
    assert odom[round(float(t[-1]), 3)].pose.pose.position.y == pytest.approx(run["north_m"][-1])


class _FillingFile:
    """A file that accepts `budget` bytes and then fails like a full disk (ENOSPC)."""

    def __init__(self, real, budget):
        self._f, self._budget = real, budget

    def write(self, data):
        size = len(data.encode() if isinstance(data, str) else data)
        if self._budget[0] < size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._budget[0] -= size
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def _injected_disk(tmp_path, budget_bytes=256 * 1024):
    budget = [budget_bytes]

    def open_file(path, mode, **kw):
        return _FillingFile(open(path, mode, **kw), budget)
    return tmp_path / "runs", open_file


@pytest.fixture(params=["tmpfs", "injected"])
def small_disk(request, tmp_path):
    """A real 256 KiB tmpfs (when this process may mount one: root in CI, else the injected disk again) and a
    file wrapper raising ENOSPC after the same budget."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = None
    if request.param == "tmpfs":
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if r is None or r.returncode != 0:
        yield ("injected",) + _injected_disk(tmp_path)
        return
    try:
        yield "tmpfs", mnt / "runs", open
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _drive_until_log_stops(log, max_s=20.0):
    """Call log_cycle like a 50 Hz loop (simulated time, real pacing of the writer); returns worst call [s]."""
    cols = state_columns(2)
    worst, k = 0.0, 0
    deadline = time.monotonic() + max_s
    while log.healthy and time.monotonic() < deadline:
        row = {c: 1.234567 for c in cols}
        row.update(time_s=k * 0.02, mode="AUTO", armed=True)
        t0 = time.perf_counter()
        log.log_cycle(k * 0.02, row)
        if k % 100 == 0:
            log.event(k * 0.02, "heartbeat", "still driving")
        worst = max(worst, time.perf_counter() - t0)
        k += 1
        if k % 50 == 0:
            time.sleep(0.05)
    return worst, k


def test_full_disk_stops_logging_not_driving(small_disk, caplog):
    kind, base, open_file = small_disk
    caplog.set_level(logging.WARNING, logger="autopilot.runlog")
    log = RunLogger(base, rate_hz=50, open_file=open_file)
    assert log.healthy
    worst, cycles = _drive_until_log_stops(log)
    assert not log.healthy, f"{kind}: the log never filled the disk in {cycles} cycles"
    assert "No space left on device" in log.error
    assert log.failure_event["kind"] == "log_stopped"
    # the loop goes on: every later call returns at once, nothing raises
    t0 = time.perf_counter()
    results = [log.log_cycle(1000 + k * 0.02, {"time_s": 0.0}) for k in range(1000)]
    log.event(2000.0, "mode", "AUTO -> RTL")
    assert not any(results) and (time.perf_counter() - t0) / 1000 < 1e-4
    log.close()
    errors = [r for r in caplog.records if r.name == "autopilot.runlog" and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "No space left on device" in errors[0].getMessage()
    assert worst < 0.05                        # the loop never waited on the disk (generous: shared CI cores)
    # what did reach the disk still reads
    run = read_run(log.run_dir)
    assert len(run) > 10 and run["time_s"][1] == pytest.approx(0.02)


def test_full_disk_at_start_gives_an_unhealthy_logger_not_an_exception(tmp_path, caplog):
    base, open_file = _injected_disk(tmp_path, budget_bytes=10)
    log = RunLogger(base, rate_hz=10, open_file=open_file)
    assert not log.healthy and "cannot start the run log" in log.error
    assert log.log_cycle(0.0, {"time_s": 0.0}) is False
    log.close()
    assert any("No space left on device" in r.getMessage() for r in caplog.records)
