"""/tf and /tf_static over real DDS, as rviz2 or Foxglove would look them up: `autopilot run` (sim backend, noisy
sensors, armed in AUTO so the boat moves and turns) in its own process; this process subscribes with a default
QoS on /tf and transient local on /tf_static and composes the frames by hand (no tf2 library).

tf2_msgs is imported on purpose: scripts/setup.sh --ros builds it (scripts/build_tf2_msgs.sh), and a venv without
it must FAIL here, not skip."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from scipy.spatial.transform import Rotation
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from tests.support.paths import REPO

# tf2_msgs/msg/TFMessage's hash as a system ROS 2 (Jazzy and later) announces it (`ros2 topic info -v /tf`)
UPSTREAM_TFMESSAGE_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"


def _pose(t):
    """(rotation, translation [m]) of a geometry_msgs/Transform."""
    r, p = t.rotation, t.translation
    return Rotation.from_quat([r.x, r.y, r.z, r.w]), np.array([p.x, p.y, p.z])


class TfTree:
    """The frames heard so far: child -> (parent, {stamp: pose}); static ones valid at every stamp."""

    def __init__(self):
        self.edges = {}

    def add(self, msg: TFMessage, static: bool):
        for t in msg.transforms:
            _, poses = self.edges.setdefault(t.child_frame_id, (t.header.frame_id, {}))
            stamp = None if static else (t.header.stamp.sec, t.header.stamp.nanosec)
            poses[stamp] = _pose(t.transform)

    def _ancestors(self, frame):
        out = [frame]
        while out[-1] in self.edges:
            out.append(self.edges[out[-1]][0])
        return out

    def _to(self, ancestor, frame, stamp):
        """`frame`'s pose in its ancestor `ancestor` (KeyError: no transform at `stamp` on the way)."""
        rot, pos = Rotation.identity(), np.zeros(3)
        while frame != ancestor:
            parent, poses = self.edges[frame]
            r, p = poses[None] if None in poses else poses[stamp]
            rot, pos = r * rot, r.apply(pos) + p
            frame = parent
        return rot, pos

    def lookup(self, target, source, stamp):
        """`source`'s pose in `target` at `stamp` (sec, nanosec), through their nearest common ancestor, like
        tf2's lookupTransform(target, source, time) with an exact stamp."""
        up_t, up_s = self._ancestors(target), self._ancestors(source)
        common = next((f for f in up_s if f in up_t), None)
        assert common is not None, f"{target} and {source} are not connected"
        rt, pt = self._to(common, target, stamp)
        rs, ps = self._to(common, source, stamp)
        inv = rt.inv()
        return inv * rs, inv.apply(ps - pt)


def _boat(tmp_path, ns):
    vessel = tmp_path / "foka.yaml"                  # the antenna 0.4 m forward, 0.15 m to starboard (FRD)
    text = (REPO / "config/vessels/foka.yaml").read_text()
    assert text.count("antenna_x_m: 0.0") == 1
    vessel.write_text(text.replace("antenna_x_m: 0.0", "antenna_x_m: 0.4, antenna_y_m: 0.15"))
    cfg = tmp_path / "boat.yaml"
    cfg.write_text(f"vessel: {vessel}\nmission: {REPO / 'config/missions/demo.yaml'}\nbackend: sim\n"
                   f"ros: {{namespace: {ns}, nodes: [autopilot]}}\ncommands: {{auth: off}}\n"
                   f"logging: {{enabled: false}}\n")
    return cfg


@pytest.mark.slow
def test_a_separate_process_looks_up_odom_to_base_link_and_the_antenna_from_tf(tmp_path):
    ns = f"/tftest{os.getpid()}"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("tf_listener", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    tree, odoms = TfTree(), []
    node.create_subscription(TFMessage, "/tf", lambda m: tree.add(m, static=False), 10)    # default QoS
    node.create_subscription(TFMessage, "/tf_static", lambda m: tree.add(m, static=True),
                             QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                        durability=DurabilityPolicy.TRANSIENT_LOCAL))
    node.create_subscription(Odometry, f"{ns}/odometry/filtered", odoms.append, 10)
    commands = node.create_publisher(String, f"{ns}/autopilot/command", 10)
    proc = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(_boat(tmp_path, ns))],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    hashes = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not odoms:
            assert proc.poll() is None, proc.stdout.read()
            ex.spin_once(timeout_sec=0.05)
        for text in ("arm", "mode AUTO"):
            commands.publish(String(data=text))
            ex.spin_once(timeout_sec=0.2)
        odoms.clear()
        end = time.monotonic() + 12
        while time.monotonic() < end and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.05)
        hashes = {str(i.topic_type_hash) for i in node.get_publishers_info_by_topic("/tf")}
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        node.destroy_node()
        rclpy.shutdown(context=ctx)

    assert hashes == {UPSTREAM_TFMESSAGE_HASH}, hashes          # the same type on the wire as a system ROS 2's
    assert tree.edges["odom"][0] == "map" and tree.edges["base_link"][0] == "odom"
    assert tree.edges["gnss_link"][0] == "base_link" and tree.edges["imu_link"][0] == "base_link"
    looked_up, yaws, positions = 0, [], []
    for m in odoms:
        stamp = (m.header.stamp.sec, m.header.stamp.nanosec)
        try:
            rot, pos = tree.lookup("odom", "base_link", stamp)
        except KeyError:                              # a /tf message lost to discovery or the queue depth
            continue
        looked_up += 1
        p, q = m.pose.pose.position, m.pose.pose.orientation
        odom_rot = Rotation.from_quat([q.x, q.y, q.z, q.w])
        assert np.linalg.norm(pos - [p.x, p.y, p.z]) < 1e-3, (pos, p)
        assert (odom_rot.inv() * rot).magnitude() < 0.01
        rot_map, pos_map = tree.lookup("map", "base_link", stamp)          # map -> odom (identity) -> base_link
        assert np.linalg.norm(pos_map - pos) < 1e-3 and (rot_map.inv() * rot).magnitude() < 0.01
        antenna_rot, antenna = tree.lookup("odom", "gnss_link", stamp)   # odom -> base_link -> gnss_link
        expected = odom_rot.apply([0.4, -0.15, 0.0]) + [p.x, p.y, p.z]   # FRD starboard -> FLU -y
        assert np.linalg.norm(antenna - expected) < 1e-3, (antenna, expected)
        yaws.append(rot.as_euler("xyz")[2])
        positions.append(pos)
    assert looked_up >= 0.8 * len(odoms) and looked_up >= 20, (looked_up, len(odoms), out[-2000:])
    # the boat moved and turned while we looked: the lookups followed a changing pose, not a constant
    assert np.linalg.norm(positions[-1] - positions[0]) > 1.0, out[-2000:]
    assert np.ptp(np.unwrap(yaws)) > 0.05, out[-2000:]
    rot, offset = tree.lookup("base_link", "gnss_link", None)          # static: needs no stamp
    assert np.allclose(offset, [0.4, -0.15, 0.0], atol=1e-9) and rot.magnitude() < 1e-9
