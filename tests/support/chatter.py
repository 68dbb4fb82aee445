"""`python tests/support/chatter.py talk|listen SECONDS`: a std_msgs/String talker, or a listener that prints "received"
at its first message or "NOTHING" after SECONDS (a discovery probe for the namespace tests)."""
import signal
import sys
import time

import rclpy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String


def main() -> int:
    role, seconds = sys.argv[1], float(sys.argv[2])
    stop = []
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)      # SIGINT ends the loop, not the context
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    node = rclpy.create_node(f"chatter_{role}")
    end = time.monotonic() + seconds
    if role == "talk":
        pub = node.create_publisher(String, "/hil_chatter", 10)
        while time.monotonic() < end and not stop:
            pub.publish(String(data="hi"))
            rclpy.spin_once(node, timeout_sec=0.1)
    else:
        got = []
        node.create_subscription(String, "/hil_chatter", got.append, 10)
        while time.monotonic() < end and not got:
            rclpy.spin_once(node, timeout_sec=0.1)
        print("received" if got else "NOTHING", flush=True)
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
