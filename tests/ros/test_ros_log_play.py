"""`autopilot log play` puts a recorded run back on the live graph: a separate process publishes the bag, a plain
rclpy subscriber with the default reliability and durability receives the odometry, the IMU and /tf with the
recorded stamps; a `log replay --ros` plays the replayed run. Real DDS. The subscribers keep a history of 100: with
10, a listener starved of CPU by other processes lost messages mid-stream (its own queue overflowed; the player
had sent them), more often since /tf is played too."""
import os
import subprocess
import sys
import time

import pytest
import rclpy
from nav_msgs.msg import Odometry
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import Imu
from tf2_msgs.msg import TFMessage  # built by scripts/build_tf2_msgs.sh: /tf is played, not skipped

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.cli.main import main
from autopilot.ros.qos import sensor_qos
from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)


def _stamps(run_dir, topic):
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(run_dir) as bag:
        conns = [c for c in bag.connections if c.topic == topic]
        return [(m.header.stamp.sec, m.header.stamp.nanosec)
                for m in (store.deserialize_cdr(raw, c.msgtype) for c, _t, raw in bag.messages(connections=conns))]


def _recorded_tf(run_dir):
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(run_dir) as bag:
        conns = [c for c in bag.connections if c.topic == "/tf"]
        return [[(t.header.frame_id, t.child_frame_id, t.transform.translation.x) for t in m.transforms]
                for m in (store.deserialize_cdr(raw, c.msgtype) for c, _t, raw in bag.messages(connections=conns))]


def _listen(cmd, seconds=40.0):
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("listener", context=ctx)
    got = {"odom": [], "imu": 0, "tf": []}
    node.create_subscription(Odometry, "/odometry/filtered",
                             lambda m: got["odom"].append((m.header.stamp.sec, m.header.stamp.nanosec)), 100)
    node.create_subscription(Imu, "/imu/data", lambda m: got.__setitem__("imu", got["imu"] + 1),
                             sensor_qos(50))                  # sensor data is best effort (REP-2003)
    node.create_subscription(TFMessage, "/tf", lambda m: got["tf"].append(
        [(t.header.frame_id, t.child_frame_id, t.transform.translation.x) for t in m.transforms]), 100)
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", *cmd], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end and proc.poll() is None:
            _spin(node, ctx)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    return proc.returncode, out, got


def _tail_of(got, recorded):
    """The subscriber got the recording in order with its stamps; discovery across processes under load may
    cost it the first few (the player waits --delay for it)."""
    assert len(got) >= 0.7 * len(recorded), (len(got), len(recorded))
    assert got == recorded[len(recorded) - len(got):]


def _spin(node, ctx):
    from rclpy.executors import SingleThreadedExecutor
    ex = getattr(_spin, "ex", None)
    if ex is None or getattr(_spin, "ctx", None) is not ctx:
        ex = _spin.ex = SingleThreadedExecutor(context=ctx)
        _spin.ctx = ctx
        ex.add_node(node)
    ex.spin_once(timeout_sec=0.05)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    assert main(["sim", str(REPO / "config/missions/demo.yaml"), "--vessel", "foka", "--duration", "12",
                 "--mismatch", "x_u=0.6,iz=1.5", "--log", str(base)]) == 0
    (run,) = list(base.iterdir())
    return run


def test_a_logged_run_plays_onto_the_live_graph_with_its_stamps(run_dir):
    recorded = _stamps(run_dir, "/odometry/filtered")
    rc, out, got = _listen(["log", "play", str(run_dir), "--rate", "2", "--delay", "2"])
    assert rc == 0, out
    assert "played" in out
    _tail_of(got["odom"], recorded)
    assert got["imu"] > 100, out
    _tail_of(got["tf"], _recorded_tf(run_dir))


def test_replay_with_ros_plays_the_replayed_run(run_dir, tmp_path):
    rc, out, got = _listen(["log", "replay", str(run_dir), "--out", str(tmp_path), "--ros", "--rate", "4",
                            "--delay", "2"])
    assert rc == 0, out
    (replayed,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    _tail_of(got["odom"], _stamps(replayed, "/odometry/filtered"))


def test_play_refuses_what_it_cannot_play(tmp_path):
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "log", "play", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "no run.mcap" in r.stdout and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "log", "play", str(tmp_path), "--rate", "0"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--rate" in r.stdout
