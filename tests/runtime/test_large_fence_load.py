"""A mission with a fence at the vertex limit, loaded through the desk while the boat's control loop runs on the
wall clock (BoatRuntime, backend sim, in this process): the loop keeps its cycles while the file is read and
checked, misses no deadline worth the overrun failsafe, and flies the new mission with its fence afterwards. A
fence over the limit is refused with the limit named, and the mission flown stays."""
from __future__ import annotations

import math
import threading
import time

import pytest
import yaml

from autopilot.safety.geofence import MAX_FENCE_VERTICES
from tests.support.paths import DATA

POND = DATA / "mavlink_pond.yaml"


def fence_mission(tmp_path, vertices: int, name: str = "big-fence.yaml"):
    """The pond mission with a wiggly star-shaped fence of `vertices` points, 60 m about its launch point."""
    data = yaml.safe_load(POND.read_text())
    lat0, lon0 = data["start"]["point"]["lat_deg"], data["start"]["point"]["lon_deg"]
    fence = []
    for k in range(vertices):
        th = 2 * math.pi * k / vertices
        r = 60.0 * (1 + 0.2 * math.sin(9 * th) + 0.03 * math.sin(97 * th))
        fence.append({"lat_deg": lat0 + r * math.cos(th) / 111195.0,
                      "lon_deg": lon0 + r * math.sin(th) / (111195.0 * math.cos(math.radians(lat0)))})
    data["name"] = f"pond-fence-{vertices}"
    data["geofence"] = fence
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class Cycles:
    """Wall-clock times of the runtime's cycles (an observer)."""

    def __init__(self):
        self.times = []

    def cycle_done(self, t_s, batch, result):
        self.times.append(time.monotonic())


def runtime_with_loop(mission_dir):
    from autopilot.cli.stand_ins import register_all
    from autopilot.files.boat import BoatConfig
    from autopilot.runtime.boat_runtime import BoatRuntime
    from autopilot.vocab.config import load_mission, load_vessel
    from autopilot.vocab.schema import build
    register_all()
    cfg = build(BoatConfig, {"vessel": "foka", "backend": "sim",
                             "commands": {"mission_dirs": [str(mission_dir)]}}, "test")
    rt = BoatRuntime(cfg, load_vessel("foka"), load_mission(POND), now_ns=time.monotonic_ns)
    lates = []
    report = rt.autopilot.report_overrun

    def spy(t_s, late_s):
        lates.append(late_s)
        report(t_s, late_s)
    rt.autopilot.report_overrun = spy
    cycles = Cycles()
    rt.observers.append(cycles)
    return rt, lates, cycles


@pytest.mark.slow
def test_a_fence_at_the_limit_loads_while_the_loop_keeps_its_cycles(tmp_path):
    path = fence_mission(tmp_path, MAX_FENCE_VERTICES)
    rt, lates, cycles = runtime_with_loop(tmp_path)
    try:
        rt.start_loop()
        time.sleep(1.0)                          # the loop is running
        assert len(cycles.times) > 10
        lates.clear()
        answer = {}
        started = time.monotonic()
        t = threading.Thread(target=lambda: answer.update(r=rt.load_mission_file(str(path), "the test")))
        t.start()
        t.join(timeout=120)
        ended = time.monotonic()
        time.sleep(0.5)
        ok, text = answer["r"]
        assert ok, text
        assert f"'pond-fence-{MAX_FENCE_VERTICES}' loaded" in text
        with rt.lock:                            # swapped in: flown with its fence, by the loop and the failsafes
            ap = rt.autopilot
            assert ap.mission.name == f"pond-fence-{MAX_FENCE_VERTICES}"
            assert [len(f.vertices) for f in ap.fences] == [MAX_FENCE_VERTICES]
            assert ap.failsafe.fences is ap.fences
            assert "overrun" not in ap.failsafe.active
        # the loop kept cycling while the file was read and checked (off the loop), none of them badly late
        during = [c for c in cycles.times if started <= c <= ended]
        period = rt.period_s
        if ended - started > 10 * period:
            assert len(during) >= 0.5 * (ended - started) / period, (len(during), ended - started)
        assert max(lates, default=0.0) < 0.5, lates
    finally:
        rt.stop()


def test_a_fence_over_the_limit_is_refused_naming_the_file_and_the_limit_and_the_mission_stays(tmp_path):
    path = fence_mission(tmp_path, MAX_FENCE_VERTICES + 1, "too-big.yaml")
    rt, lates, cycles = runtime_with_loop(tmp_path)
    try:
        rt.start_loop()
        ok, text = rt.load_mission_file(str(path), "the test")
        assert not ok
        assert "refused" in text and str(path) in text and "geofence" in text
        assert f"{MAX_FENCE_VERTICES + 1} vertices is more than the {MAX_FENCE_VERTICES}" in text
        with rt.lock:
            assert rt.autopilot.mission.name == "mavlink-pond"
    finally:
        rt.stop()
