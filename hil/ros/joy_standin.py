"""A stand-in for the `joy` package's joy_node, playing a recorded operator's sticks (a gamepad sequence CSV).

What it publishes is what joy_node publishes for an Xbox-layout gamepad on Linux (SDL joystick API): node
`joy_node`, sensor_msgs/Joy on `joy` (relative, under the boat config's namespace), default QoS (reliable,
volatile, depth 10), header.frame_id "joy", 8 axes [left x, left y, LT, right x, right y, RT, d-pad x, d-pad y]
(sticks + up and + left, triggers 1.0 at rest) scaled as joy_node scales them (an int16 reading, its 0.05
deadzone taken out smoothly so full deflection is still 1.0), 11 buttons [A, B, X, Y, LB, RB, back, start,
guide, left stick, right stick]; a message on every change of the pad and at its autorepeat rate (20 Hz) between.

The operator: a CSV of t_s, throttle, steering (each in -1..1, throttle + forward, steering + to starboard;
tools/make_gamepad_sequence.py) played with LB held (the enable button of the boat config's default
ros.joystick layout): throttle on the left stick's y, steering on the right stick's x (Joy's + is left, so it
carries -steering). With commands.auth on, the stand-in first does what the operator does once the joy
node runs: a signed `joystick /NS/joy_node` (the boat config's token) on the command topic binds its
publisher as the gamepad stream (an unbound Joy publisher drives nothing). The sequence starts `settle_s`
after the autopilot's state shows the boat armed in MANUAL (an operator waits for that), paced by /clock:
sim time, as a node with use_sim_time; stamps are /clock's.
At its end the button is released and, after `release_s`, the node exits, printing one line that starts with
"joy stand-in:" (messages published, sim times the sequence started and ended). With no /clock or no MANUAL
within `wait_s` wall seconds it exits 1 saying which.

Run: python -m hil.ros.joy_standin --config BOAT.yaml SEQUENCE.csv   (the same ROS domain as the autopilot)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import List, Optional, Tuple

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Joy
from std_msgs.msg import String

from hil.sim.gamepad_sequence import read_sequence

NODE_NAME = "joy_node"
AUTOREPEAT_HZ = 20.0                  # joy_node's autorepeat_rate default
DEADZONE = 0.05                       # joy_node's deadzone default
N_AXES, N_BUTTONS = 8, 11
LEFT_Y, RIGHT_X, LT, RT = 1, 3, 2, 5
LB = 4


def joy_axis(stick: float) -> float:
    """A stick deflection (-1..1, + up / + left) as joy_node reports it: read as int16, the deadzone removed
    and the rest rescaled so that full deflection is still +-1."""
    raw = float(round(max(-1.0, min(1.0, stick)) * 32767.0))
    dz = DEADZONE * 32767.0
    if raw > dz:
        raw -= dz
    elif raw < -dz:
        raw += dz
    else:
        raw = 0.0
    return max(-1.0, min(1.0, raw / (32767.0 * (1.0 - DEADZONE))))


def pad_state(throttle: float, steering: float, enable: bool) -> Tuple[List[float], List[int]]:
    """(axes, buttons) of the pad with the operator's throttle (+ forward) and steering (+ to starboard)."""
    axes = [0.0] * N_AXES
    axes[LT] = axes[RT] = 1.0
    axes[LEFT_Y] = joy_axis(throttle)
    axes[RIGHT_X] = joy_axis(-steering)
    buttons = [0] * N_BUTTONS
    buttons[LB] = 1 if enable else 0
    return axes, buttons


class JoyStandin:
    """Plays `sequence` (rows t_s, throttle, steering) as joy_node would publish a pad held by an operator."""

    def __init__(self, cfg, sequence: np.ndarray, settle_s: float = 2.0, release_s: float = 1.0, context=None):
        from autopilot.files.boat import resolve_topic
        from autopilot.ros.qos import latched_qos
        kw = {"context": context} if context is not None else {}
        ns = cfg.ros.namespace or None
        self.node = rclpy.create_node(NODE_NAME, namespace=ns, **kw)
        self.pub = self.node.create_publisher(Joy, cfg.ros.topics.joystick, 10)     # joy_node's QoS: depth 10
        clock_topic = cfg.gazebo.clock_topic if cfg.gazebo is not None else "/clock"
        self.node.create_subscription(Clock, clock_topic, self._on_clock, 10)
        self.node.create_subscription(String, resolve_topic(cfg.ros.namespace, cfg.ros.topics.state),
                                      self._on_state, latched_qos())
        self.executor = SingleThreadedExecutor(**kw)
        self.executor.add_node(self.node)
        self.seq = sequence
        self.step_s = float(sequence[1, 0] - sequence[0, 0])
        self.settle_s, self.release_s = settle_s, release_s
        self.now_s = None                   # /clock [s]
        self.ready_at_s = None              # sim time the state first showed armed in MANUAL
        self.started_at_s = None
        self.ended_at_s = None
        self.done = False
        self.published = 0
        self._last: Optional[Tuple[List[float], List[int]]] = None    # (axes, buttons) last published
        self._last_pub_s = -math.inf
        self.cfg = cfg
        self.bound = cfg.commands.auth == "off"
        self._bind_sent_wall = -math.inf
        self.cmd_pub = self.node.create_publisher(String, resolve_topic(cfg.ros.namespace, cfg.ros.topics.command),
                                                  10)
        self.node.create_subscription(String, resolve_topic(cfg.ros.namespace, cfg.ros.topics.events),
                                      self._on_event, 50)

    def _on_event(self, msg) -> None:
        if msg.data.startswith("joystick bound") and self.node.get_fully_qualified_name() in msg.data:
            self.bound = True

    def _bind(self) -> None:
        """Ask the boat (signed) to take this node's Joy as the gamepad stream, once a second until it says so."""
        from autopilot.commands.auth import read_token, sign
        if time.monotonic() - self._bind_sent_wall < 1.0 or self.cmd_pub.get_subscription_count() == 0:
            return
        self._bind_sent_wall = time.monotonic()
        token = read_token(self.cfg.token_path())
        bind = f"joystick {self.node.get_fully_qualified_name()}"
        self.cmd_pub.publish(String(data=sign(token, "joy-standin", bind)))

    def _on_state(self, msg) -> None:
        try:
            st = json.loads(msg.data)
        except ValueError:
            return
        # the sim may run faster than real time: the sticks wait until the autopilot's Joy subscription has matched
        # (discovery), or a short sequence could be played before anyone hears it
        if self.ready_at_s is None and self.now_s is not None and st.get("armed") and st.get("mode") == "MANUAL" \
                and self.pub.get_subscription_count() > 0:
            if not self.bound:
                self._bind()
                return
            self.ready_at_s = self.now_s

    def _sticks(self, t: float) -> tuple:
        if self.ready_at_s is None or t < self.ready_at_s + self.settle_s:
            return 0.0, 0.0, False
        if self.started_at_s is None:
            self.started_at_s = t
        k = int((t - self.started_at_s) / self.step_s + 1e-9)
        if k < len(self.seq):
            return float(self.seq[k, 1]), float(self.seq[k, 2]), True
        if self.ended_at_s is None:
            self.ended_at_s = t
        if t >= self.ended_at_s + self.release_s:
            self.done = True
        return 0.0, 0.0, False

    def _on_clock(self, msg) -> None:
        t = msg.clock.sec + 1e-9 * msg.clock.nanosec
        self.now_s = t
        th, st, enable = self._sticks(t)
        state = pad_state(th, st, enable)
        if state == self._last and t - self._last_pub_s < 1.0 / AUTOREPEAT_HZ - 1e-9:
            return                          # no change and not yet time to repeat
        joy = Joy()
        joy.header.stamp = msg.clock
        joy.header.frame_id = "joy"
        joy.axes, joy.buttons = state
        self.pub.publish(joy)
        self.published += 1
        self._last, self._last_pub_s = state, t

    def spin(self, wait_s: float = 60.0) -> str:
        """Until the sequence has been played and released; returns the summary line. TimeoutError when no
        /clock or no MANUAL came within wait_s wall seconds (or the sim stopped for that long)."""
        last_t, last_change = None, time.monotonic()
        t_wall0 = last_change
        while not self.done:
            self.executor.spin_once(timeout_sec=0.05)
            if self.now_s != last_t:
                last_t, last_change = self.now_s, time.monotonic()
            elif time.monotonic() - last_change > wait_s:
                what = "no /clock" if self.now_s is None else "/clock stopped"
                raise TimeoutError(f"joy stand-in: {what} for {wait_s:g} s")
            if self.ready_at_s is None and time.monotonic() - t_wall0 > wait_s:
                raise TimeoutError(f"joy stand-in: the boat never showed armed in MANUAL within {wait_s:g} s")
        return (f"joy stand-in: {self.published} Joy messages as {NODE_NAME}; sequence of {len(self.seq)} rows "
                f"played from sim time {self.started_at_s:.2f} s to {self.ended_at_s:.2f} s (MANUAL seen at "
                f"{self.ready_at_s:.2f} s)")

    def destroy(self) -> None:
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def main(argv=None) -> int:
    from autopilot.files.boat import load_boat_config
    from autopilot.vocab.schema import ConfigError
    p = argparse.ArgumentParser(prog="python -m hil.ros.joy_standin", description=__doc__.split("\n\n")[0])
    p.add_argument("sequence", help="CSV of t_s,throttle,steering (tests/data/gamepad/*.csv)")
    p.add_argument("--config", required=True, help="the autopilot's boat config (namespace, topics, /clock)")
    p.add_argument("--settle-s", type=float, default=2.0, help="sim seconds after MANUAL before the sticks move")
    p.add_argument("--wait-s", type=float, default=60.0, help="wall seconds to wait for /clock and MANUAL")
    args = p.parse_args(argv)
    try:
        cfg = load_boat_config(args.config)
        seq = read_sequence(args.sequence)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rclpy.init()
    standin = JoyStandin(cfg, seq, settle_s=args.settle_s)
    try:
        print(standin.spin(args.wait_s), flush=True)
        return 0
    except TimeoutError as e:
        print(str(e), flush=True)
        return 1
    except KeyboardInterrupt:
        print(f"joy stand-in: stopped after {standin.published} Joy messages", flush=True)
        return 130
    finally:
        standin.destroy()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
