"""`autopilot sim MISSION --transport ros`: the autopilot process and the Gazebo stand-in over real DDS.

The autopilot runs as its own process (`autopilot run` with the vessel's gazebo boat config: the gazebo backend,
/clock, bridge topic names), exactly as it would against Gazebo. This process runs the stand-in (plant + sensors
behind bridge-shaped topics, driving /clock in lockstep or real time), arms the autopilot with a signed `arm` on
its command topic (a token made for the run), asks for AUTO the same way, watches the autopilot's state and odometry topics, and computes the
same report as the in-process sim (hil.sim_metrics) from ground truth it keeps to itself, plus:
- latency_p50_ms / latency_p99_ms: wall time from the stand-in publishing a step's sensor messages to the arrival
  of the last thruster command that step caused (both DDS hops and the autopilot's cycle);
- steps_unanswered: steps for which no thrust came back within the lockstep timeout;
- log_dir: with `--log DIR`, the run directory the autopilot process wrote (its own run log, a rosbag2 bag of
  the topics it publishes; the plant's truth stays in the stand-in, so it has no sim/truth topic).
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


def boat_config_for(vessel, mission_path: str, workdir: Path, log_dir: Optional[str] = None,
                    log_rate_hz: float = 10.0) -> Path:
    """The vessel's gazebo boat config (config/gazebo/NAME_boat.yaml) pointed at `mission_path`, or, for a vessel
    without one, a generic Gazebo-Thruster-system mapping (/model/NAME/joint/THRUSTER_thruster_joint/cmd_thrust).
    With `log_dir` the autopilot process writes its run log there (as `autopilot run` does on a boat: a rosbag2
    run directory); without, it logs nothing."""
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
                           "thrusters": [dict({"name": t.name,
                                               "topic": f"/model/{vessel.name}/joint/{t.name}_thruster_joint/"
                                                        f"cmd_thrust"},
                                              **({"angle_topic": f"/model/{vessel.name}/joint/{t.name}_engine_joint/"
                                                                 f"cmd_pos"} if t.azimuth is not None else {}))
                                         for t in vessel.thrusters]}}
    data["vessel"] = str(Path(vessel.source_file).resolve())
    data["mission"] = str(Path(mission_path).resolve())
    data["backend"] = "gazebo"
    if log_dir:
        data["logging"] = {**data.get("logging", {}), "enabled": True, "dir": str(Path(log_dir).resolve()),
                           "rate_hz": float(min(log_rate_hz, 50.0)), "keep_runs": 100000, "max_total_mb": 1e7}
    else:
        data["logging"] = {**data.get("logging", {}), "enabled": False}
    path = workdir / "boat.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    from autopilot.command_auth import write_new_token
    write_new_token(workdir / "command.token")       # the run's own token: commands are signed, as on a boat
    return path


class _Observer:
    """Subscribes to the autopilot's state (latched JSON) and odometry, and calls its services."""

    def __init__(self, node, cfg, tb):
        from nav_msgs.msg import Odometry
        from std_msgs.msg import String
        from std_srvs.srv import SetBool

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
        self.arm_client = node.create_client(SetBool, resolve_topic(ns, t.arm))
        from autopilot.command_auth import read_token
        self._token = read_token(cfg.token_path())

    def _on_state(self, msg) -> None:
        self.state = json.loads(msg.data)

    def command(self, text: str) -> None:
        """Publish `text` signed with the run's token (the autopilot answers on its events topic)."""
        from std_msgs.msg import String

        from autopilot.command_auth import sign
        self.command_pub.publish(String(data=sign(self._token, "autopilot-sim", text)))


def run_ros_sim(vessel, mission, env, args) -> dict:
    """Fly `mission` with the autopilot in its own process against the stand-in; return the sim report.

    `args` carries the sim options of `autopilot sim`: seed, gps_noise, gps_rate_hz, duration, realtime (missing
    attributes take their defaults), and optionally `lockstep_timeout_s`.
    """
    import rclpy

    from autopilot.boat_config import load_boat_config
    from autopilot.guidance import Leg, MissionGuidance, mission_frame
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
    if not mission.source_file:
        raise ValueError("mission: run_ros_sim needs a mission loaded from a file (the autopilot process reads it)")

    frame = mission_frame(mission)
    guidance = MissionGuidance(mission, vessel, frame)
    wps = guidance.waypoints_ned
    with tempfile.TemporaryDirectory(prefix="autopilot-ros-sim-") as tmp:
        log_dir = getattr(args, "log", None)
        cfg_path = boat_config_for(vessel, mission.source_file, Path(tmp), log_dir=log_dir,
                                   log_rate_hz=float(getattr(args, "log_rate_hz", 10.0) or 10.0))
        from autopilot.runlog.rundir import list_runs
        runs_before = set(list_runs(Path(log_dir))) if log_dir else set()
        cfg = load_boat_config(cfg_path)
        context = rclpy.Context()
        rclpy.init(context=context)
        child = subprocess.Popen([sys.executable, "-m", "autopilot.cli", "run", "--config", str(cfg_path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ),
                                 text=True)
        standin = None
        try:
            standin = standin_for_boat_config(cfg, vessel, mission, context=context, env=env, seed=seed,
                                              gps_noise=gps_noise, gps_rate_hz=gps_rate_hz)
            obs_node = rclpy.create_node("autopilot_sim_observer", context=context)
            standin.add_node(obs_node)
            obs = _Observer(obs_node, cfg, standin.tb)
            if not standin.wait_for_peers(timeout_s=30.0) or not obs.arm_client.wait_for_service(timeout_sec=10.0):
                raise RuntimeError("the autopilot process did not come up on DDS within 30 s")
            n0, e0, _ = standin.plant.truth.north_m, standin.plant.truth.east_m, None
            t_end = duration if duration is not None else \
                120.0 + 3.0 * mission_length_m(wps, (n0, e0)) / mission.cruise_speed_mps
            metrics = SimMetrics(lookahead_m=guidance.lookahead_m)
            truth_at: dict = {}
            start_ne = (n0, e0)
            progress = {"auto_sent": False, "completed_at": None, "odom_seen": 0}
            invalid_nav = NavState(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, valid=False)

            def leg_for(index: int) -> Leg:
                a = start_ne if index == 0 else wps[min(index, len(wps)) - 1]
                b = wps[min(index, len(wps) - 1)]
                return Leg(a[0], a[1], b[0], b[1])

            def on_step(t: float, truth) -> bool:
                key = round(t, 6)
                truth_at[key] = truth
                if truth.angle_rad:
                    progress["pod_angle_max"] = max(progress.get("pod_angle_max", 0.0),
                                                    max(abs(a) for a in truth.angle_rad))
                st = obs.state
                if not st.get("armed"):
                    if standin.k % 10 == 1:
                        obs.command("arm")
                elif not progress["auto_sent"]:
                    obs.command("mode AUTO")
                    progress["auto_sent"] = True
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
            standin.run(t_end, realtime=realtime, lockstep_timeout_s=lockstep_timeout_s, on_step=on_step)
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
            rclpy.shutdown(context=context)
        if child.returncode not in (0, -2) and progress.get("completed_at") is None:
            raise RuntimeError(f"the autopilot process failed (exit {child.returncode}):\n{out[-3000:]}")

    metrics.gps_err.extend(standin.gps_truth_errors_m)
    lat = sorted(standin.latencies_s)
    st = obs.state
    sim_time = standin.k * standin.step_s

    def pct(q):
        if not lat:
            return float("nan")
        return 1e3 * lat[min(len(lat) - 1, int(math.ceil(q / 100.0 * len(lat))) - 1)]

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
        "latency_p50_ms": round(pct(50), 3), "latency_p90_ms": round(pct(90), 3),
        "latency_p99_ms": round(pct(99), 3),
        "latency_max_ms": round(1e3 * lat[-1], 3) if lat else float("nan"),
        "steps": standin.k, "steps_unanswered": standin.missed_steps,
    }
    report.update(metrics.summary())
    if "pod_angle_max" in progress:       # azimuth pods: how far the stand-in's pods turned on the angle topics
        report["pod_angle_max_deg"] = round(math.degrees(progress["pod_angle_max"]), 2)
    if log_dir:
        new_runs = [r for r in list_runs(Path(log_dir)) if r not in runs_before]
        report["log_dir"] = str(new_runs[-1]) if new_runs else None
    for line in out.splitlines():
        if "cycles, cost p50" in line:
            report["autopilot_process_timing"] = line.split("thrusters at neutral; ", 1)[-1].strip()
    return report
