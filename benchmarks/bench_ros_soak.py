"""Soak: a mission flown twice in one run, once quiet and once with a hostile client on every rim, and the control
loop's timing compared. The boat is `autopilot run`'s ROS 2 process (BoatProcess: the runtime, its ROS node,
MAVLink signed on two links and the web page; backend sim, 50 Hz) in this process; every client is a process
of its own:

- MAVLink: random bytes at 2.5 MB/s on link 1, plus unsigned COMMAND_LONGs and PARAM_REQUEST_LISTs;
- ROS 2: a node calling itself joy_node publishing unsigned commands at 200/s, a 1 MB text each second, a
  signed `mission` command with a 1 MB path, and Joy messages at 50 Hz;
- the web page: wrong passwords, handshakes without a session and from a foreign origin, reconnects, malformed
  JSON and 100 MB uploads (benchmarks/bench_web_load.py's hostile client);
- the largest legal fence: the owner uploads a signed 2,000-vertex fence over MAVLink link 2 mid-mission.

The clients run CLIENT_NICE below the boat, the precedence the service gives the boat on the Pi (Nice=-10).

For each flight it prints the cycles, the cycle cost and the start-to-start interval (p50 / p99 / max, ms),
the cycles more than 1.5 periods apart, the overrun failsafes, and whether the mission was completed.

    python benchmarks/bench_ros_soak.py [--mission config/missions/demo.yaml] [--vessel foka] [--max-s 900]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml
from loop_timing import CycleRecorder  # noqa: E402  (benchmarks/ is this script's folder)

REPO = Path(__file__).resolve().parents[1]
PASSPHRASE = "soak signing passphrase"
WEB_PASSWORD = "soak web password"
FENCE_VERTICES = 2000
CLIENT_NICE = 10                # the service's Nice=-10, relative


# ---------------------------------------------------------------------------------------------- hostile clients
def ros_flood_main(ns_topic: str, token_path: str, seconds: float) -> None:
    """A ROS node named joy_node: unsigned commands at 200/s, 1 MB texts, a signed 1 MB mission path, Joy."""
    import rclpy
    from sensor_msgs.msg import Joy
    from std_msgs.msg import String

    from autopilot.commands.auth import read_token
    rclpy.init()
    node = rclpy.create_node("joy_node")
    cmd = node.create_publisher(String, ns_topic, 10)
    joy = node.create_publisher(Joy, "joy", 10)
    token = read_token(token_path)
    big = "x" * (1 << 20)
    end = time.monotonic() + seconds
    try:
        _flood_ros(node, cmd, joy, token, big, end)
    except Exception:            # SIGTERM shuts rclpy's context down under a publish: the flood is over
        return
    node.destroy_node()
    rclpy.shutdown()


def _flood_ros(node, cmd, joy, token, big, end) -> None:
    from sensor_msgs.msg import Joy
    from std_msgs.msg import String

    from autopilot.commands.auth import sign
    k = 0
    signed_sent = False
    while time.monotonic() < end:
        k += 1
        cmd.publish(String(data=("arm" if k % 2 else "mode AUTO")))
        if k % 4 == 0:
            joy.publish(Joy(axes=[0.0, 1.0, 0.0, 1.0], buttons=[1] * 8))
        if k % 200 == 0:                 # ('mode hold ...' would be obeyed: HOLD always passes, unsigned)
            cmd.publish(String(data="arm " + big))
        if not signed_sent and k > 400:
            cmd.publish(String(data=sign(token, "soak@hostile", "mission /" + "a/" * (1 << 19))))
            signed_sent = True
        time.sleep(0.005)


def mavlink_junk_main(port: int, seconds: float) -> None:
    """Unsigned commands and parameter list requests as fast as pymavlink sends them, to udpin `port`."""
    os.environ["MAVLINK20"] = "1"
    from pymavlink import mavutil
    m = mavutil.mavlink
    conn = mavutil.mavlink_connection(f"udpout:127.0.0.1:{port}", source_system=77, source_component=190)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conn.mav.command_long_send(1, 1, m.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0)
        conn.mav.param_request_list_send(1, 1)
        conn.mav.command_long_send(1, 1, m.MAV_CMD_SET_MESSAGE_INTERVAL, 0, m.MAVLINK_MSG_ID_ATTITUDE, -1,
                                   0, 0, 0, 0, 0)
        time.sleep(0.002)


def fence_upload_main(port: int, lat0: float, lon0: float, radius_m: float, delay_s: float) -> None:
    """The owner, signed, uploads a FENCE_VERTICES-vertex inclusion fence (a circle of radius_m) to `port`."""
    os.environ["MAVLINK20"] = "1"
    from pymavlink import mavutil
    m = mavutil.mavlink
    time.sleep(delay_s)
    conn = mavutil.mavlink_connection(f"udpout:127.0.0.1:{port}", source_system=255, source_component=190)
    conn.setup_signing(hashlib.sha256(PASSPHRASE.encode()).digest(), sign_outgoing=True)
    conn.mav.heartbeat_send(m.MAV_TYPE_GCS, m.MAV_AUTOPILOT_INVALID, 0, 0, 0)
    conn.wait_heartbeat(timeout=10)
    k_lat = 1.0 / 111195.0
    k_lon = k_lat / math.cos(math.radians(lat0))
    pts = [(lat0 + radius_m * math.cos(a) * k_lat, lon0 + radius_m * math.sin(a) * k_lon)
           for a in (2 * math.pi * i / FENCE_VERTICES for i in range(FENCE_VERTICES))]
    conn.mav.mission_count_send(1, 1, len(pts), m.MAV_MISSION_TYPE_FENCE)
    t0 = time.monotonic()
    result = "timeout"
    while time.monotonic() - t0 < 120:
        msg = conn.recv_match(type=["MISSION_REQUEST_INT", "MISSION_REQUEST", "MISSION_ACK"], blocking=True,
                              timeout=1.0)
        if msg is None:
            continue
        if msg.get_type() == "MISSION_ACK":
            result = f"ack {msg.type} after {time.monotonic() - t0:.1f} s"
            break
        lat, lon = pts[msg.seq]
        conn.mav.mission_item_int_send(1, 1, msg.seq, m.MAV_FRAME_GLOBAL, m.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION,
                                       0, 1, len(pts), 0, 0, 0, int(lat * 1e7), int(lon * 1e7), 0,
                                       m.MAV_MISSION_TYPE_FENCE)
    print(json.dumps({"fence_upload": result}), flush=True)


# ---------------------------------------------------------------------------------------------- the boat
def _client_priority() -> None:
    """In each client, before it runs: CLIENT_NICE below the boat. The clients stand for machines on the other
    end of the links; on the Pi the service runs the boat at Nice=-10 over everything else
    (systemd/autopilot.service), so this gives the boat the same precedence over them on these shared cores."""
    os.nice(CLIENT_NICE)


def _free_udp_port() -> int:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _boat_files(tmp: Path, vessel_name: str, mission: Path, ports) -> Path:
    from autopilot.cli.main import main as cli
    from autopilot.vocab.config import resolve_vessel_path
    v = yaml.safe_load(resolve_vessel_path(vessel_name).read_text())
    v.setdefault("failsafe", {}).setdefault("arming", {})["require_mag_calibration"] = False
    v["sensors"]["mag"].pop("calibration_file", None)
    (tmp / "vessel.yaml").write_text(yaml.safe_dump(v, sort_keys=False))
    key = tmp / "mavlink.key"
    key.write_text(PASSPHRASE + "\n")
    os.chmod(key, 0o600)
    cfg = tmp / "boat.yaml"
    cfg.write_text(yaml.safe_dump({
        "vessel": "vessel.yaml", "mission": str(mission), "backend": "sim", "ros": {"start": "on"},
        "logging": {"dir": str(tmp / "runs"), "rate_hz": 10},
        "mavlink": {"links": [f"udpin:127.0.0.1:{ports[0]}", f"udpin:127.0.0.1:{ports[1]}"],
                    "signing_key_file": "mavlink.key"},
        "web": {"listen": "127.0.0.1:0"}, "status_socket": "status.sock"}, sort_keys=False))
    assert cli(["keys", "token", "--config", str(cfg)]) == 0
    pw = tmp / "web_password"
    from autopilot.web.passwords import write_password_file
    write_password_file(pw, WEB_PASSWORD)
    return cfg


def fly(tmp: Path, args, hostile: bool) -> dict:
    from autopilot.files.boat import load_boat_config
    from autopilot.ros.runner import BoatProcess, own_context
    from autopilot.runtime.heap import collect_before_loop, freeze_startup_heap
    from autopilot.runtime.interpreter_lock import share_lock_with_loop
    from autopilot.vocab.config import load_mission, load_vessel
    ports = (_free_udp_port(), _free_udp_port())
    cfg_path = _boat_files(tmp, args.vessel, Path(args.mission).resolve(), ports)
    cfg = load_boat_config(cfg_path)
    vessel = load_vessel(cfg.vessel_path())
    mission = load_mission(cfg.mission_path())
    stop = threading.Event()
    children: list = []
    out: dict = {"flight": "hostile" if hostile else "quiet"}
    with own_context() as ctx:
        collect_before_loop()                               # as `autopilot run` does
        share_lock_with_loop(1.0 / vessel.control.loop_rate_hz)
        proc = BoatProcess(cfg, vessel, mission, context=ctx, config_file=str(cfg_path))
        runtime = proc.autopilot.runtime
        rec = CycleRecorder(runtime)
        runtime.observers.append(rec)
        proc.serve_mavlink(None)
        proc.serve_web(None)
        freeze_startup_heap()
        spinner = threading.Thread(target=proc.spin, args=(stop,), daemon=True)
        spinner.start()
        desk, ap = runtime.desk, runtime.autopilot
        end = time.monotonic() + 60.0
        while time.monotonic() < end:                       # the estimate converges, then AUTO and arm
            with runtime.lock:
                desk.heartbeat("soak operator")
                if ap.nav is not None and ap.nav.valid and not ap.prearm_failures(runtime.now_s(), "AUTO"):
                    desk.set_mode("AUTO", "soak operator")
                    if desk.arm("soak operator").ok:
                        break
            time.sleep(0.5)
        rec.rows.clear()
        t0 = time.monotonic()
        if hostile:
            py = sys.executable
            here = str(Path(__file__).resolve())
            secs = str(args.max_s)
            ns_topic = cfg.ros.topics.command
            children = [
                subprocess.Popen([py, "-c", "import sys; sys.path.insert(0, 'benchmarks'); "
                                  "from bench_mavlink_flood import flood_main; "
                                  f"flood_main('udp', {ports[0]}, 2.5e6, {args.max_s})"], cwd=REPO,
                                 preexec_fn=_client_priority),
                subprocess.Popen([py, here, "--mavlink-junk", str(ports[0]), secs], cwd=REPO,
                                 preexec_fn=_client_priority),
                subprocess.Popen([py, here, "--ros-flood", ns_topic, str(cfg.token_path()), secs], cwd=REPO,
                                 env=dict(os.environ), preexec_fn=_client_priority),
                subprocess.Popen([py, str(REPO / "benchmarks" / "bench_web_load.py"), "--clients",
                                  proc.web.url, WEB_PASSWORD, "0", "--total-s", secs], cwd=REPO,
                                 stdout=subprocess.DEVNULL, preexec_fn=_client_priority),
                subprocess.Popen([py, here, "--fence-upload", str(ports[1]), str(ap.frame.origin_lat_deg),
                                  str(ap.frame.origin_lon_deg), "400", "20"], cwd=REPO, stdout=subprocess.PIPE,
                                 text=True, preexec_fn=_client_priority),
            ]
        while time.monotonic() - t0 < args.max_s:
            with runtime.lock:
                desk.heartbeat("soak operator")
                done = ap.mission_complete
            if done:
                break
            time.sleep(1.0)
        out["flight_s"] = round(time.monotonic() - t0, 1)
        with runtime.lock:
            out["completed"] = bool(ap.mission_complete)
            overruns = [e for e in ap.events if e.kind == "failsafe" and e.failsafe == "overrun"]
            out["overrun_failsafes"] = len(overruns)
            out["overrun_at"] = [f"{e.time_s:.1f} s: {e.message[:80]}" for e in overruns]
            out["fences"] = [len(f.vertices) for f in getattr(ap, "fences", ())]
            out["mode"] = ap.mode.name
        for c in children:
            if c.poll() is None:
                c.terminate()
        for c in children:
            try:
                o, _ = c.communicate(timeout=20)
                if o and "fence_upload" in o:
                    out.update(json.loads(o.strip().splitlines()[-1]))
            except subprocess.TimeoutExpired:
                c.kill()
        stop.set()
        proc.wake()
        spinner.join(timeout=10)
        proc.stop()
    cost = [r[1] for r in rec.rows]
    iv = [r[2] for r in rec.rows if r[2] is not None]
    worst = max((r for r in rec.rows if r[2] is not None), key=lambda r: r[2])
    out["worst_interval_at_s"] = round(worst[3] - rec.rows[0][3], 1)
    period = 1.0 / vessel.control.loop_rate_hz
    out.update(cycles=len(rec.rows),
               cost_ms=[round(float(np.percentile(cost, q)) * 1e3, 2) for q in (50, 99)] + [round(max(cost) * 1e3, 2)],
               interval_ms=[round(float(np.percentile(iv, q)) * 1e3, 2) for q in (50, 99)] + [round(max(iv) * 1e3, 2)],
               late=sum(1 for i in iv if i > 1.5 * period))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mission", default=str(REPO / "config" / "missions" / "demo.yaml"))
    ap.add_argument("--vessel", default="foka")
    ap.add_argument("--max-s", type=float, default=900.0, help="longest a flight may take [s]")
    ap.add_argument("--ros-flood", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--mavlink-junk", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--fence-upload", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ros_flood:
        ros_flood_main(args.ros_flood[0], args.ros_flood[1], float(args.ros_flood[2]))
        return
    if args.mavlink_junk:
        mavlink_junk_main(int(args.mavlink_junk[0]), float(args.mavlink_junk[1]))
        return
    if args.fence_upload:
        p = args.fence_upload
        fence_upload_main(int(p[0]), float(p[1]), float(p[2]), float(p[3]), float(p[4]))
        return
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")   # the clients inherit it
    os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
    from autopilot.cli.stand_ins import register_all
    register_all()
    rows = []
    for hostile in (False, True):
        with tempfile.TemporaryDirectory() as d:
            rows.append(fly(Path(d), args, hostile))
    print(f"mission {Path(args.mission).name} on {args.vessel}, 50 Hz loop, both flights in this run")
    print(f"{'flight':8s} {'s':>6s} {'done':>5s} {'cycles':>7s} {'cost p50/p99/max ms':>22s} "
          f"{'interval p50/p99/max ms':>25s} {'late':>5s} {'overrun fs':>10s}  fence")
    for r in rows:
        c, i = r["cost_ms"], r["interval_ms"]
        print(f"{r['flight']:8s} {r['flight_s']:6.0f} {str(r['completed']):>5s} {r['cycles']:7d} "
              f"{c[0]:6.2f} {c[1]:6.2f} {c[2]:7.2f}   {i[0]:7.2f} {i[1]:6.2f} {i[2]:7.2f}   {r['late']:5d} "
              f"{r['overrun_failsafes']:10d}  {r.get('fence_upload', '-')} {r['fences']}")
        print(f"         worst interval {r['worst_interval_at_s']} s into the flight; overruns: {r['overrun_at']}")


if __name__ == "__main__":
    main()
