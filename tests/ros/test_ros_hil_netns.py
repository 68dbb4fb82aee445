"""Two machines for real: `autopilot hil serve` and `autopilot run` in two network namespaces on two subnets
joined by a router namespace (hil/links/netns_link.py; multicast does not cross a router, as many Wi-Fi access points
drop it), found by the unicast discovery files `autopilot hil discovery` writes. Each side gets its own /dev/shm,
so Fast DDS cannot take a shared-memory shortcut: everything crosses the routed link, and in the demo test an
emulated Wi-Fi link at the IP level (hil/links/tun_link.py) in the router."""
import json
import math
import os
import sys

import pytest

from autopilot.vocab.config import load_vessel
from hil.links import netns_link
from hil.links.netns_link import PI_IP, NamespacesUnavailable, RoutedNamespaces
from hil.ros.sim_transport import boat_config_for
from tests.support import ros_env  # noqa: F401  (fails without rclpy)
from tests.support.paths import SUPPORT

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

HERE = str(SUPPORT)

NAME = f"hl{os.getpid() % 10000}"
# the emulated radio runs under SCHED_FIFO: the suite's load must not add to the link's delay (a Wi-Fi link does
# not wait for the CPU); the autopilot and the simulator still compete for it, as on a loaded bench PC
LINK_RT_PRIORITY = 10
WALL_TIME_S = 450       # measured 408-447 s (the demo in real time: 384-399 s): scheduled first (tests/conftest.py)


def namespaces(tun):
    try:
        with RoutedNamespaces(NAME, tun=tun) as ns:
            yield ns
    except NamespacesUnavailable as e:
        pytest.skip(f"{e}: the relay tests (test_ros_hil_link.py) cover the link on loopback")


@pytest.fixture
def routed_namespaces():
    """PC namespace (10.251.7.1) - router - Pi namespace (10.251.8.2) (hil/links/netns_link.py); skipped, saying why,
    where they cannot be made (not root, no `ip`, no CAP_NET_ADMIN)."""
    yield from namespaces(tun=False)


@pytest.fixture
def namespaces_over_tun():
    """The same, with everything the router forwards passing through its TUN device (hil/links/tun_link.py)."""
    yield from namespaces(tun=True)


def tiny_mission(tmp_path):
    """Two legs of 15 m and 10 m (a short flight: the test is about the two machines, not the flying)."""
    lat, lon = 51.1099101, 17.0598572
    d_lat, d_lon = 15.0 / 111_320.0, 10.0 / (111_320.0 * math.cos(math.radians(lat)))
    path = tmp_path / "tiny.yaml"
    path.write_text(f"""name: tiny
start: {{point: {{lat_deg: {lat}, lon_deg: {lon}}}, heading_deg: 0}}
waypoints:
  - {{lat_deg: {lat + d_lat}, lon_deg: {lon}}}
  - {{lat_deg: {lat + d_lat}, lon_deg: {lon + d_lon}}}
cruise_speed_mps: 1.5
acceptance_radius_m: 3.0
guidance: {{law: ilos, lookahead_m: 8.0}}
on_complete: hold
""")
    return path


def serve_to_pi(ns, pc_env, pi_env, cfg, tmp_path, wait_s, serve_args=(), timeout_s=None):
    return netns_link.serve_to_pi(ns, pc_env, pi_env, cfg, tmp_path / "report.json", wait_s,
                                  ["--gps-noise", "white", *serve_args], timeout_s)


def test_hil_serve_flies_the_autopilot_on_another_machine_found_by_unicast(routed_namespaces, tmp_path):
    ns = routed_namespaces
    pc_env, pi_env = netns_link.discovery_files(tmp_path / "disc", 7)
    mission = tiny_mission(tmp_path)
    cfg = boat_config_for(load_vessel("foka"), str(mission), tmp_path)      # boat.yaml + command.token
    # alongside, on another domain and without the files, a talker and a listener must NOT find each other:
    # the namespaces really keep multicast discovery from crossing
    (tmp_path / "multicast_only.env").write_text("ROS_DOMAIN_ID=8\nRMW_IMPLEMENTATION=rmw_fastrtps_cpp\n")
    chatter = [sys.executable, os.path.join(HERE, "chatter.py")]
    talker = ns.popen(ns.pi, tmp_path / "multicast_only.env", chatter + ["talk", "30"])
    listener = ns.popen(ns.pc, tmp_path / "multicast_only.env", chatter + ["listen", "12"])
    try:
        # the bench flies a boat that is not the Pi's vessel file, in a cross current
        rc, out, report = serve_to_pi(ns, pc_env, pi_env, cfg, tmp_path, wait_s=30,
                                      serve_args=["--mismatch", "thrust=0.7,n_r=1.5", "--current", "0.2,90"])
    finally:
        heard, _ = listener.communicate(timeout=30)
        talker.send_signal(2)
        said, _ = talker.communicate(timeout=20)
    assert talker.returncode == 0 and heard.strip().endswith("NOTHING"), (said, heard)
    assert rc == 0, out
    assert report["mission_complete"] and report["waypoints_reached"] == 2, report
    assert report["plant"]["mismatch"] == {"thrust": 0.7, "n_r": 1.5}, report["plant"]
    assert "mismatch n_r=1.5,thrust=0.7" in out and "current 0.2 m/s toward 90 deg" in out, out
    assert report["failsafes"] == [] and report["outages"] == [], report
    assert report["latency_samples"] > 300 and report["latency_p50_ms"] > 0, report
    assert set(report["loss"]) >= {"imu", "clock", "gnss", "thrust_stamped"}, report["loss"]


ECHO = """import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9999))
print("echo up", flush=True)
while True:
    data, addr = s.recvfrom(64)
    s.sendto(data, addr)
"""
PINGER = """import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.15)
rtt = []
for i in range(80):
    t = time.monotonic()
    s.sendto(str(i).encode(), (sys.argv[1], 9999))
    try:
        while s.recv(64) != str(i).encode():
            pass
        rtt.append(1e3 * (time.monotonic() - t))
    except socket.timeout:
        rtt.append(None)
print(json.dumps(rtt))
"""


def test_the_tun_link_delays_and_drops_real_packets_and_reports_on_sigterm(namespaces_over_tun, tmp_path):
    """UDP round trips PC -> Pi -> PC through the router's TUN link (20 +- 10 ms each way, 10 % loss): every
    packet forwarded crosses it twice."""
    ns = namespaces_over_tun
    (tmp_path / "none.env").write_text("")
    link = ns.start_link(delay_ms=20.0, jitter_ms=10.0, loss=0.1, stats=tmp_path / "link.json", seed=3,
                         rt_priority=LINK_RT_PRIORITY)
    echo = ns.popen(ns.pi, tmp_path / "none.env", [sys.executable, "-c", ECHO])
    try:
        assert echo.stdout.readline().strip() == "echo up"
        pinger = ns.popen(ns.pc, tmp_path / "none.env", [sys.executable, "-c", PINGER, PI_IP])
        rtt = json.loads(pinger.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        echo.kill()
        echo.communicate()
        link.send_signal(15)
        link_out, _ = link.communicate(timeout=10)
    assert link.returncode == 0, link_out
    counts = json.loads(link_out.strip().splitlines()[-1])
    assert json.loads((tmp_path / "link.json").read_text()) == counts
    answered = sorted(r for r in rtt if r is not None)
    # a round trip: two draws of 10-30 ms, whose sum has its median at 40 ms
    assert 20.0 <= answered[0] and 34.0 <= answered[len(answered) // 2] <= 50.0, answered
    # 10 % per crossing: ~19 % of round trips lost
    assert 0.05 <= 1 - len(answered) / len(rtt) <= 0.4, rtt
    assert counts["packets"] >= 130 and 0.04 <= counts["dropped_loss"] / counts["packets"] <= 0.2, counts
    assert 10.0 <= counts["held_p50_ms"] <= 30.0 and counts["held_max_ms"] <= 60.0, counts


def test_the_demo_flies_across_namespaces_over_an_ip_level_wifi_link(namespaces_over_tun, repo_root, tmp_path):
    """The issue's CI case: `autopilot hil serve` (PC) and `autopilot run` (Pi) in two namespaces, both in one ROS
    domain found by the unicast files of `autopilot hil discovery`, with nothing between them but the router,
    whose forwarded packets all (DDS discovery too) cross hil/links/tun_link.py: 20 +- 10 ms each way, 1 % of packets
    lost (this kernel has no netem). The whole demo, in real time: ~6.5 min wall."""
    ns = namespaces_over_tun
    pc_env, pi_env = netns_link.discovery_files(tmp_path / "disc", 7)
    cfg = boat_config_for(load_vessel("foka"), str(repo_root / "config/missions/demo.yaml"), tmp_path)
    link = ns.start_link(delay_ms=20.0, jitter_ms=10.0, loss=0.01, stats=tmp_path / "link.json", seed=1,
                         rt_priority=LINK_RT_PRIORITY)
    try:
        rc, out, report = serve_to_pi(ns, pc_env, pi_env, cfg, tmp_path, wait_s=60, serve_args=["--realtime"],
                                      timeout_s=900)
    finally:
        link.send_signal(2)
        link_out, _ = link.communicate(timeout=20)
    counts = json.loads(link_out.strip().splitlines()[-1])
    assert rc == 0, out + "\n--- link ---\n" + link_out[-1500:]
    print({k: report.get(k) for k in ("mission_complete", "waypoints_reached", "xte_rms_m", "latency_p50_ms",
                                      "latency_p99_ms", "latency_max_ms", "loss", "failsafes", "outages",
                                      "link_warnings", "clock_offset_ms", "commands")}, "link:", counts)
    # the link really carried the run and really impaired it: held within 20 +- 10 ms (p50 25 ms measured: packets
    # leave in order, so one sent right after a slow one waits for it), ~1 % lost
    assert counts["forwarded"] > 10_000 and 10.0 <= counts["held_p50_ms"] <= 30.0, counts
    assert 0.003 <= counts["dropped_loss"] / counts["packets"] <= 0.03, counts
    assert report["mission_complete"] and report["waypoints_reached"] == report["waypoints_total"] == 6, report
    # No failsafe, but one the link itself causes: the GNSS topic is best effort (a reliable one is worse: Fast DDS
    # repairs a lost fix at its next heartbeat, 3 s later, and holds the ones after it), so two fixes lost in a row
    # (1 % x 1 %, over ~370 pairs: about 1 run in 25) leave 3 s without a position: gps-loss, dead-reckoning on the
    # mission, then recovered. Nothing else may fire, and the boat must never have stopped its mission for it.
    unexplained = [f for f in report["failsafes"] if not f.startswith("[failsafe] gps-loss: ")
                   or not f.endswith(("action: dead-reckon", "action: recovered"))]
    assert unexplained == [], report["failsafes"]
    # the link's delay shows in the stamped latency: at least the 10 ms its jitter leaves, both ways
    assert report["latency_p50_ms"] > 20.0, report
    # losses are reported per topic, both directions (a lost packet of a reliable topic is repaired, late)
    assert set(report["loss"]) >= {"imu", "clock", "gnss", "thrust_stamped"}, report["loss"]
