"""Who may command a running boat over ROS 2 (issue 11, item 5): the real autopilot node, real rclpy over DDS.

A stranger on the domain can no longer arm or steer the boat; a signed command from an allowed node can;
stopping the boat needs no token; missions load only from the mission folders; every command is answered with
its origin on the events topic."""
from __future__ import annotations

import time

import pytest
import rclpy
from std_msgs.msg import String
from std_srvs.srv import SetBool

import tests.support.ros_env  # noqa: F401  (isolated DDS domain; fails without rclpy)
from autopilot.commands.auth import read_token, sign, write_new_token
from autopilot.files.boat import load_boat_config
from autopilot.ros.qos import command_qos
from autopilot.ros.runner import BoatProcess
from autopilot.vocab.config import load_mission, load_vessel

NS = "/authboat"


@pytest.fixture
def boat(tmp_path, repo_root):
    cfg_file = tmp_path / "boat.yaml"
    cfg_file.write_text(f"vessel: foka\nmission: {repo_root / 'config/missions/demo.yaml'}\nbackend: sim\n"
                        f"ros: {{namespace: {NS}, nodes: [autopilot]}}\nlogging: {{enabled: false}}\n"
                        "commands: {allowed_nodes: [operator]}\n")
    write_new_token(tmp_path / "command.token")
    cfg = load_boat_config(cfg_file)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    proc = BoatProcess(cfg, load_vessel("foka"), load_mission(repo_root / "config/missions/demo.yaml"), context=ctx,
                       config_file=str(cfg_file))
    events = []
    nodes = {name: rclpy.create_node(name, context=ctx) for name in ("operator", "stranger")}
    nodes["operator"].create_subscription(String, f"{NS}/autopilot/events", lambda m: events.append(m.data),
                                          command_qos(50))
    pubs = {name: n.create_publisher(String, f"{NS}/autopilot/command", command_qos(10)) for name, n in nodes.items()}
    for n in nodes.values():
        proc.executor.add_node(n)

    def spin(seconds, until=lambda: False):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            proc.executor.spin_once(timeout_sec=0.01)
        return until()

    def say(who, text):
        """Publish as node `who` and return the autopilot's answer."""
        n = len(events)
        pubs[who].publish(String(data=text))
        # the answer to this node's command: not the core's own events, nor answers to direct calls on the node
        answers = lambda: [e for e in events[n:] if " (from " in e and f"/{who}" in e]  # noqa: E731
        assert spin(5.0, lambda: bool(answers())), f"no answer to {text!r}"
        return answers()[0]

    spin(10.0, lambda: all(p.get_subscription_count() for p in pubs.values()))
    yield proc, say, spin, read_token(tmp_path / "command.token"), nodes
    try:
        for n in nodes.values():
            proc.executor.remove_node(n)
        if proc.autopilot.context.ok():
            proc.stop()
    finally:
        rclpy.shutdown(context=ctx)


def test_a_stranger_cannot_arm_or_steer_and_an_allowed_signed_operator_can(boat):
    proc, say, spin, token, _ = boat
    node = proc.autopilot
    answer = say("stranger", "arm")
    assert "refused" in answer and "unauthenticated" in answer and "/stranger" in answer
    answer = say("stranger", sign(token, "mallory@dock", "arm"))          # the token leaked, the node did not
    assert "refused" in answer and "not in commands.allowed_nodes" in answer
    assert not node.autopilot.armed
    armed = False
    for _ in range(20):                                  # the ESCs need their arming time before HOLD can arm
        answer = say("operator", sign(token, "alice@laptop", "arm"))
        if answer.startswith("armed"):
            armed = True
            break
        spin(0.5)
    assert armed and node.autopilot.armed, answer
    assert "alice@laptop" in answer and "/operator" in answer                 # logged with its origin
    answer = say("operator", sign(token, "alice@laptop", "mode AUTO"))
    assert "mode AUTO requested" in answer
    assert spin(10.0, lambda: node.autopilot.mode.name == "AUTO")


def test_a_recorded_command_cannot_be_replayed(boat):
    proc, say, _, token, _ = boat
    signed = sign(token, "alice@laptop", "mode LOITER")
    assert "mode LOITER requested" in say("operator", signed)
    assert "replayed" in say("operator", signed)


def test_anyone_can_stop_the_boat(boat):
    proc, say, spin, token, _ = boat
    node = proc.autopilot
    assert spin(10.0, lambda: bool(node.arm()[0]))
    answer = say("stranger", "disarm swimmer ahead")
    assert answer.startswith("disarmed") and "/stranger" in answer and not node.autopilot.armed


def test_the_arm_service_cannot_arm_a_boat_that_wants_signed_commands(boat):
    proc, _, spin, _, nodes = boat
    client = nodes["stranger"].create_client(SetBool, f"{NS}/autopilot/arm")
    assert client.wait_for_service(timeout_sec=5.0)
    fut = client.call_async(SetBool.Request(data=True))
    assert spin(5.0, fut.done)
    assert not fut.result().success and "autopilot command" in fut.result().message
    assert not proc.autopilot.autopilot.armed


def test_missions_load_only_from_the_mission_folders(boat, repo_root, tmp_path):
    proc, say, _, token, _ = boat
    secret = tmp_path / "secrets.yaml"
    secret.write_text("aws_secret_access_key: hunter2\n")
    for path in ("/etc/passwd", str(secret), str(repo_root / "config/missions/../vessels/foka.yaml")):
        answer = say("operator", sign(token, "alice", f"mission {path}"))
        assert "refused" in answer and "outside the mission folders" in answer, answer
        assert "hunter2" not in answer and "root:" not in answer
    answer = say("operator", sign(token, "alice", f"mission {repo_root / 'config/missions/hexagon.yaml'}"))
    assert "loaded" in answer, answer


def _fuzzed_commands(rng, token, mission_dir, n):
    verbs = ["arm", "disarm", "mode", "mission", "heartbeat", "manual", "MODE", "", "hold", "\x00arm"]
    args = ["AUTO", "HOLD", "LOITER", "RTL", "MANUAL", "DRIFT", "nan nan", "1e400 0", "0.3 -0.2", "-inf 1",
            "/dev/zero", "/etc/shadow", str(mission_dir / "demo.yaml"), str(mission_dir / ".." / ".."),
            str(mission_dir / "fifo"), "x" * 5000, "é\u202e", "1 2 3", "-1 -1", "9" * 400, "\n", "\t"]
    out = []
    for _ in range(n):
        text = f"{rng.choice(verbs)} {rng.choice(args)}" if rng.random() < 0.8 else \
            "".join(chr(rng.randrange(0, 0x2FF)) for _ in range(rng.randrange(0, 60)))
        r = rng.random()
        if r < 0.4:
            text = sign(token, rng.choice(["alice", "", "a b", "\u00e9"]), text)
        elif r < 0.5:
            signed = sign(token, "alice", text)
            cut = rng.randrange(len(signed))
            text = signed[:cut] + chr(rng.randrange(32, 127)) + signed[cut + 1:]     # one character changed
        elif r < 0.55:
            text = "AUTH1 " + " ".join(rng.choice(["x", "1e400", "nan", "", "AUTH1"]) for _ in range(rng.randrange(8)))
        out.append(text)
    return out


def test_fuzzed_command_strings_never_raise_and_a_stranger_moves_nothing(boat, repo_root):
    """Random and mutated command texts (signed, unsigned, broken signatures, hostile paths and numbers)
    through the real handler: every one is answered or, for operator streams, taken silently; nothing raises;
    the handler keeps answering afterwards."""
    import os
    import random

    proc, say, spin, token, _ = boat
    node = proc.autopilot
    fifo = repo_root / "config" / "missions" / "fifo"
    assert not fifo.exists()
    rng = random.Random(11)
    texts = _fuzzed_commands(rng, token, repo_root / "config" / "missions", 400)
    for text in texts:
        node._on_command(String(data=text), None)          # raises into the test if the handler does
    spin(0.5)
    assert not node.autopilot.armed                       # a sender off the allow-list moved nothing
    with node.lock:
        for text in texts:                                 # past the gate: the command handler itself
            node.desk.text(text, "fuzz")
    spin(0.5)
    assert not os.path.exists(fifo)
    answer = say("operator", sign(token, "alice", "mode HOLD"))
    assert "mode HOLD requested" in answer
