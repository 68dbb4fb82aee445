"""estimator_inputs.bin: every estimator step's inputs and output, kept through a crash, read back exactly."""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest

from autopilot.guidance.path_following import mission_frame
from autopilot.runlog import RunLogger, read_run
from autopilot.runlog.estimator_inputs import FILE_NAME, FORMAT_VERSION, EstimatorInputsError, read_estimator_inputs
from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
from autopilot.vocab.types import NavState, SensorBatch
from tests.support.paths import REPO
from tests.support.replay_helpers import logged_sim


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    return logged_sim(tmp_path_factory.mktemp("runs"), duration_s=20.0)


def test_every_estimator_step_is_recorded_with_what_the_filter_returned(sim_run):
    run_dir, sim = sim_run
    rec = read_estimator_inputs(run_dir)
    assert not rec.cut_tail and rec.damaged is None and rec.gaps == []
    steps = rec.steps
    assert [s.step for s in steps] == list(range(len(sim.trace["t"])))      # from the filter's first step on
    assert np.array_equal([s.t_s for s in steps], sim.trace["t"])
    # the estimate recorded is the one the loop flew on, to the last bit
    assert np.array_equal([s.nav.north_m for s in steps], sim.trace["est_n"])
    assert np.array_equal([s.nav.heading_rad for s in steps], sim.trace["est_psi"])
    vessel = load_vessel("foka")
    h = rec.header
    assert h["estimator"] == "NavigationEKF" and h["version"] == FORMAT_VERSION
    assert h["tuning"]["gps_reacquire_s"] == vessel.failsafe.gnss.glitch_reject_s
    assert (h["frame"]["origin_lat_deg"], h["frame"]["origin_lon_deg"]) == (sim.frame.origin_lat_deg,
                                                                             sim.frame.origin_lon_deg)
    assert h["vessel"]["thrusters"] == 2
    # every sample each cycle's batch held, equal field for field (times, readings, stale flags, fix fields)
    assert [(s.batch.imu, s.batch.mag, s.batch.gps) for s in steps] == sim.batches
    assert sum(len(s.batch.mag) for s in steps) > 500 and sum(len(s.batch.gps) for s in steps) >= 15
    fixes = [f for s in steps for f in s.batch.gps if f.valid]
    assert len(fixes) == len(sim.gps_ne) and all(f.sog_mps is not None for f in fixes)
    assert np.allclose([sim.frame.to_ned(f.lat_deg, f.lon_deg) for f in fixes], sim.gps_ne, atol=1e-9)
    # thrust unknown until the ESCs arm and deliver, then the thrust the pulses give
    given = [s.thrust is not None for s in steps]
    assert not given[0] and given[-1]
    meta = read_run(run_dir).meta
    assert meta["estimator_inputs"] == {"file": FILE_NAME, "version": FORMAT_VERSION}
    assert meta["estimator_steps"] == len(steps) and meta["estimator_steps_dropped"] == 0


KILLED_SIM = textwrap.dedent("""
    import sys, time
    from autopilot.runlog.sim_log import SimRunLog
    from autopilot.vocab.config import CONFIG_DIR, load_mission, load_vessel
    from hil.sim.runner import SimOptions, run_sim
    vessel, mission = load_vessel("foka"), load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    log = SimRunLog(vessel, mission, sys.argv[1], 10.0)

    def on_result(t_s, *rest):
        log.on_result(t_s, *rest)
        if t_s == 0.02:       # the first cycle: the wall clock of simulated time 0
            print(log.log.run_dir, time.time() - t_s, flush=True)
    run_sim(vessel, mission, SimOptions(seed=2, duration_s=120.0, realtime=True, on_result=on_result))
""")


@pytest.mark.slow
def test_a_sigkilled_run_keeps_its_inputs_up_to_the_kill_and_replays_exactly(tmp_path):
    from autopilot.replay.navigation import replay_run

    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SIM, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=REPO)
    try:
        line = proc.stdout.readline().split()
        run_dir, t_start = Path(line[0]), float(line[1])
        time.sleep(4.0)
        t_kill = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    rec = read_estimator_inputs(run_dir)
    assert rec.damaged is None and rec.gaps == [] and rec.steps[0].step == 0
    # simulated time runs with the wall clock: at most the last ~0.6 s (between two fsyncs) is lost to the kill
    assert rec.steps[-1].t_s >= t_kill - t_start - 1.0, (rec.steps[-1].t_s, t_kill - t_start)
    assert not read_run(run_dir).closed_cleanly
    r = replay_run(run_dir, out_base=tmp_path / "replays")
    assert r.steps == len(rec.steps) and r.compared > 100
    assert r.pos_diff_max_m < 1e-3 and r.heading_diff_max_deg < 1e-6


def _copy(src: Path, dst: Path, data: bytes) -> Path:
    dst.mkdir()
    (dst / FILE_NAME).write_bytes(data)
    return dst


def test_a_cut_or_damaged_file_reads_up_to_the_damage(sim_run, tmp_path):
    run_dir, _sim = sim_run
    data = (run_dir / FILE_NAME).read_bytes()
    whole = read_estimator_inputs(run_dir)
    cut = read_estimator_inputs(_copy(run_dir, tmp_path / "cut", data[: len(data) // 2]))
    assert cut.cut_tail and cut.damaged is None
    assert 0 < len(cut.steps) < len(whole.steps)
    assert cut.steps[-1] == whole.steps[len(cut.steps) - 1]           # what was read is whole and right
    bad = bytearray(data)
    bad[len(data) // 2] ^= 0xFF
    damaged = read_estimator_inputs(_copy(run_dir, tmp_path / "bad", bytes(bad)))
    assert damaged.damaged and "CRC" in damaged.damaged and not damaged.cut_tail
    assert 0 < len(damaged.steps) < len(whole.steps)
    assert damaged.steps[-1] == whole.steps[len(damaged.steps) - 1]


def test_a_damaged_length_field_mid_file_is_damage_not_a_cut_tail(sim_run, tmp_path):
    """A record whose length field now points past the end of the file looks like a crash's cut record, but
    whole records follow it: the read stops there and says it is damage."""
    run_dir, _sim = sim_run
    data = bytearray((run_dir / FILE_NAME).read_bytes())
    whole = read_estimator_inputs(run_dir)
    head = struct.Struct("<BII")                      # kind, payload length, CRC-32 (estimator_inputs.py)
    starts, pos = [], struct.calcsize("<4sH")         # after the magic and the format version
    while pos < len(data):
        starts.append(pos)
        pos += head.size + head.unpack_from(data, pos)[1]
    mid = starts[len(starts) // 2]                    # records: the header, then one per step
    kind, _length, crc = head.unpack_from(data, mid)
    head.pack_into(data, mid, kind, len(data) - mid + 1000, crc)
    damaged = read_estimator_inputs(_copy(run_dir, tmp_path / "len", bytes(data)))
    assert damaged.damaged and f"byte {mid}" in damaged.damaged and "length" in damaged.damaged
    assert not damaged.cut_tail
    assert len(damaged.steps) == len(starts) // 2 - 1 and damaged.steps[-1] == whole.steps[len(damaged.steps) - 1]
    # the same length field on the last record is a crash's cut tail
    data = bytearray((run_dir / FILE_NAME).read_bytes())
    kind, _length, crc = head.unpack_from(data, starts[-1])
    head.pack_into(data, starts[-1], kind, len(data) - starts[-1] + 1000, crc)
    cut = read_estimator_inputs(_copy(run_dir, tmp_path / "last", bytes(data)))
    assert cut.cut_tail and cut.damaged is None and len(cut.steps) == len(whole.steps) - 1


@pytest.mark.parametrize("content, reason", [
    (None, "not found"),
    (b"", "not an estimator inputs file"),
    (b"PK\x03\x04 a zip file", "not an estimator inputs file"),
    (b"APEI\x63\x00", "format version 99 is newer"),
    (b"APEI\x01\x00\x01\x40\x00", "no readable header (the file was cut before its header)"),
])
def test_unreadable_inputs_are_refused_with_the_reason(tmp_path, content, reason):
    if content is not None:
        (tmp_path / FILE_NAME).write_bytes(content)
    with pytest.raises(EstimatorInputsError) as e:
        read_estimator_inputs(tmp_path)
    assert reason in str(e.value) and str(tmp_path) in str(e.value)


def _step_result(k: int):
    nav = NavState(0.02 * k, 1.0, 2.0, 0.5, 1.0, 0.0, 0.0, 1.0, 0.1, True)
    return types.SimpleNamespace(estimator_step=k, estimator_thrust=None, nav=nav)


def test_a_realtime_logger_that_falls_behind_drops_steps_and_says_so(tmp_path):
    from estimation.navekf.ekf import NavigationEKF
    vessel = load_vessel("foka")
    ekf = NavigationEKF(vessel, mission_frame(load_mission(CONFIG_DIR / "missions" / "demo.yaml")))
    with RunLogger(tmp_path, rate_hz=10, queue_s=0.0) as log:           # room for 100 steps
        taken = []
        for k in range(3000):                                           # bursts of 1000 steps, drained between
            taken.append(log.log_estimator_step(0.02 * k, SensorBatch(), _step_result(k), ekf))
            if k % 1000 == 999:
                time.sleep(0.3)
    assert not all(taken) and log.steps_dropped == taken.count(False)
    rec = read_estimator_inputs(log.run_dir)
    assert len(rec.steps) == taken.count(True) and rec.gaps                # the replay sees where steps are missing
    run = read_run(log.run_dir)
    (ev,) = [e for e in run.events if e["kind"] == "log_overrun"]
    assert "estimator inputs" in ev["message"] and ev["level"] == "warn"
    assert run.meta["estimator_steps_dropped"] == log.steps_dropped


def test_a_step_that_does_not_encode_costs_that_step_not_the_log(tmp_path):
    from estimation.navekf.ekf import NavigationEKF
    ekf = NavigationEKF(load_vessel("foka"), mission_frame(load_mission(CONFIG_DIR / "missions" / "demo.yaml")))
    with RunLogger(tmp_path, rate_hz=10) as log:
        for k in range(100):
            result = _step_result(k)
            if k == 40:
                result.nav = None                                       # not a NavState
            log.log_estimator_step(0.02 * k, SensorBatch(), result, ekf)
    assert log.healthy and log.steps_dropped == 1
    rec = read_estimator_inputs(log.run_dir)
    assert [s.step for s in rec.steps] == [k for k in range(100) if k != 40] and rec.gaps == [(39, 41)]
    (ev,) = [e for e in read_run(log.run_dir).events if e["kind"] == "log_fault"]
    assert "could not be recorded" in ev["message"] and "t=0.8 s" in ev["message"]


def test_the_boat_records_the_steps_before_its_log_opened(tmp_path):
    """On the boat the loop runs before the run log opens: the first steps are kept and written first."""
    from autopilot.runtime.field_services import FieldServices
    from autopilot.vehicle import Autopilot
    vessel = load_vessel("foka")
    mission = load_mission(CONFIG_DIR / "missions" / "demo.yaml")
    ap = Autopilot(vessel, mission)
    fs = FieldServices(vessel, mission, ap.frame, log_dir=str(tmp_path), env={})
    fs.estimator = ap.estimator
    for k in range(1, 201):
        t = 0.02 * k
        batch = SensorBatch()
        fs.on_cycle(t, batch, ap.step(t, batch))
        if k == 50:
            fs.start_log()
    fs.close()
    rec = read_estimator_inputs(fs.log.run_dir)
    assert [s.step for s in rec.steps] == list(range(200))
    assert json.loads((fs.log.run_dir / "meta.json").read_text())["estimator_steps"] == 200
