"""The PC side of a HIL bench: the Gazebo stand-in flies the plant, this drives the autopilot like an operator
and scores the run from ground truth the autopilot never sees.

`fly_bench` waits for the autopilot to appear (its latched state reaches us: it is up, and its replies cross the
link), arms it and asks for AUTO through the normal command path (signed commands on its command topic, each
resent until the state shows it: autopilot/ros/bench_commands.py), records truth every step and returns the
same report as `autopilot sim` (cross-track from truth, estimate error from its odometry, failsafes from its
events) plus the link's figures (autopilot/ros/link_figures.py: stamped latency, loss per topic, outages). It is used by
`autopilot sim --transport ros` (autopilot in a child process) and by `autopilot hil serve` (autopilot on the
Pi, started there with `autopilot run`).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, TypedDict

if TYPE_CHECKING:
    from hil.sim.plant_spec import PlantSpec

    class _ProgressSeen(TypedDict):
        completed_at: Optional[float]       # sim time the mission completed at
        odom_seen: int                      # odometry messages looked at

    class _Progress(_ProgressSeen, total=False):
        held_at: Optional[float]            # sim time a failsafe left the boat in HOLD
        pod_angle_max: float                # largest pod angle on the angle topics [rad]

# the link is too poor for the control loop when the p99 sensor->thrust latency exceeds this many control
# periods (100 ms at 50 Hz: the heading loop then acts on a boat that has turned a tenth of a second on)
LINK_WARN_PERIODS = 5
LINK_WARN_LOSS = 0.02           # or when more than this fraction of any topic's messages is lost
HELD_END_S = 10.0               # without a set duration, a run ends this long (sim) after a failsafe's HOLD


class BenchError(RuntimeError):
    """The bench could not run: the autopilot did not appear, or it does not speak the stand-in's topics."""


@dataclass(frozen=True)
class BenchOptions:
    seed: int = 1
    gps_noise: str = "realistic"
    gps_rate_hz: Optional[float] = None
    duration: Optional[float] = None          # simulated seconds; None: until complete + 5 s, or HELD_END_S after
    #                                           a failsafe's HOLD (or a generous cap)
    realtime: bool = False
    lockstep_timeout_s: float = 1.0
    lockstep_window: int = 1                  # steps in flight in lockstep (see GazeboStandin.run)
    command_timeout_s: float = 1.0            # wall seconds before an unanswered command is resent
    on_outage: str = "pause"                  # see GazeboStandin.run
    mode: str = "AUTO"                        # asked for once armed; MANUAL: the sticks (a joy node) drive
    plant_spec: Optional[PlantSpec] = None    # the true boat (None: the vessel file)
    latency_log: Optional[str] = None         # CSV of every stamp's latency (autopilot/ros/link_figures.py write_csv)


def bench_options(args) -> BenchOptions:
    """From `autopilot sim`/`hil serve` arguments (missing attributes take their defaults)."""
    return BenchOptions(seed=int(getattr(args, "seed", 1) or 1),
                        gps_noise=getattr(args, "gps_noise", "realistic") or "realistic",
                        gps_rate_hz=getattr(args, "gps_rate_hz", None),
                        duration=getattr(args, "duration", None),
                        realtime=bool(getattr(args, "realtime", False)),
                        lockstep_timeout_s=float(getattr(args, "lockstep_timeout_s", 1.0) or 1.0),
                        lockstep_window=int(getattr(args, "lockstep_window", 1) or 1),
                        command_timeout_s=float(getattr(args, "command_timeout_s", 1.0) or 1.0),
                        on_outage=getattr(args, "on_outage", None) or "pause",
                        mode=(getattr(args, "mode", None) or "AUTO").upper(),
                        plant_spec=getattr(args, "plant_spec", None),
                        latency_log=getattr(args, "latency_log", None))


class _Observer:
    """Subscribes to the autopilot's state (latched JSON), events and odometry; sends signed commands."""

    def __init__(self, node, cfg, tb) -> None:
        from nav_msgs.msg import Odometry
        from std_msgs.msg import String

        from autopilot.files.boat import resolve_topic
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
        from autopilot.commands.auth import read_token
        self._token = read_token(cfg.token_path())

    def _on_state(self, msg) -> None:
        self.state = json.loads(msg.data)

    def command(self, text: str) -> None:
        """Publish `text` signed with the run's token (the autopilot answers on its events topic)."""
        from std_msgs.msg import String

        from autopilot.commands.auth import sign
        self.command_pub.publish(String(data=sign(self._token, "autopilot-sim", text)))


def _wait_for_autopilot(standin, obs, timeout_s: float) -> bool:
    """Until the autopilot's latched state arrived and the stand-in's topics are matched."""
    end = time.perf_counter() + timeout_s
    while time.perf_counter() < end:
        if obs.state and standin.peers_matched():
            standin.spin_for(0.2)           # let the matching finish on the other side too
            return True
        standin.spin_for(0.1)
    return False


def link_warnings(report: dict) -> list:
    """Why the link is too poor for the vessel's control rate (empty: it is good enough)."""
    out = []
    period_ms = 1e3 / report["control_rate_hz"]
    p99 = report.get("latency_p99_ms")
    if p99 is not None and p99 == p99 and p99 > LINK_WARN_PERIODS * period_ms:
        out.append(f"sensor->thrust latency p99 {p99:.0f} ms is more than {LINK_WARN_PERIODS} control periods "
                   f"({LINK_WARN_PERIODS * period_ms:.0f} ms at {report['control_rate_hz']:g} Hz)")
    for topic, frac in sorted(report.get("loss", {}).items()):
        if frac > LINK_WARN_LOSS:
            out.append(f"{topic}: {100 * frac:.1f} % of messages lost (more than {100 * LINK_WARN_LOSS:g} %)")
    for o in report.get("outages", []):
        out.append(f"link outage of {o['wall_s']:.1f} s at sim time {o['start_sim_s']:.1f} s ({o['mode']})")
    return out


def fly_bench_in_own_context(cfg, vessel, mission, env, opts: BenchOptions, wait_s: float = 30.0) -> dict:
    """fly_bench on an rclpy context of its own, initialised here and shut down after."""
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        return fly_bench(cfg, vessel, mission, env, context, opts, wait_s)
    finally:
        rclpy.shutdown(context=context)


def fly_bench(cfg, vessel, mission, env, context, opts: BenchOptions, wait_s: float = 30.0, stop=None) -> dict:
    """Run the stand-in for `cfg` (a boat config with a gazebo section) against an autopilot speaking it, on
    `context` (an initialised rclpy Context); return the report. BenchError when no autopilot appears in wait_s.
    `stop(t)` True ends the run early (checked every step with the sim time t [s])."""
    import rclpy

    from autopilot.guidance.path_following import Leg, MissionGuidance, mission_frame
    from autopilot.ros.bench_commands import RetriedCommand
    from autopilot.ros.messages import odometry_to_nav_state
    from autopilot.vocab.angles import wrap_pi
    from autopilot.vocab.types import NavState
    from hil.ros.gazebo_standin import standin_for_boat_config
    from hil.sim.metrics import SimMetrics
    from hil.sim.plant_spec import PlantSpec
    from hil.sim.runner import mission_length_m

    frame = mission_frame(mission)
    guidance = MissionGuidance(mission, vessel, frame)
    wps = guidance.waypoints_ned
    standin = standin_for_boat_config(cfg, vessel, mission, context=context, env=env, seed=opts.seed,
                                      gps_noise=opts.gps_noise, gps_rate_hz=opts.gps_rate_hz,
                                      plant_spec=opts.plant_spec)
    try:
        obs_node = rclpy.create_node("autopilot_sim_observer", context=context)
        standin.add_node(obs_node)
        obs = _Observer(obs_node, cfg, standin.tb)
        if not _wait_for_autopilot(standin, obs, wait_s):
            raise BenchError(f"no autopilot appeared on namespace {cfg.ros.namespace or '/'} (ROS domain "
                             f"{context.get_domain_id()}) within {wait_s:g} s: is `autopilot run` running with "
                             f"backend: gazebo, and can discovery reach it?")
        n0, e0 = standin.plant.truth.north_m, standin.plant.truth.east_m
        t_end = opts.duration if opts.duration is not None else \
            120.0 + 3.0 * mission_length_m(wps, (n0, e0)) / mission.cruise_speed_mps
        metrics = SimMetrics(lookahead_m=guidance.lookahead_m)
        truth_at: dict = {}
        progress: _Progress = {"completed_at": None, "odom_seen": 0}
        arm = RetriedCommand("arm", lambda st: bool(st.get("armed")), "arm", timeout_s=opts.command_timeout_s)
        if opts.mode == "AUTO":
            auto = RetriedCommand("mode AUTO",
                                  lambda st: st.get("mode") == "AUTO" or bool(st.get("mission_complete")),
                                  "mode auto", timeout_s=opts.command_timeout_s)
        else:
            auto = RetriedCommand(f"mode {opts.mode}", lambda st: st.get("mode") == opts.mode,
                                  f"mode {opts.mode.lower()}", timeout_s=opts.command_timeout_s)
        invalid_nav = NavState(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, valid=False)

        def leg_for(index: int) -> Leg:
            a = (n0, e0) if index == 0 else wps[min(index, len(wps)) - 1]
            b = wps[min(index, len(wps) - 1)]
            return Leg(a[0], a[1], b[0], b[1])

        def on_step(t: float, truth) -> bool:
            truth_at[round(t, 6)] = truth
            if getattr(truth, "angle_rad", None):          # azimuth pods: how far they turned on the angle topics
                progress["pod_angle_max"] = max(progress.get("pod_angle_max", 0.0),
                                                max(abs(a) for a in truth.angle_rad))
            st = obs.state
            if arm.tick(st, obs.events, obs.command):      # then AUTO, once; each resent until it shows
                auto.tick(st, obs.events, obs.command)
            idx = int(st.get("waypoint_index", 0))
            if st.get("mode") == "AUTO" and not st.get("mission_complete"):
                metrics.add_cycle(t, (truth.north_m, truth.east_m), truth.heading_rad, invalid_nav,
                                  leg_for(idx), idx, True)
            for od in obs.odom[progress["odom_seen"]:]:
                nav = odometry_to_nav_state(od, standin.tb)
                tr = truth_at.get(round(round(nav.time_s / standin.step_s) * standin.step_s, 6))
                if tr is not None and nav.pos_std_m < 1e3:
                    metrics.pos_err.append(math.hypot(nav.north_m - tr.north_m, nav.east_m - tr.east_m))
                    metrics.heading_err.append(wrap_pi(nav.heading_rad - tr.heading_rad))
            progress["odom_seen"] = len(obs.odom)
            if st.get("mission_complete") and progress["completed_at"] is None:
                progress["completed_at"] = t
            # a failsafe left the boat in HOLD: it stays there until an operator acts, which the bench does not
            held = st.get("mode") == "HOLD" and any(e.startswith("[failsafe]") and e.endswith("action: hold")
                                                    for e in obs.events)
            progress["held_at"] = (progress.get("held_at") or t) if held else None
            if len(truth_at) > 600:
                for k in sorted(truth_at)[:-500]:
                    del truth_at[k]
            if stop is not None and stop(t):
                return True
            return opts.duration is None and (
                (progress["completed_at"] is not None and t >= progress["completed_at"] + 5.0)
                or (progress["held_at"] is not None and t >= progress["held_at"] + HELD_END_S))

        wall0 = time.perf_counter()
        standin.run(t_end, realtime=opts.realtime, lockstep_timeout_s=opts.lockstep_timeout_s,
                    lockstep_window=opts.lockstep_window, on_step=on_step,
                    on_outage=opts.on_outage)
        wall = time.perf_counter() - wall0
        standin.spin_for(0.3)
    finally:
        try:
            standin.destroy()
        except Exception:
            pass

    metrics.gps_err.extend(standin.gps_truth_errors_m)
    if opts.latency_log:
        standin.stamped.write_csv(opts.latency_log)
    figures = standin.link_figures()
    st = obs.state
    sim_time = standin.k * standin.step_s
    report = {
        "vessel": vessel.name, "mission": mission.name, "seed": opts.seed, "transport": "ros",
        "mission_complete": bool(st.get("mission_complete", False)),
        "mission_complete_time_s": progress["completed_at"],
        "waypoints_reached": int(st.get("waypoints_reached", 0)),
        "waypoints_total": int(st.get("waypoints_total", len(wps))),
        "sim_time_s": round(sim_time, 3), "wall_time_s": round(wall, 3),
        "realtime_factor": round(sim_time / wall, 1) if wall > 0 else float("inf"),
        "control_rate_hz": vessel.control.loop_rate_hz, "gps_noise": opts.gps_noise,
        "gps_rate_hz": opts.gps_rate_hz or vessel.sensors.gnss.rate_hz,
        "plant": (opts.plant_spec or PlantSpec.resolve(vessel, opts.seed)).describe(),
        **figures,
        "steps": standin.k, "steps_unanswered": standin.missed_steps,
        "commands": {"arm": arm.summary(), f"mode {opts.mode}": auto.summary()},
        "mode_asked": opts.mode, "mode_at_end": st.get("mode"),
        "failsafes": [e for e in obs.events if e.startswith("[failsafe]")],
        "clock_events": [e for e in obs.events if e.startswith("[clock]")],     # the autopilot's time source
        "operator_streams": [e for e in obs.events if e.startswith("operator ") and " stream (from " in e],
    }
    report.update(metrics.summary())
    report["link_warnings"] = link_warnings(report)
    if "pod_angle_max" in progress:
        report["pod_angle_max_deg"] = round(math.degrees(progress["pod_angle_max"]), 2)
    return report
