"""`autopilot sim MISSION --transport ros`: the autopilot process and the Gazebo stand-in over real DDS.

The autopilot runs as its own process (`autopilot run` with the vessel's gazebo boat config: the gazebo backend,
/clock, bridge topic names), exactly as it would against Gazebo; a token is made for the run so commands are
signed as on a boat. This process is the bench's PC side (hil/ros/hil_bench.py): the stand-in, the
operator's commands, and the report of the in-process sim computed from truth, plus the link's figures:
- latency_p50/p90/p99/max_ms: per sensor stamp, wall time from the stand-in publishing it to the DDS reception of
  the first thrust computed from it (both hops and the autopilot's cycle; autopilot/ros/link_figures.py), in lockstep
  and
  real time alike; `loss`: fraction of messages lost per topic, both directions, counted by stamp; `outages`;
- steps_unanswered: steps for which no thrust came back within the lockstep timeout;
- log_dir: with `--log DIR`, the run directory the autopilot process wrote (its own run log, a rosbag2 bag of
  the topics it publishes; the plant's truth stays in the stand-in, so it has no sim/truth topic).
With `link`, the autopilot runs in a ROS domain of its own behind hil/ros/link_relay.py (an emulated Wi-Fi link).
With `mode` MANUAL the bench arms and asks for MANUAL instead of AUTO; with `gamepad` (a sequence CSV) a third
process, hil/ros/joy_standin.py, publishes sensor_msgs/Joy as the `joy` package's joy_node would with an operator
playing the sequence (enable button held), and the report's `gamepad` says what it played.
With `plant_spec` (--plant-vessel/--mismatch) the stand-in flies that boat instead of the vessel file.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import yaml

from autopilot.vocab.config import CONFIG_DIR


def boat_config_for(vessel, mission_path: str, workdir: Path, log_dir: Optional[str] = None,
                    log_rate_hz: float = 10.0, gnss_velocity: bool = False) -> Path:
    """The vessel's gazebo boat config (config/gazebo/NAME_boat.yaml) pointed at `mission_path`, or, for a vessel
    without one, a generic Gazebo-Thruster-system mapping (/model/NAME/joint/THRUSTER_thruster_joint/cmd_thrust).
    With `log_dir` the autopilot process writes its run log there (as `autopilot run` does on a boat: a rosbag2
    run directory); without, it logs nothing. With `gnss_velocity` the GNSS velocity comes too, on a topic beside
    the fix (gazebo.gnss.velocity_topic, NAMESPACE/gnss/vel unless the config names one)."""
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
    gnss = data["gazebo"]["gnss"]
    if gnss_velocity and not gnss.get("velocity_topic"):
        gnss["velocity_topic"] = gnss["topic"].rsplit("/", 1)[0] + "/vel" if "/" in gnss["topic"] else "gnss/vel"
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
    from autopilot.commands.auth import write_new_token
    write_new_token(workdir / "command.token")       # the run's own token: commands are signed, as on a boat
    return path


def pi_domain_for(pc_domain: int) -> int:
    """The autopilot's ROS domain behind an emulated link: another valid domain (0..232), never the PC's."""
    return (pc_domain + 101) % 233


def _start_relay(cfg_path: Path, pc_domain: int, pi_domain: int, link) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hil.ros.link_relay", "--config", str(cfg_path), "--pc-domain", str(pc_domain),
           "--pi-domain", str(pi_domain), "--delay-ms", str(link.delay_ms), "--jitter-ms", str(link.jitter_ms),
           "--loss", str(link.loss), "--repair-ms", str(link.repair_ms), "--seed", str(link.seed)]
    for start, dur in link.outages:
        cmd += ["--outage", f"{start}:{dur}"]
    for key, n in link.drop_first.items():
        cmd += ["--drop-first", f"{key}={n}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None          # stdout=PIPE
    line = proc.stdout.readline()
    if "link relay up" not in line:
        rest = proc.communicate(timeout=10)[0]
        raise RuntimeError(f"the link relay did not start: {line}{rest}")
    return proc


def _stop_child(proc: subprocess.Popen) -> str:
    """What a child process (the link relay, the joy stand-in, the autopilot) printed, once it has ended: SIGINT
    if it is still running (the joy stand-in exits by itself once its sequence is played), SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.send_signal(2)
    try:
        return proc.communicate(timeout=10)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


AUTOPILOT_WAIT_S = 60.0   # wall seconds for the autopilot process to come up (imports + discovery); 30 s was
                          # exceeded once on a 2-core machine at load average 12
PAD_TAIL_S = 2.5     # sim seconds flown after the joy stand-in is done: MANUAL's timeout to neutral shows in the log


def _after_pad(pad: subprocess.Popen):
    """stop(t) for fly_bench: True PAD_TAIL_S after the stand-in process has exited."""
    done_at: List[float] = []

    def stop(t: float) -> bool:
        if not done_at and pad.poll() is not None:
            done_at.append(t)
        return bool(done_at) and t >= done_at[0] + PAD_TAIL_S
    return stop


def run_ros_sim(vessel, mission, env, args) -> dict:
    """Fly `mission` with the autopilot in its own process against the stand-in; return the sim report.

    `args` carries the sim options of `autopilot sim`: seed, gps_noise, gps_rate_hz, duration, realtime, mode,
    plant_spec, gnss_velocity, gamepad (missing attributes take their defaults; with gamepad the run ends once the
    stand-in has played its sequence, or at duration), and optionally `lockstep_timeout_s`, `command_timeout_s` (wall
    seconds
    before an unanswered command is resent), `on_outage` ("pause" or "run", see GazeboStandin.run) and `link` (a
    hil.ros.link_relay.LinkSpec: the autopilot then runs in a ROS domain of its own and everything crosses through
    an emulated link).
    """
    import rclpy

    from autopilot.files.boat import load_boat_config
    from hil.ros.hil_bench import bench_options, fly_bench

    opts = bench_options(args)
    link = getattr(args, "link", None)
    if not mission.source_file:
        raise ValueError("mission: run_ros_sim needs a mission loaded from a file (the autopilot process reads it)")
    with tempfile.TemporaryDirectory(prefix="autopilot-ros-sim-") as tmp:
        log_dir = getattr(args, "log", None)
        cfg_path = boat_config_for(vessel, mission.source_file, Path(tmp), log_dir=log_dir,
                                   log_rate_hz=float(getattr(args, "log_rate_hz", 10.0) or 10.0),
                                   gnss_velocity=bool(getattr(args, "gnss_velocity", False)))
        from autopilot.runlog.rundir import list_runs
        runs_before = set(list_runs(Path(log_dir))) if log_dir else set()
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
        gamepad = getattr(args, "gamepad", None)
        pad = None
        if gamepad:                     # on the autopilot's domain, where a joy_node beside it would be
            pad = subprocess.Popen([sys.executable, "-m", "hil.ros.joy_standin", str(gamepad), "--config",
                                    str(cfg_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=child_env, text=True)
        report = None
        try:
            report = fly_bench(cfg, vessel, mission, env, context, opts, wait_s=AUTOPILOT_WAIT_S,
                               stop=_after_pad(pad) if pad is not None else None)
        finally:
            pad_out = _stop_child(pad) if pad is not None else ""
            out = _stop_child(child)
            relay_out = _stop_child(relay) if relay is not None else ""
            rclpy.shutdown(context=context)
            if report is None and child.returncode not in (0, -2):
                print(f"the autopilot process (exit {child.returncode}) said:\n{out[-3000:]}", file=sys.stderr)
        if child.returncode not in (0, -2) and report.get("mission_complete_time_s") is None:
            raise RuntimeError(f"the autopilot process failed (exit {child.returncode}):\n{out[-3000:]}")
    if pad is not None:
        said = [line for line in pad_out.splitlines() if line.startswith("joy stand-in:")]
        report["gamepad"] = {"sequence": str(gamepad), "exit": pad.returncode,
                             "said": said[-1] if said else pad_out[-500:]}
    if link is not None:
        report["link"] = {"delay_ms": link.delay_ms, "jitter_ms": link.jitter_ms, "loss": link.loss,
                          "outages": [list(o) for o in link.outages]}
        for line in relay_out.splitlines():
            if line.startswith("link relay: "):
                report["link"]["relay_counts"] = line.split(": ", 1)[1]
    if log_dir:
        new_runs = [r for r in list_runs(Path(log_dir)) if r not in runs_before]
        report["log_dir"] = str(new_runs[-1]) if new_runs else None
    for line in out.splitlines():
        if "cycles, cost p50" in line:
            report["autopilot_process_timing"] = line.split("thrusters at neutral; ", 1)[-1].strip()
    return report
