"""The boat's runtime on Python alone: the core, its backend, the operator desk and the control loop.

`BoatRuntime(cfg, vessel, mission, now_ns=...)` builds the core (autopilot.vehicle.Autopilot), the backend
(hw or sim, or one the caller's `backend_factory(runtime)` makes: the ROS rim's Gazebo) and the OperatorDesk
every commander goes through (MAVLink, ROS, `autopilot command`). `run_cycle(t_s)` is one control cycle:
poll the backend, step the core, send the thrust to the backend first, then tell the observers. Who drives it:

- wall clock: `start_loop()` runs cycles in a thread of their own on a fixed grid at the vessel's loop rate;
  a loop that fell more than a period behind restarts the grid and reports the missed deadline to the overrun
  failsafe.
- simulated time: the ROS rim calls `run_cycle(t)` from /clock (autopilot/ros/autopilot_node.py).

Everything that touches the core takes `lock` first (commands, MAVLink, the ROS rim), so nothing sees half a
cycle. Time: core seconds = (now_ns() - origin_ns) * 1e-9. A cycle that raises puts the thrusters to neutral and
is logged; the next cycle runs as usual. `stop()` ends the cycles, disarms and leaves the outputs at neutral.

Observers (ROS publishers, for instance) get `cycle_done(t_s, batch, result)` after every cycle,
`core_event(event)` for each core event, `desk_event(text, error)` for each operator-desk answer,
`mission_loaded()` after a new mission, and `outputs_neutral(pulses_us)` whenever the outputs went to neutral.
A method an observer lacks is not called; an observer that raises is logged, never fatal to the loop.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from autopilot.commands.limits import RepeatQuieter, origin_of
from autopilot.runtime.cycle_stats import CycleStats, SensorWatch

if TYPE_CHECKING:
    from autopilot.mavlink.server import LoopCalls
    from autopilot.vehicle import CycleResult

LOG = logging.getLogger("autopilot")


class BoatRuntime:
    """One boat's core, backend and desk, driven by `start_loop()` (wall clock) or `run_cycle(t_s)` (caller's
    time). `now_ns()` is the clock [ns]; `epoch_of_origin_ns` the UTC [ns since the epoch] of core time 0, for
    the run log's stamps (None under simulated time). `backend_factory(runtime) -> backend`; without it the
    runtime makes the config's hw or sim backend (autopilot.runtime.backends.make_backend; ValueError for
    gazebo). Device errors of the backend propagate
    from the constructor (nothing was driven yet)."""

    def __init__(self, cfg, vessel, mission, *, now_ns: Callable[[], int], origin_ns: Optional[int] = None,
                 epoch_of_origin_ns: Optional[int] = None,
                 backend_factory: Optional[Callable] = None, services=None, params=None, seed: int = 1,
                 log=None, observers=(), autopilot_factory: Optional[Callable] = None,
                 allow_sim_calibration: bool = False):
        self.cfg = cfg
        self.vessel = vessel
        self.log = log if log is not None else LOG
        self.observers = list(observers)
        self.period_s = 1.0 / vessel.control.loop_rate_hz
        self._now_ns = now_ns
        self.origin_ns = now_ns() if origin_ns is None else origin_ns
        # what stop() needs exists before anything can fail (a device that does not open, say)
        self.backend: Any = None
        self._stopped = False
        self._loop_thread: Optional[threading.Thread] = None
        self._loop_stop = threading.Event()
        self.keep_running: Callable[[], bool] = lambda: True     # the ROS rim: its context is still up
        self.lock = threading.RLock()
        self._quieter = RepeatQuieter()        # refusals to the log: once a second per origin
        self.stats = CycleStats(self.period_s)
        self.sensors = SensorWatch()
        self.last_result: Optional[CycleResult] = None
        self.loop_calls: Optional[LoopCalls] = None      # a MAVLink server's LoopCalls, run between cycles
        self.services = services
        if autopilot_factory is None:
            from autopilot.vehicle import Autopilot
            autopilot_factory = Autopilot
        self.autopilot = autopilot_factory(vessel, mission, on_event=self._on_core_event)
        self.frame = self.autopilot.frame
        if backend_factory is None:
            from autopilot.runtime.backends import make_backend

            def backend_factory(rt):
                return make_backend(cfg, vessel, mission, rt.frame, rt.now_s, seed=seed,
                                    allow_sim_calibration=allow_sim_calibration)
        self.backend = backend_factory(self)
        self._fit_core_to_backend(cfg.backend)
        self.params = params
        from autopilot.commands.desk import OperatorDesk
        self.desk = OperatorDesk(self.autopilot, vessel, self.now_s, mission_dirs=cfg.mission_dirs(),
                                 on_event=self._desk_event, on_mission=self._mission_loaded, params=params)
        if services is not None:
            self._attach_services(services, epoch_of_origin_ns)

    # ------------------------------------------------------------------ wiring
    def _fit_core_to_backend(self, backend_name: str) -> None:
        """The pre-arm check and the ESC failsafe read the backend's `connected`; a simulated magnetometer
        without hard or soft iron needs no calibration, and a simulation never rewrites the boat's file."""
        if not hasattr(self.autopilot, "set_actuator"):
            return
        self.autopilot.set_actuator(self.backend)
        if backend_name not in ("sim", "gazebo"):
            return
        if getattr(self.autopilot, "mag_watch", None) is not None:
            self.autopilot.mag_watch.save_path = None
        from autopilot.vocab.config import mag_is_undistorted
        if backend_name == "gazebo" or mag_is_undistorted(self.vessel):
            from estimation.heading.mag_calibration import MagCalibration
            self.autopilot.set_mag_calibration(MagCalibration())

    def _attach_services(self, services, epoch_of_origin_ns: Optional[int]) -> None:
        services.applied_thrust_fn = self.applied_thrust_n     # read only when a log row is due
        services.estimator = self.autopilot.estimator          # its inputs are logged for replay
        if epoch_of_origin_ns is not None:      # run.mcap's stamps: UTC of core time 0 (None: simulated time)
            services.time_offset_ns = epoch_of_origin_ns
        core = self.autopilot
        services.path_fn = lambda: (core.guidance.waypoints_ned,
                                    core.start_point_ned() if hasattr(core, "start_point_ned") else None)

    def _notify(self, method: str, *args) -> None:
        for obs in self.observers:
            fn = getattr(obs, method, None)
            if fn is None:
                continue
            try:
                fn(*args)
            except Exception as e:      # an observer's fault (a publisher after shutdown) never stops the loop
                if self.keep_running():
                    self.log.error(f"{type(obs).__name__}.{method}: {e!r}")

    # ------------------------------------------------------------------ time and the cycle
    def now_s(self) -> float:
        """Core time now [s]."""
        return (self._now_ns() - self.origin_ns) * 1e-9

    def start_loop(self) -> None:
        """Run cycles on the wall clock in a thread of their own until stop()."""
        if self._loop_thread is None:
            self._loop_thread = threading.Thread(target=self._control_loop, name="control-loop", daemon=True)
            self._loop_thread.start()

    def _control_loop(self) -> None:
        next_wall = time.monotonic()
        while not self._loop_stop.is_set():
            next_wall += self.period_s
            delay = next_wall - time.monotonic()
            if delay > 0.0:
                if self._loop_stop.wait(delay):
                    break
            elif delay < -self.period_s:
                next_wall = time.monotonic()
            if not self.keep_running():
                break
            with self.lock:
                try:
                    self.run_cycle(self.now_s(), wall_clock=True)
                except Exception as e:      # a bug in an observer after the process began to stop
                    if not self.keep_running():
                        break
                    self.log.error(f"control loop: {e!r}")

    def run_cycle(self, t_s: float, wall_clock: bool = False) -> None:
        """One control cycle at core time t_s (call it under `lock`). Never raises for a backend or core fault:
        it is logged and the thrusters go to neutral. `wall_clock`: a late cycle is a missed deadline."""
        if self._stopped:
            return
        assert self.backend is not None     # made in __init__ before any cycle can run
        start = time.perf_counter()
        if self.loop_calls is not None:      # a MAVLink server's commands and snapshots, between cycles
            self.loop_calls.run_pending()
        try:
            batch = self.backend.poll(t_s)
            result = self.autopilot.step(t_s, batch)
            if result.thrust.angle_rad is None:
                self.backend.write(t_s, result.thrust.thrust_n, result.pulses.pulse_us)
            else:                       # azimuth pods: only the sim and gazebo backends take angles
                self.backend.write(t_s, result.thrust.thrust_n, result.pulses.pulse_us,
                                   angle_rad=result.thrust.angle_rad)
        except Exception as e:          # a fault in one cycle must not leave a thruster driven
            self.log.error(f"control cycle failed at t={t_s:.3f} s: {e!r}; thrusters to neutral")
            self.neutral_outputs()
            return
        end = time.perf_counter()
        if wall_clock:
            # a missed deadline: the cycle took longer than its period, or the timer woke it late
            prev = self.stats.last_cycle_wall_s
            late = max(end - start, 0.0 if prev is None else start - prev) - self.period_s
            if late > 0.0:
                self.autopilot.report_overrun(t_s, late)
        self.stats.add(start, end, getattr(self.backend, "last_input_wall_s", None))
        self.sensors.add(batch)
        self.last_result = result
        if self.services is not None:
            self.services.on_cycle(t_s, batch, result)
        self._notify("cycle_done", t_s, batch, result)

    def applied_thrust_n(self) -> Optional[tuple]:
        """The thrust of the pulses the ESCs output now (slew included) [N], for the run log; None when the
        backend cannot say (the log then has the thrust of the commanded pulses)."""
        sent = getattr(self.backend, "sent_pulses_us", None)
        if sent is None:
            return None
        return tuple(m.pulse_to_thrust(p) for m, p in zip(self.autopilot.maps, sent()))

    def estimator_health(self, t_s: float):
        """The estimator's health at t_s, or None when it has none or cannot say."""
        fn = getattr(getattr(self.autopilot, "estimator", None), "health", None)
        if fn is None:
            return None
        try:
            return fn(t_s)
        except Exception:
            return None

    def state_dict(self) -> dict:
        """Mode, arming and mission progress, as the state topic and `autopilot command status` show them."""
        ap, g = self.autopilot, self.autopilot.guidance
        return {"mode": ap.mode.name, "armed": bool(ap.armed), "mission": ap.mission.name,
                "waypoint_index": int(g.index), "waypoints_reached": int(g.waypoints_reached),
                "waypoints_total": int(g.waypoints_total), "mission_complete": bool(g.complete),
                "time_s": round(self.last_result.time_s, 3) if self.last_result else None}

    # ------------------------------------------------------------------ events
    def _on_core_event(self, ev) -> None:
        if self.services is not None:
            self.services.on_event(ev)
        self.log.info(f"[{ev.kind}] {ev.message}")
        self._notify("core_event", ev)

    def _desk_event(self, text: str, error: bool = False) -> None:
        """A desk answer: to the observers (the ROS events topic: every answer, the command client waits for
        its own) and to the log, where a refusal repeated from the same origin is written at most once a
        second, with the count of those left out (a flood fills no pipe and no journal)."""
        self._notify("desk_event", text, error)
        if error:
            logged = self._quieter(origin_of(text), text)
            if logged is not None:
                self.log.warning(logged)
        else:
            self.log.info(text)

    def _mission_loaded(self, _mission) -> None:
        self._notify("mission_loaded")

    # ------------------------------------------------------------------ commands (each takes the lock)
    def arm(self, origin: str = "a caller of BoatRuntime.arm") -> tuple[bool, str]:
        with self.lock:
            a = self.desk.arm(origin)
        return a.ok, a.text

    def disarm(self, reason: str, origin: str = "a caller of BoatRuntime.disarm") -> tuple[bool, str]:
        with self.lock:
            a = self.desk.disarm(reason, origin)
        return a.ok, a.text

    def set_mode(self, name: str, reason: str, origin: str = "a caller of BoatRuntime.set_mode") -> tuple[bool, str]:
        with self.lock:
            a = self.desk.set_mode(name, origin, reason)
        return a.ok, a.text

    def load_mission_file(self, path: str, origin: str = "a caller of BoatRuntime.load_mission_file"
                          ) -> tuple[bool, str]:
        """Load a mission (YAML, QGC WPL 110 or .plan) by path; refused, with every reason, if it fails its
        checks or lies outside the mission folders. The file is read and checked on the calling thread, outside
        the lock (the loop runs on meanwhile); only the swap takes the lock."""
        load = self.desk.prepare_mission_file(path)
        with self.lock:
            a = self.desk.swap_mission(load, origin)
        return a.ok, a.text

    # ------------------------------------------------------------------ stop
    @property
    def stopped(self) -> bool:
        """True once stop() ran: no more cycles."""
        return self._stopped

    def neutral_outputs(self) -> None:
        """Thrusters to neutral now (the backend first, then the observers are told)."""
        assert self.backend is not None
        try:
            self.backend.neutral()
        finally:
            neutral = getattr(self.autopilot, "neutral_pulses", None)
            self._notify("outputs_neutral", None if neutral is None else tuple(neutral.pulse_us))

    def stop(self, reason: str = "autopilot stopping") -> None:
        """No more cycles, disarmed, thrusters to neutral. Safe to call twice and from any thread."""
        self._loop_stop.set()
        loop = self._loop_thread
        if loop is not None and loop is not threading.current_thread():
            loop.join(timeout=2.0)
        with self.lock:
            if self._stopped or self.backend is None:     # never started: no outputs were ever driven
                self._stopped = True
                return
            self._stopped = True
            try:
                if getattr(self.autopilot, "armed", False):
                    self.autopilot.disarm(self.now_s(), reason)
            finally:
                self.neutral_outputs()
                s = self.stats.summary()
                self.log.info(
                    f"{reason}: thrusters at neutral; {s['cycles']} cycles, cost p50 {s['cost_p50_ms']:.2f} ms "
                    f"p99 {s['cost_p99_ms']:.2f} ms, sample-in to thrust-out p50 {s['latency_p50_ms']:.2f} ms "
                    f"p99 {s['latency_p99_ms']:.2f} ms, {s['overruns']} overruns")

    def close(self) -> None:
        """stop(), then release the devices."""
        self.stop()
        close = getattr(self.backend, "close", None) if self.backend is not None else None
        if close is not None:
            close()
