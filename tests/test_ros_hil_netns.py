"""Two machines for real: `autopilot hil serve` and `autopilot run` in two network namespaces on two subnets
joined by a router namespace (multicast does not cross a router, as many Wi-Fi access points drop it), found by
the unicast discovery files `autopilot hil discovery` writes. Each side gets its own /dev/shm, so Fast DDS cannot
take a shared-memory shortcut: everything crosses the routed link."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import ros_env  # noqa: F401  (fails without rclpy)

from autopilot.config import load_vessel
from autopilot.ros.sim_transport import boat_config_for

NAME = f"hl{os.getpid() % 10000}"
PC_IP, PI_IP = "10.251.7.1", "10.251.8.2"


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@pytest.fixture
def routed_namespaces():
    """PC namespace (10.251.7.1) - router - Pi namespace (10.251.8.2); skipped, saying why, where they cannot be
    made (not root, no `ip`, no CAP_NET_ADMIN): the relay tests (test_ros_hil_link.py) then cover the link."""
    a, b, r = f"{NAME}a", f"{NAME}b", f"{NAME}r"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("network namespaces cannot be made here: no `ip` or `unshare`")
    try:
        for n in (a, b, r):
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "link", "add", f"{NAME}a0", "type", "veth", "peer", "name", f"{NAME}r0")
        sh("ip", "link", "add", f"{NAME}b0", "type", "veth", "peer", "name", f"{NAME}r1")
        for dev, ns, addr in ((f"{NAME}a0", a, f"{PC_IP}/24"), (f"{NAME}r0", r, "10.251.7.254/24"),
                              (f"{NAME}b0", b, f"{PI_IP}/24"), (f"{NAME}r1", r, "10.251.8.254/24")):
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", a, "route", "add", "default", "via", "10.251.7.254")
        sh("ip", "-n", b, "route", "add", "default", "via", "10.251.8.254")
        sh("ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    except subprocess.CalledProcessError as e:
        for n in (a, b, r):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
        pytest.skip(f"network namespaces cannot be made here ({' '.join(e.cmd)}: {e.stderr.strip()})")
    yield a, b
    for n in (a, b, r):
        subprocess.run(["ip", "netns", "del", n], capture_output=True)


def in_namespace(ns, env_file, args, repo_root, **kw):
    """`python -m autopilot.cli ARGS` inside `ns`, with its own /dev/shm and the variables of `env_file`."""
    script = (f"mount -t tmpfs none /dev/shm && set -a && . {env_file} && set +a && "
              f"exec {sys.executable} -m autopilot.cli {' '.join(args)}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROS_")}
    env["PYTHONPATH"] = str(repo_root)
    return subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "-m", "sh", "-c", script], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_hil_serve_flies_the_autopilot_on_another_machine_found_by_unicast(routed_namespaces, repo_root, tmp_path):
    from test_ros_gazebo import short_mission
    pc_ns, pi_ns = routed_namespaces
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "hil", "discovery", "--pc-ip", PC_IP, "--pi-ip",
                        PI_IP, "--domain-id", "7", "--out", str(tmp_path / "disc")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(repo_root)))
    assert r.returncode == 0, r.stderr
    (tmp_path / "multicast_only.env").write_text("ROS_DOMAIN_ID=7\nRMW_IMPLEMENTATION=rmw_fastrtps_cpp\n")
    mission = short_mission(tmp_path, 51.1099101, 17.0598572)
    cfg = boat_config_for(load_vessel("foka"), str(mission), tmp_path)      # boat.yaml + command.token
    # without the files the two sides do not find each other: the namespaces really block multicast
    pi = in_namespace(pi_ns, tmp_path / "multicast_only.env", ["run", "--config", str(cfg)], repo_root)
    try:
        ctl = in_namespace(pc_ns, tmp_path / "multicast_only.env",
                           ["hil", "serve", "--config", str(cfg), "--wait", "4"], repo_root)
        out, _ = ctl.communicate(timeout=60)
        assert ctl.returncode == 1 and "no autopilot appeared" in out, out
    finally:
        pi.send_signal(2)
        pi.communicate(timeout=20)
    pi = in_namespace(pi_ns, tmp_path / "disc/pi.env", ["run", "--config", str(cfg)], repo_root)
    try:
        pc = in_namespace(pc_ns, tmp_path / "disc/pc.env", ["hil", "serve", "--config", str(cfg), "--wait", "30",
                                                            "--gps-noise", "white", "--report",
                                                            str(tmp_path / "report.json")], repo_root)
        out, _ = pc.communicate(timeout=180)
    finally:
        pi.send_signal(2)
        pi_out, _ = pi.communicate(timeout=20)
    assert pc.returncode == 0, out + "\n--- pi ---\n" + pi_out[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mission_complete"] and report["waypoints_reached"] == 2, report
    assert report["failsafes"] == [] and report["outages"] == [], report
    assert report["latency_samples"] > 1000 and report["latency_p50_ms"] > 0, report
    assert set(report["loss"]) >= {"imu", "clock", "gnss", "thrust_stamped"}, report["loss"]
