"""Send one command to a running autopilot over its command topic and print what it answered.

The autopilot node answers every command (accepted or refused, with the reason) on its events topic, so the
client subscribes there first, waits until the autopilot's command subscription is matched, publishes, and
returns the first answer, or None when nothing came within the timeout.
"""
from __future__ import annotations

import time
from typing import Optional

import rclpy
from std_msgs.msg import String

from autopilot.files.boat import resolve_topic
from autopilot.ros.qos import command_qos

REFUSED_WORD = "refused"          # the autopilot node puts it in every answer to a command it did not carry out


def send_command(cfg, text: str, timeout_s: float = 5.0) -> Optional[str]:
    """Publish `text` on the boat's command topic; return the autopilot's answer (None: no answer)."""
    topics, ns = cfg.ros.topics, cfg.ros.namespace
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = rclpy.create_node("autopilot_command_client", context=ctx, start_parameter_services=False)
        answers: list = []
        node.create_subscription(String, resolve_topic(ns, topics.events), lambda m: answers.append(m.data),
                                 command_qos(50))
        pub = node.create_publisher(String, resolve_topic(ns, topics.command), command_qos(10))
        executor = rclpy.executors.SingleThreadedExecutor(context=ctx)
        executor.add_node(node)
        deadline = time.monotonic() + timeout_s
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        if pub.get_subscription_count() == 0:
            return None
        time.sleep(0.2)                 # let the events subscription match too, so the answer is not missed
        executor.spin_once(timeout_sec=0.05)
        answers.clear()
        pub.publish(String(data=text))
        while not answers and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        return answers[0] if answers else None
    finally:
        rclpy.shutdown(context=ctx)


def is_refusal(answer: str) -> bool:
    return REFUSED_WORD in answer.lower()
