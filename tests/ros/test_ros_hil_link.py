"""A HIL bench over an emulated link (hil/ros/link_relay.py: the autopilot in a ROS domain of its own, everything
crossing through a relay with delay and faults): the report's latency is measured from stamps and agrees with an
independent witness; a lost command or reply is retried until the autopilot's state shows it."""
import json
import math
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import pytest

from autopilot.files.boat import load_boat_config, resolve_topic
from autopilot.vocab.config import load_mission, load_vessel
from hil.ros.link_relay import LinkSpec
from hil.ros.sim_transport import run_ros_sim
from hil.sim.environment import EnvironmentConfig
from tests.support import ros_env  # noqa: F401  (fails without rclpy)
from tests.support.paths import SUPPORT as HERE

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def pct_ms(values_s, q):
    v = sorted(values_s)
    return 1e3 * v[min(len(v) - 1, max(0, int(math.ceil(q / 100.0 * len(v))) - 1))]


def test_realtime_latency_over_a_slow_link_equals_an_independent_stamped_measurement(repo_root, tmp_path):
    """Per stamp, the report and a witness measure the same two events: the stand-in handing the stamp's last
    sensor message to DDS, and the first thrust carrying that stamp reaching the stand-in's machine. Each takes
    its own times: the report time.time_ns() just before the write and its reader's DDS reception time; the
    witness (tests/support/link_probe.py, another process) the DDS writer's source timestamp and its own reader's
    reception time. So they are compared stamp by stamp, from the report's per-stamp log."""
    # 30 ms each way: every thrust arrives after its 20 ms step, which the old step-credited figure could not show
    cfg = load_boat_config(repo_root / "config/gazebo/foka_boat.yaml")
    ns = cfg.ros.namespace
    out = tmp_path / "probe.json"
    probe = subprocess.Popen([sys.executable, str(HERE / "link_probe.py"), resolve_topic(ns, cfg.gazebo.imu.topic),
                              resolve_topic(ns, cfg.gazebo.thrust_stamp_topic), str(out)],
                             stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(repo_root)))
    assert probe.stdout.readline().strip() == "probe up"
    try:
        report = run_ros_sim(load_vessel("foka"), load_mission(repo_root / "config/missions/demo.yaml"),
                             EnvironmentConfig(), SimpleNamespace(seed=1, gps_noise="white", duration=6.0,
                                                                  realtime=True, link=LinkSpec(delay_ms=30.0),
                                                                  latency_log=str(tmp_path / "latency.csv")))
    finally:
        probe.send_signal(signal.SIGINT)
        probe.communicate(timeout=10)
    seen = json.loads(out.read_text())
    logged = [line.split(",") for line in (tmp_path / "latency.csv").read_text().splitlines()[1:]]
    # the log is what the report's figures are taken over
    # of the 300 stamps of 6 s (fewer under load: 186 seen at load 7, best-effort samples starved of the CPU)
    assert len(logged) == report["latency_samples"] >= 150, (len(logged), report["latency_samples"])
    assert abs(pct_ms([float(r[3]) / 1e3 for r in logged], 50) - report["latency_p50_ms"]) < 1e-3
    assert report["latency_p50_ms"] >= 60.0, report          # two crossings of 30 ms, not clipped to a step
    pairs = [((int(rec) - int(pub)) / 1e9, (seen["thrust"][st] - seen["imu"][st]) / 1e9, int(st))
             for st, pub, rec, _ in logged if st in seen["thrust"] and st in seen["imu"]]
    # The witness is a third participant: under load DDS can take a second to match it with the relay's writer
    # (a CI run: 253 of 300 stamps seen), so what it must not miss is counted from the first stamp it saw; and it
    # must see at least half the run. After that its best-effort readers, two per stamp, can each lose a few
    # samples when starved of the CPU (0.5-3.9 % per reader at load 12-15, below)
    assert len(pairs) >= 150, (len(pairs), len(logged))
    first_seen = min(st for _, _, st in pairs)
    after_first = [st for st, *_ in logged if int(st) >= first_seen]
    assert len(pairs) >= 0.9 * len(after_first), (len(pairs), len(after_first), len(logged))
    diff_ms = sorted(1e3 * (r - w) for r, w, _ in pairs)
    share_within_1ms = sum(abs(d) <= 1.0 for d in diff_ms) / len(diff_ms)
    reported, witnessed = [r for r, _, _ in pairs], [w for _, w, _ in pairs]
    # The claim: per stamp, the report's latency equals the witness's within 1 ms (the median of the per-stamp
    # differences), and for most stamps. Measured in 10 runs with a `pytest -n 1` of two simulation files beside it
    # (load 3.5-8 on 2 cores): median 0.03-0.16 ms (its start 0.07 ms, time_ns() to the DDS write; its end
    # 0.07 ms, two readers), 77-96 % of stamps within 1 ms. What is left is which of the two readers, in two
    # processes, the scheduler wakes first (p1 -2 to -23 ms, p99 +3.5 to +14 ms per stamp): noise of the
    # reception stamps, not of the figure. It moves whole-distribution percentiles: the two p50s over the same
    # stamps were 0.04-1.14 ms apart, p99 0.02-1.23 ms, max 0.004-5.4 ms; the first two are checked within the 3
    # and 8 ms such noise allows. The maximum is not checked: it is one stamp, so it carries that stamp's
    # reception noise whole (a CI run: 106.0 against 98.0 ms, while its median per-stamp difference stayed
    # within 1 ms).
    print({"per_stamp_diff_ms_p1_p50_p99": [round(diff_ms[int(q * (len(diff_ms) - 1))], 3) for q in (0.01, 0.5, 0.99)],
           "share_within_1ms": round(share_within_1ms, 3),
           "witnessed_of_logged_from_first_seen_of_all": [len(pairs), len(after_first), len(logged)],
           "p50_p99_max_gap_ms": [round(pct_ms(reported, q) - pct_ms(witnessed, q), 3) for q in (50, 99, 100)]})
    assert abs(diff_ms[len(diff_ms) // 2]) <= 1.0, diff_ms[::max(1, len(diff_ms) // 10)]
    assert share_within_1ms >= 0.5, (share_within_1ms, diff_ms[::max(1, len(diff_ms) // 10)])
    for q, tol_ms in ((50, 3.0), (99, 8.0)):
        assert abs(pct_ms(reported, q) - pct_ms(witnessed, q)) <= tol_ms, (q, pct_ms(reported, q),
                                                                          pct_ms(witnessed, q))
    # the relay drops nothing here; best-effort DDS itself drops a few samples when a reader is starved of the CPU
    # (0.5-3.9 % at load 12-15 on 2 cores, 0 in a quiet CI run)
    assert report["loss"]["imu"] <= 0.05 and report["loss"]["thrust_stamped"] <= 0.05, report["loss"]
    assert abs(report["clock_offset_ms"]) < 1.0, report["clock_offset_ms"]     # one machine: one clock


def test_lost_replies_are_retried_and_an_outage_pauses_the_plant_and_is_reported(repo_root):
    # one run, two faults: the first answer to `arm` (its events line and the state that shows it) and the first
    # `mode AUTO` are lost; then, 5 s into the simulation, 3 s with nothing crossing
    cfg = load_boat_config(repo_root / "config/gazebo/foka_boat.yaml")
    t, ns = cfg.ros.topics, cfg.ros.namespace
    link = LinkSpec(delay_ms=5.0, outages=((5.0, 3.0),),
                    drop_first={f"{resolve_topic(ns, t.events)}~armed": 1,
                                f"{resolve_topic(ns, t.state)}~\"armed\": true": 1,
                                f"{resolve_topic(ns, t.command)}~mode AUTO": 1})
    report = run_ros_sim(load_vessel("foka"), load_mission(repo_root / "config/missions/demo.yaml"),
                         EnvironmentConfig(), SimpleNamespace(seed=1, gps_noise="white", duration=9.0, realtime=True,
                                                              link=link, command_timeout_s=1.0, on_outage="pause"))
    arm, auto = report["commands"]["arm"], report["commands"]["mode AUTO"]
    assert arm["confirmed"] and arm["sent"] >= 2 and arm["refused"] == 0, arm     # arming again is no error
    assert auto["confirmed"] and auto["timed_out"] >= 1 and auto["refused"] == 0, auto
    assert "'lost': 3" in report["link"]["relay_counts"], report["link"]
    (outage,) = report["outages"]
    assert 2.5 <= outage["wall_s"] <= 3.6, outage
    assert outage["end_sim_s"] - outage["start_sim_s"] <= 0.3, outage       # sim time held, no 3 s jump
    assert report["failsafes"] == [], report["failsafes"]                   # no IMU timeout on the autopilot
    assert report["loss"]["imu"] > 0.0, report["loss"]                      # what the outage cost shows as loss
    assert any("outage" in w for w in report["link_warnings"]), report["link_warnings"]
