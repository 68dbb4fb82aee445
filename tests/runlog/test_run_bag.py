"""An in-process simulation's run directory is a rosbag2 bag of the boat's topics plus the plant's truth, on a
plant that differs from the vessel file and through a GNSS outage; rosbags (an independent reader) opens it."""
import math

import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from autopilot.cli.main import main
from autopilot.files.boat import RosConfig
from autopilot.ros.interface import resolved_topics
from autopilot.runlog import read_run
from autopilot.vocab.config import load_vessel


def test_a_simulated_run_with_a_mismatched_plant_and_a_gnss_outage_is_a_bag(tmp_path, repo_root, capsys):
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--vessel", "foka", "--duration", "25",
               "--mismatch", "x_u=0.6,iz=1.5,thrust=0.85", "--fault", "gps-loss@8:6", "--log", str(tmp_path)])
    assert rc == 0, capsys.readouterr().err
    (run_dir,) = list(tmp_path.iterdir())
    run = read_run(run_dir)
    offset = run.meta["time_offset_s"]
    store = get_typestore(Stores.ROS2_HUMBLE)
    thrusters = [t.name for t in load_vessel("foka").thrusters]
    with Reader(run_dir) as bag:
        conns = {c.topic: c for c in bag.connections}
        # the whole interface of a boat with the default ros section, plus the simulation's truth
        assert set(conns) == {r.name for r in resolved_topics(RosConfig(), thrusters)}
        assert conns["/sim/truth/odometry"].msgtype == "nav_msgs/msg/Odometry"
        msgs = {}
        for c, _t, raw in bag.messages():
            msgs.setdefault(c.topic, []).append(store.deserialize_cdr(raw, c.msgtype))

    def t_of(m):
        return m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 - offset

    fixes = msgs["/gnss/fix"]
    lost = [f for f in fixes if 9.0 < t_of(f) < 13.5]
    kept = [f for f in fixes if t_of(f) < 7.5 or t_of(f) > 15.5]
    assert lost and all(f.status.status == -1 and math.isnan(f.latitude) for f in lost)
    assert kept and all(f.status.status >= 0 and 51.0 < f.latitude < 51.2 for f in kept)
    assert len(msgs["/imu/data"]) > 40 * 20 and len(msgs["/imu/mag"]) > 10 * 20       # every sample read
    imu = msgs["/imu/data"][len(msgs["/imu/data"]) // 2]
    assert imu.header.frame_id == "imu_link" and abs(imu.linear_acceleration.z) > 9.0
    # the bag says what state.csv says: truth and estimate, NED -> ENU
    truth = msgs["/sim/truth/odometry"]
    assert len(truth) == len(run) and np.allclose([m.pose.pose.position.y for m in truth], run["truth_north_m"],
                                                  atol=1e-4)
    est = msgs["/odometry/filtered"]
    valid = ~np.isnan(run["north_m"])
    assert len(est) == valid.sum() and np.allclose([m.pose.pose.position.x for m in est], run["east_m"][valid],
                                                   atol=1e-4)
    # through the outage the estimate drifts from the truth but stays on the lake (dead reckoning)
    truth_at = {(m.header.stamp.sec, m.header.stamp.nanosec): m.pose.pose.position for m in truth}
    gap = [math.hypot(e.pose.pose.position.x - p.x, e.pose.pose.position.y - p.y) for e in est
           if 9.0 < t_of(e) < 14.0 and (p := truth_at[(e.header.stamp.sec, e.header.stamp.nanosec)])]
    assert gap and max(gap) < 15.0
    assert len(msgs["/tf"]) == len(est) and len(msgs["/tf_static"]) == 1
    assert len(msgs["/guidance/path"]) == 1 and len(msgs["/guidance/path"][0].poses) == 6
