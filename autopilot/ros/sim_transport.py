"""`autopilot sim MISSION --transport ros`: the autopilot process and the Gazebo stand-in over real DDS.

The autopilot runs as its own process (`autopilot run` with the vessel's gazebo boat config: the gazebo backend,
/clock, bridge topic names), exactly as it would against Gazebo. This process runs the stand-in (plant + sensors
behind bridge-shaped topics, driving /clock in lockstep or real time), arms the autopilot with a signed `arm` on
its command topic (a token made for the run), asks for AUTO the same way, watches the autopilot's state and odometry topics, and computes the
same report as the in-process sim (hil.sim_metrics) from ground truth it keeps to itself, plus:
- latency_p50/p90/p99/max_ms: per sensor stamp, wall time from the stand-in publishing it to the DDS reception of
  the first thrust computed from it (both hops and the autopilot's cycle; hil/link_figures.py), in lockstep and
  real time alike; `loss`: fraction of messages lost per topic, both directions, counted by stamp;
- steps_unanswered: steps for which no thrust came back within the lockstep timeout.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import yaml

from autopilot.config import CONFIG_DIR


def boat_config_for(vessel, mission_path: str, workdir: Path) -> Path:
    """The vessel's gazebo boat config (config/gazebo/NAME_boat.yaml) pointed at `mission_path`, or, for a vessel
    without one, a generic Gazebo-Thruster-system mapping (/model/NAME/joint/THRUSTER_thruster_joint/cmd_thrust)."""
    shipped = CONFIG_DIR / "gazebo" / f"{vessel.name}_boat.yaml"
    if shipped.exists() and Path(vessel.source_file).resolve().parent == (CONFIG_DIR / "vessels").resolve():
        data = yaml.safe_load(shipped.read_text(encoding="utf-8"))
        if data.get("gazebo", {}).get("bridge_config"):
            data["gazebo"]["bridge_config"] = str((shipped.parent / data["gazebo"]["bridge_config"]).resolve())
    else:
        ns = f"/{vessel.name}"
        data = {"ros": {"namespace": ns, "nodes": ["autopilot", "diagnostics"]},
                "gazebo": {"gnss": {"topic": f"{ns}/gnss/fix"}, "imu": {"topic": f"{ns}/imu/data"},
                           "mag": {"topic": f"{ns}/imu/mag"},
                           "thrusters": [{"name": t.name,
                                          "topic": f"/model/{vessel.name}/joint/{t.name}_thruster_joint/cmd_thrust"}
                                         for t in vessel.thrusters]}}
    data["vessel"] = str(Path(vessel.source_file).resolve())
    data["mission"] = str(Path(mission_path).resolve())
    data["backend"] = "gazebo"
    path = workdir / "boat.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    from autopilot.command_auth import write_new_token
    write_new_token(workdir / "command.token")       # the run's own token: commands are signed, as on a boat
    return path


class _Observer:
    """Subscribes to the autopilot's state (latched JSON), events and odometry; sends signed commands."""

    def __init__(self, node, cfg, tb):
        from nav_msgs.msg import Odometry
        from std_msgs.msg import String

        from autopilot.boat_config import resolve_topic
        from autopilot.ros.qos import command_qos, latched_qos, sensor_qos

        ns, t = cfg.ros.namespace, cfg.ros.topics
        self.node, self.tb = node, tb
        self.state: dict = {}
        self.odom: list = []
        self.events: list = []
        node.create_subscription(String, resolve_topic(ns, t.state), self._on_state, latched_qos())
        node.create_subscription(String, resolve_topic(ns, t.events), lambda m: self.events.append(m.data),
                                 command_qos(50))
        node.create_subscription(Odometry, resolve_topic(ns, t.odometry), self.odom.append, sensor_qos(50))
        self.command_pub = node.create_publisher(String, resolve_topic(ns, t.command), command_qos(10))
        from autopilot.command_auth import read_token
        self._token = read_token(cfg.token_path())

    def _on_state(self, msg) -> None:
        self.state = json.loads(msg.data)

    def command(self, text: str) -> None:
        """Publish `text` signed with the run's token (the autopilot answers on its events topic)."""
        from std_msgs.msg import String

        from autopilot.command_auth import sign
        self.command_pub.publish(String(data=sign(self._token, "autopilot-sim", text)))


def pi_domain_for(pc_domain: int) -> int:
    """The autopilot's ROS domain behind an emulated link: another valid domain (0..232), never the PC's."""
    return (pc_domain + 101) % 233


def _start_relay(cfg_path: Path, pc_domain: int, pi_domain: int, link) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hil.link_relay", "--config", str(cfg_path), "--pc-domain", str(pc_domain),
           "--pi-domain", str(pi_domain), "--delay-ms", str(link.delay_ms), "--jitter-ms", str(link.jitter_ms),
           "--loss", str(link.loss), "--repair-ms", str(link.repair_ms), "--seed", str(link.seed)]
    for start, dur in link.outages:
        cmd += ["--outage", f"{start}:{dur}"]
    for key, n in link.drop_first.items():
        cmd += ["--drop-first", f"{key}={n}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if "link relay up" not in line:
        rest = proc.communicate(timeout=10)[0]
        raise RuntimeError(f"the link relay did not start: {line}{rest}")
    return proc


def _stop_relay(proc: subprocess.Popen) -> str:
    proc.send_signal(2)
    try:
        return proc.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def _wait_for_state(standin, obs, timeout_s: float) -> bool:
    """Until the autopilot's latched state arrived: it is up and its replies reach us (a service would not tell
    across a link that carries only topics)."""
    end = time.perf_counter() + timeout_s
    while not obs.state and time.perf_counter() < end:
        standin.spin_for(0.05)
    return bool(obs.state)


def run_ros_sim(vessel, mission, env, args) -> dict:
    """Fly `mission` with the autopilot in its own process against the stand-in; return the sim report.

    `args` carries the sim options of `autopilot sim`: seed, gps_noise, gps_rate_hz, duration, realtime (missing
    attributes take their defaults), and optionally `lockstep_timeout_s`, `command_timeout_s` (wall seconds
    before an unanswered command is resent), `on_outage` ("pause" or "run", see GazeboStandin.run) and `link` (a hil.link_relay.LinkSpec: the autopilot then runs in
    a ROS domain of its own and everything crosses through an emulated link).
    """
    import rclpy

    from autopilot.boat_config import load_boat_config
    from autopilot.guidance import Leg, MissionGuidance, mission_frame
    from autopilot.ros.bench_commands import RetriedCommand
    from autopilot.ros.messages import odometry_to_nav_state
    from autopilot.types import NavState
    from hil.gazebo_standin import standin_for_boat_config
    from hil.sim_metrics import SimMetrics
    from hil.sim_runner import mission_length_m

    seed = int(getattr(args, "seed", 1) or 1)
    gps_noise = getattr(args, "gps_noise", "realistic") or "realistic"
    gps_rate_hz = getattr(args, "gps_rate_hz", None)
    duration = getattr(args, "duration", None)
    realtime = bool(getattr(args, "realtime", False))
    lockstep_timeout_s = float(getattr(args, "lockstep_timeout_s", 1.0) or 1.0)
    command_timeout_s = float(getattr(args, "command_timeout_s", 1.0) or 1.0)
    link = getattr(args, "link", None)
    on_outage = getattr(args, "on_outage", None) or "pause"
    if not mission.source_file:
        raise ValueError("mission: run_ros_sim needs a mission loaded from a file (the autopilot process reads it)")

    frame = mission_frame(mission)
    guidance = MissionGuidance(mission, vessel, frame)
    wps = guidance.waypoints_ned
    with tempfile.TemporaryDirectory(prefix="autopilot-ros-sim-") as tmp:
        cfg_path = boat_config_for(vessel, mission.source_file, Path(tmp))
        cfg = load_boat_config(cfg_path)
        context = rclpy.Context()
        rclpy.init(context=context)
        child_env = dict(os.environ)
        relay = None
        if link is not None:
            pc_domain = context.get_domain_id()
            child_env["ROS_DOMAIN_ID"] = str(pi_domain_for(pc_domain))
            relay = _start_relay(cfg_path, pc_domain, pi_domain_for(pc_domain), link)
        child = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg_path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=child_env,
                                 text=True)
        standin = None
        try:
            standin = standin_for_boat_config(cfg, vessel, mission, context=context, env=env, seed=seed,
                                              gps_noise=gps_noise, gps_rate_hz=gps_rate_hz)
            obs_node = rclpy.create_node("autopilot_sim_observer", context=context)
            standin.add_node(obs_node)
            obs = _Observer(obs_node, cfg, standin.tb)
            if not standin.wait_for_peers(timeout_s=30.0) or not _wait_for_state(standin, obs, 30.0):
                raise RuntimeError("the autopilot process did not come up on DDS within 30 s")
            n0, e0, _ = standin.plant.truth.north_m, standin.plant.truth.east_m, None
            t_end = duration if duration is not None else \
                120.0 + 3.0 * mission_length_m(wps, (n0, e0)) / mission.cruise_speed_mps
            metrics = SimMetrics(lookahead_m=guidance.lookahead_m)
            truth_at: dict = {}
            start_ne = (n0, e0)
            progress = {"completed_at": None, "odom_seen": 0}
            arm = RetriedCommand("arm", lambda st: bool(st.get("armed")), "arm", timeout_s=command_timeout_s)
            auto = RetriedCommand("mode AUTO", lambda st: st.get("mode") == "AUTO" or bool(st.get("mission_complete")),
                                  "mode auto", timeout_s=command_timeout_s)
            invalid_nav = NavState(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, valid=False)

            def leg_for(index: int) -> Leg:
                a = start_ne if index == 0 else wps[min(index, len(wps)) - 1]
                b = wps[min(index, len(wps) - 1)]
                return Leg(a[0], a[1], b[0], b[1])

            def on_step(t: float, truth) -> bool:
                key = round(t, 6)
                truth_at[key] = truth
                st = obs.state
                if arm.tick(st, obs.events, obs.command):      # then AUTO, once; each resent until it shows
                    auto.tick(st, obs.events, obs.command)
                in_auto = st.get("mode") == "AUTO"
                idx = int(st.get("waypoint_index", 0))
                if in_auto and not st.get("mission_complete"):
                    metrics.add_cycle(t, (truth.north_m, truth.east_m), truth.heading_rad, invalid_nav,
                                      leg_for(idx), idx, True)
                for od in obs.odom[progress["odom_seen"]:]:
                    nav = odometry_to_nav_state(od, standin.tb)
                    tr = truth_at.get(round(round(nav.time_s / standin.step_s) * standin.step_s, 6))
                    if tr is not None and (nav.pos_std_m < 1e3):
                        metrics.pos_err.append(math.hypot(nav.north_m - tr.north_m, nav.east_m - tr.east_m))
                        from autopilot.angles import wrap_pi
                        metrics.heading_err.append(wrap_pi(nav.heading_rad - tr.heading_rad))
                progress["odom_seen"] = len(obs.odom)
                if st.get("mission_complete") and progress["completed_at"] is None:
                    progress["completed_at"] = t
                if len(truth_at) > 600:
                    for k in sorted(truth_at)[:-500]:
                        del truth_at[k]
                return duration is None and progress["completed_at"] is not None and \
                    t >= progress["completed_at"] + 5.0

            wall0 = time.perf_counter()
            standin.run(t_end, realtime=realtime, lockstep_timeout_s=lockstep_timeout_s, on_step=on_step,
                        on_outage=on_outage)
            wall = time.perf_counter() - wall0
            standin.spin_for(0.3)
        finally:
            if standin is not None:
                try:
                    standin.destroy()
                except Exception:
                    pass
            child.send_signal(2)
            try:
                out, _ = child.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                out, _ = child.communicate()
            relay_out = _stop_relay(relay) if relay is not None else ""
            rclpy.shutdown(context=context)
        if child.returncode not in (0, -2) and progress.get("completed_at") is None:
            raise RuntimeError(f"the autopilot process failed (exit {child.returncode}):\n{out[-3000:]}")

    metrics.gps_err.extend(standin.gps_truth_errors_m)
    figures = standin.link_figures()
    st = obs.state
    sim_time = standin.k * standin.step_s

    report = {
        "vessel": vessel.name, "mission": mission.name, "seed": seed, "transport": "ros",
        "mission_complete": bool(st.get("mission_complete", False)),
        "mission_complete_time_s": progress["completed_at"],
        "waypoints_reached": int(st.get("waypoints_reached", 0)),
        "waypoints_total": int(st.get("waypoints_total", len(wps))),
        "sim_time_s": round(sim_time, 3), "wall_time_s": round(wall, 3),
        "realtime_factor": round(sim_time / wall, 1) if wall > 0 else float("inf"),
        "control_rate_hz": vessel.control.loop_rate_hz, "gps_noise": gps_noise,
        "gps_rate_hz": gps_rate_hz or vessel.sensors.gnss.rate_hz,
        **{k: v for k, v in figures.items() if k != "loss"}, "loss": figures["loss"],
        "steps": standin.k, "steps_unanswered": standin.missed_steps,
        "commands": {"arm": arm.summary(), "mode AUTO": auto.summary()},
        "failsafes": [e for e in obs.events if e.startswith("[failsafe]")],
    }
    if link is not None:
        report["link"] = {"delay_ms": link.delay_ms, "jitter_ms": link.jitter_ms, "loss": link.loss,
                          "outages": [list(o) for o in link.outages]}
        for line in relay_out.splitlines():
            if line.startswith("link relay: "):
                report["link"]["relay_counts"] = line.split(": ", 1)[1]
    report.update(metrics.summary())
    for line in out.splitlines():
        if "cycles, cost p50" in line:
            report["autopilot_process_timing"] = line.split("thrusters at neutral; ", 1)[-1].strip()
    return report
