"""A test's own witness of a HIL link, run as a separate process on the simulator's ROS domain.

It stamps, independently of the stand-in's code, (a) the DDS source timestamp of every Imu message (set by the
writer when the stand-in published it) and (b) the DDS reception timestamp of the first thrust-stamp message
carrying each stamp, in its own reader. On SIGINT it writes {"imu": {stamp: ns}, "thrust": {stamp: ns}} to the
file named on its command line.

    python tests/support/link_probe.py IMU_TOPIC THRUST_STAMP_TOPIC OUT.json
"""
import json
import signal
import sys
import threading

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import Imu, JointState

from autopilot.ros.qos import command_qos


def main() -> int:
    imu_topic, stamp_topic, out = sys.argv[1:4]
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("link_probe", context=ctx, start_parameter_services=False)
    imu, thrust = {}, {}

    def key(msg):
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    node.create_subscription(Imu, imu_topic, lambda m, i: imu.setdefault(key(m), i["source_timestamp"]),
                             command_qos(100))
    node.create_subscription(JointState, stamp_topic,
                             lambda m, i: thrust.setdefault(key(m), i["received_timestamp"]), command_qos(100))
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    print("probe up", flush=True)
    while not stop.is_set():
        ex.spin_once(timeout_sec=0.1)
    with open(out, "w") as f:
        json.dump({"imu": imu, "thrust": thrust}, f)
    rclpy.shutdown(context=ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
