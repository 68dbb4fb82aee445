"""A HIL bench over an emulated link (hil/ros_link_relay.py: the autopilot in a ROS domain of its own, everything
crossing through a relay with delay and faults): the report's latency is measured from stamps and agrees with an
independent witness; a lost command or reply is retried until the autopilot's state shows it."""
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import ros_env  # noqa: F401  (fails without rclpy)

from autopilot.boat_config import load_boat_config, resolve_topic
from autopilot.config import load_mission, load_vessel
from autopilot.ros.sim_transport import run_ros_sim
from hil.environment import EnvironmentConfig
from hil.ros_link_relay import LinkSpec

HERE = Path(__file__).resolve().parent


def pct_ms(values_s, q):
    v = sorted(values_s)
    return 1e3 * v[min(len(v) - 1, max(0, int(math.ceil(q / 100.0 * len(v))) - 1))]


def test_realtime_latency_over_a_slow_link_equals_an_independent_stamped_measurement(repo_root, tmp_path):
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
                                                                  realtime=True, link=LinkSpec(delay_ms=30.0)))
    finally:
        probe.send_signal(signal.SIGINT)
        probe.communicate(timeout=10)
    seen = json.loads(out.read_text())
    both = sorted((int(k), (seen["thrust"][k] - seen["imu"][k]) / 1e9) for k in seen["thrust"] if k in seen["imu"])
    assert report["latency_samples"] >= 200 and len(both) >= 0.95 * report["latency_samples"], \
        (report["latency_samples"], len(both))
    # the same window as the report's: its last latency_samples stamps (the witness also saw the start-up, when
    # messages queued during discovery arrive 150-250 ms late: it failed a CI run at p99, 209 vs 74 ms)
    witness = [lat for _k, lat in both[-report["latency_samples"]:]]
    assert report["latency_p50_ms"] >= 60.0, report          # two crossings of 30 ms, not clipped to a step
    # the witness's reader and the stand-in's are two processes: on a saturated 2-core machine one of them can
    # wake a scheduler slice later (p99 2.9 ms apart at load 7, p50 2.7 ms apart at load 6 with the whole suite
    # beside it, when the report still counted a stamp from its first sensor's publication, see
    # hil/link_figures.py), which the tails feel first. Counting from the last: per stamp, report minus witness
    # p50 0.17-0.36 ms at load 13; the two p50s 0.3-1.5 ms apart (the stand-in preempted between noting the time
    # and the DDS write, p90 1-3 ms on magnetometer steps; the two readers p10 -1 to -4 ms); 1 ms when quiet
    for q, key, tol_ms in ((50, "latency_p50_ms", 3.0), (99, "latency_p99_ms", 8.0), (100, "latency_max_ms", 8.0)):
        assert abs(report[key] - pct_ms(witness, q)) <= tol_ms, (key, report[key], pct_ms(witness, q))
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
