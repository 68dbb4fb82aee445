"""The one command layer: every operator command, from any ground-station path, is checked and answered here.

The ROS node (`autopilot/command` text and its services, the gamepad), the MAVLink adapter and, through the
ROS node, `autopilot command` all call an `OperatorDesk`, so two ground stations can never disagree about what a
command means, which checks it must pass or what it answers. The desk validates, carries the command out on the
`Autopilot`, logs it with its origin (through `on_event`) and answers an `Answer(ok, text)`; every refusal's text
says "refused" and why.

Who may send a command is decided before the desk, by the path it came in on: the ROS node's CommandGate
(signed text commands, autopilot/commands/auth.py) or MAVLink signing (autopilot/mavlink/). `admit_text` runs a
gate and then the text command, for the paths that carry text.

Bad input costs nothing: a text command over MAX_COMMAND_BYTES and a mission path over MAX_PATH_BYTES are
refused before any work (autopilot/commands/limits.py), every refusal quotes at most ECHO_CHARS of what it
refuses, a disarm reason is cut to ECHO_CHARS, and no answer or note reaches the listeners longer than
MAX_LOGGED_CHARS.

Threading: call every method from the thread that steps the autopilot, or under the lock its runner holds
while stepping (the ROS node's `lock`; the MAVLink server takes the same lock, or hands the call to the loop).
The exceptions are `prepare_mission` and `prepare_mission_file`, which may run on any thread (they read the
vessel, the mission folders and the autopilot's fixed frame, and change nothing): loading a mission is that
slow part (reading the file, resolving its path, its checks, building its fences) done off the loop, then
`swap_mission` on the loop, quick, so the loop never waits on a large fence and nothing sees half a cycle.
`load_mission` and `load_mission_file` do both on the calling thread. Times are the runner's core clock
`now_s()` [s].
"""
from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from autopilot.commands.limits import ECHO_CHARS, MAX_COMMAND_BYTES, MAX_LOGGED_CHARS, clip, path_problem, utf8_size
from autopilot.vocab.config import MissionConfig, VesselConfig
from autopilot.vocab.schema import ConfigError


@dataclass(frozen=True)
class MissionLoad:
    """A mission read and checked off the loop (OperatorDesk.prepare_mission, prepare_mission_file), for
    OperatorDesk.swap_mission: either a `refusal` (the file could not be had) or the `mission` with its check
    `problems` (any: refused), the `notes` reading it gave, and the autopilot's `prepared` work (None: done at
    the swap)."""

    mission: Optional[MissionConfig] = None
    source: str = ""
    problems: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    refusal: Optional[str] = None
    prepared: object = None


@dataclass(frozen=True)
class Answer:
    """What a command got: carried out (ok) or refused, and the text that says which (logged and sent back)."""

    ok: bool
    text: str
    reasons: Tuple[str, ...] = ()     # a refusal's separate reasons (each failed pre-arm check), when it has several


STREAM_GAP_S = 5.0      # a heartbeat/manual/velocity stream silent this long [s] is logged again when it resumes

TEXT_COMMANDS = ("'arm', 'disarm [REASON]', 'mode NAME', 'mission PATH', 'heartbeat', "
                 "'manual THROTTLE STEERING', 'velocity SPEED_MPS YAW_RATE_DPS', "
                 "'velocity ned NORTH_MPS EAST_MPS', 'goto local NORTH_M EAST_M [SPEED_MPS]' or "
                 "'goto global LAT_DEG LON_DEG [SPEED_MPS]'")
GUIDED_KINDS = {"body": "surge and yaw rate", "ground": "velocity north and east", "heading": "heading and speed"}


def _refused(text: str) -> Answer:
    return Answer(False, text if "refused" in text.lower() else f"refused: {text}")


class OperatorDesk:
    """Carries out operator commands on one `Autopilot` (see the module docstring).

    `now_s`: the runner's core clock [s]. `mission_dirs`: folders `load_mission_file` may read (empty: any).
    `on_event(text, is_error)`: where each answer is logged (a ROS event, a STATUSTEXT, the run log).
    `params`: an autopilot.files.tunables.ParamStore for `set_param`, or None (parameters then refused).
    `on_mission(mission)`: called after a mission was loaded (a ROS node republishes its path)."""

    def __init__(self, autopilot, vessel: VesselConfig, now_s: Callable[[], float], *,
                 mission_dirs: Sequence[pathlib.Path] = (),
                 on_event: Optional[Callable[[str, bool], None]] = None,
                 params=None, on_mission: Optional[Callable[[MissionConfig], None]] = None):
        self.autopilot = autopilot
        self.vessel = vessel
        self.now_s = now_s
        self.mission_dirs = tuple(mission_dirs)
        self.params = params
        if params is not None:
            params.attach(autopilot)
        self._listeners = [on_event] if on_event is not None else []
        self._on_mission = on_mission
        # (verb, origin) -> core time [s] of its latest command: a stream is logged when it starts, i.e. after
        # STREAM_GAP_S of silence, so two stations beating at once are each logged once, not at every beat
        self._streams: Dict[Tuple[str, str], float] = {}
        # (origin, text) of the last velocity refusal (said once per stream)
        self._velocity_refused: Optional[Tuple[str, str]] = None

    # ------------------------------------------------------------------ logging
    def log(self, text: str, error: bool = False) -> None:
        """Tell every listener `text` (cut to MAX_LOGGED_CHARS)."""
        text = clip(text, MAX_LOGGED_CHARS)
        for listener in self._listeners:
            listener(text, error)

    def add_listener(self, on_event: Callable[[str, bool], None]) -> None:
        """Also tell `on_event(text, is_error)` every answer and note (a ground station's STATUSTEXT)."""
        self._listeners.append(on_event)

    def refuse(self, text: str, origin: str = "") -> Answer:
        """Refuse a command the path it came in on could not admit, logged like every other answer."""
        return self._answer(_refused(text), origin)

    def _answer(self, answer: Answer, origin: str) -> Answer:
        self.log(f"{answer.text} (from {origin})" if origin else answer.text, error=not answer.ok)
        return answer

    # ------------------------------------------------------------------ commands
    def arm(self, origin: str = "") -> Answer:
        """Arm if the pre-arm checks pass; refused with every failing check otherwise."""
        return self._answer(self._arm(), origin)

    def _arm(self) -> Answer:
        ap, t = self.autopilot, self.now_s()
        checks = getattr(ap, "prearm_failures", None)
        if checks is not None:
            failures = checks(t)
            if failures:
                return Answer(False, "arming refused: " + "; ".join(failures), tuple(failures))
        try:
            ap.arm(t)
        except (RuntimeError, ValueError) as e:
            return Answer(False, f"arming refused: {e}")
        if not getattr(ap, "armed", True):
            return Answer(False, "arming refused")
        return Answer(True, "armed")

    def disarm(self, reason: str = "", origin: str = "") -> Answer:
        """Always carried out: stopping the boat never waits for anything. The reason is kept to ECHO_CHARS."""
        self.autopilot.disarm(self.now_s(), clip(reason, ECHO_CHARS) or "disarm command")
        return self._answer(Answer(True, "disarmed"), origin)

    def set_mode(self, name: str, origin: str = "", reason: str = "") -> Answer:
        """Ask for MANUAL, HOLD, LOITER, AUTO, RTL, VELOCITY, GUIDED or CALIBRATE_ON_WATER (case-insensitive);
        refused when unknown
        or blocked by an active failsafe (it takes effect on the next cycle)."""
        name = name.strip().upper()
        if len(name) > 40:
            return self._answer(_refused(f"mode {clip(name, 40)!r} refused: no such mode"), origin)
        try:
            self.autopilot.set_mode(name, reason or f"mode command ({origin or 'operator'})")
        except ValueError as e:
            return self._answer(_refused(clip(str(e), ECHO_CHARS)), origin)
        return self._answer(Answer(True, f"mode {name} requested"), origin)

    def load_mission_file(self, path: str, origin: str = "") -> Answer:
        """Load a mission file (YAML, QGC WPL 110, QGC .plan) from the mission folders; refused, with every
        reason, if it is elsewhere or fails its checks. A path over PATH_MAX (or with a component over NAME_MAX)
        is refused before the file system is asked anything. All of it on the calling thread: a runner that
        must not stall calls prepare_mission_file off the loop and swap_mission on it."""
        return self.swap_mission(self.prepare_mission_file(path), origin)

    def prepare_mission_file(self, path: str) -> "MissionLoad":
        """The slow part of load_mission_file, from any thread (it changes nothing and reads only the mission
        folders, the vessel and the local frame): the path resolved and checked against the mission folders,
        the file read, the mission checked and its fences built. swap_mission(result) finishes it."""
        from autopilot.files.mission_files import load_mission_file
        too_long = path_problem(path)
        if too_long is not None:
            return MissionLoad(refusal=f"mission not loaded: {clip(path, 60)!r}: {too_long}")
        try:
            real = pathlib.Path(path).expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as e:
            return MissionLoad(refusal=f"mission not loaded: {clip(path)!r}: {e}")
        if self.mission_dirs and not any(real.is_relative_to(d) for d in self.mission_dirs):
            return MissionLoad(refusal=f"mission not loaded: {clip(path)!r} is outside the mission folders "
                                       f"({', '.join(str(d) for d in self.mission_dirs)}; commands.mission_dirs)")
        notes: List[str] = []
        try:
            mission = load_mission_file(path, on_note=notes.append)
        except ConfigError as e:
            return MissionLoad(refusal=f"mission not loaded: {e}")
        return self.prepare_mission(mission, source=str(path), notes=notes)

    def prepare_mission(self, mission: MissionConfig, labels: Optional[Sequence[str]] = None, source: str = "",
                        notes: Sequence[str] = ()) -> "MissionLoad":
        """load_mission's checks (mission_problems) and the autopilot's preparation of `mission`
        (Autopilot.prepare_mission: its fences), from any thread; swap_mission(result) finishes it."""
        problems = tuple(self.mission_problems(mission, labels))
        prepare = getattr(self.autopilot, "prepare_mission", None)
        prepared = prepare(mission) if prepare is not None and not problems else None
        return MissionLoad(mission, source, problems, tuple(notes), prepared=prepared)

    def swap_mission(self, load: "MissionLoad", origin: str = "") -> Answer:
        """On the loop (see the module's threading note): the mission `load` carries flown from now on, or the
        refusal it carries answered. Quick: the checks were made by prepare_mission(_file)."""
        for note in load.notes:
            self.log(note)
        if load.refusal is not None:
            return self._answer(_refused(load.refusal), origin)
        mission = load.mission
        assert mission is not None            # a MissionLoad without a refusal carries its mission
        if load.problems:
            return self._answer(_refused("mission not loaded: " + "; ".join(load.problems)), origin)
        if load.prepared is not None:
            self.autopilot.load_mission(mission, load.prepared)
        else:
            self.autopilot.load_mission(mission)
        if self._on_mission is not None:
            self._on_mission(mission)
        where = f" from {load.source}" if load.source else ""
        return self._answer(Answer(True, f"mission {mission.name!r} loaded{where} "
                                         f"({len(mission.waypoints)} waypoints)"), origin)

    def load_mission(self, mission: MissionConfig, origin: str = "", source: str = "") -> Answer:
        """Fly `mission` from now on (AUTO continues on it), if it passes the same checks as a file:
        speeds, geofence, leg lengths. Refused with every problem otherwise; the old mission stays. All of it on
        the calling thread (prepare_mission off the loop, then swap_mission, does the same without stalling)."""
        return self.swap_mission(self.prepare_mission(mission, source=source), origin)

    def mission_problems(self, mission: MissionConfig, labels: Optional[Sequence[str]] = None) -> list:
        """Why `mission` would be refused (mission_check's findings), as texts; empty: it would be loaded.
        `labels[i]` names waypoint i as its source does ("item 3" of an upload)."""
        from autopilot.files.check import check_mission
        return [str(p) for p in check_mission(mission, self.vessel, labels or None)]

    def set_home(self, north_m: float, east_m: float, origin: str = "") -> Answer:
        """RTL's destination [m, local NED frame of the mission]; arming leaves it there (Autopilot.set_home)."""
        fences = getattr(self.autopilot, "fences", ())
        for f in fences:
            if not f.contains(north_m, east_m):
                return self._answer(_refused(f"home not set: {north_m:.1f} N {east_m:.1f} E is outside the "
                                             f"geofence"), origin)
        self.autopilot.set_home(north_m, east_m)
        return self._answer(Answer(True, f"home set to {north_m:.1f} m N, {east_m:.1f} m E of the mission "
                                         f"origin"), origin)

    def set_current_waypoint(self, index: int, origin: str = "") -> Answer:
        """Make waypoint `index` (0-based) the one AUTO heads for now; the leg starts where the boat is."""
        g = self.autopilot.guidance
        if not 0 <= index < g.waypoints_total:
            return self._answer(_refused(f"waypoint {index} does not exist (the mission has "
                                         f"{g.waypoints_total})"), origin)
        nav = self.autopilot.nav
        g.jump_to(index, (nav.north_m, nav.east_m) if nav is not None and nav.valid else None)
        return self._answer(Answer(True, f"heading for waypoint {index}"), origin)

    def heartbeat(self, origin: str = "") -> Answer:
        """The operator's station is alive (feeds the link-loss failsafe). Logged when a stream starts or
        changes hands, not per beat."""
        self.autopilot.operator_heartbeat(self.now_s())
        self._stream("heartbeat", origin)
        return Answer(True, "heartbeat")

    def manual(self, throttle: Union[float, str], steering: Union[float, str], origin: str = "") -> Answer:
        """MANUAL's throttle and steering, each in [-1, 1] (+ forward, + turn to starboard; beyond is clamped);
        also a heartbeat. A value that is not a finite number is refused."""
        try:
            self.autopilot.operator_command(self.now_s(), float(throttle), float(steering))
        except (TypeError, ValueError) as e:
            return self._answer(_refused(f"manual command refused: THROTTLE and STEERING must be finite numbers "
                                         f"in -1..1 ({e})"), origin)
        self._stream("manual", origin)
        return Answer(True, "manual")

    def velocity(self, surge_mps: float, yaw_rate_rps: float, origin: str = "") -> Answer:
        """VELOCITY's surge speed [m/s] and yaw rate [rad/s, + turn to starboard], in GUIDED its body velocity
        target (guided_velocity "body"); also a heartbeat. Refused outside VELOCITY and GUIDED and for values that
        are not finite numbers; beyond the limits they are clamped.
        Commands come as streams (cmd_vel, SET_POSITION_TARGET_LOCAL_NED): a refusal is logged once, not again
        for the same reason from the same origin until a command is carried out."""
        try:
            self.autopilot.velocity_command(self.now_s(), float(surge_mps), float(yaw_rate_rps))
        except (TypeError, ValueError) as e:
            text = str(e) if "refused" in str(e) else (f"velocity command refused: SPEED and YAW RATE must be "
                                                       f"finite numbers ({e})")
            return self._stream_refusal(_refused(text), origin)
        self._velocity_refused = None
        self._stream("velocity", origin)
        return Answer(True, "velocity")

    # ------------------------------------------------------------------ GUIDED
    def goto(self, north_m: Union[float, str], east_m: Union[float, str], origin: str = "",
             speed_mps: Optional[float] = None, switch_mode: bool = False) -> Answer:
        """GUIDED's position target [m, local NED frame of the mission: + north, + east of its origin] at
        `speed_mps` [m/s, > 0; None: the mission's cruise speed]: a straight leg from where the boat is, then
        station keeping there (autopilot/modes/guided.py). Refused outside GUIDED unless `switch_mode`, which asks
        for GUIDED first (MAV_CMD_DO_REPOSITION with its change-mode flag); refused, with the reason, for a value
        that is not a finite number, a target outside the geofence or out of range."""
        try:
            n, e = float(north_m), float(east_m)
        except (TypeError, ValueError):
            return self._answer(_refused(f"GUIDED target refused: NORTH_M and EAST_M must be numbers, got "
                                         f"{str(north_m)[:40]!r}, {str(east_m)[:40]!r}"), origin)
        ap = self.autopilot
        problem = ap.guided_target_problem(n, e)
        if problem is not None:
            return self._answer(_refused(f"GUIDED target refused: {problem}"), origin)
        if speed_mps is not None:
            speed_mps = float(speed_mps)
        same = ap.guided_target
        if same is not None and ap.mode.name == "GUIDED" and math.hypot(same[0][0] - n, same[0][1] - e) < 0.05 \
                and same[1] == speed_mps:
            ap.operator_heartbeat(self.now_s())
            return Answer(True, "GUIDED target unchanged")     # a setpoint stream: the leg is not started again
        if switch_mode and ap.mode.name != "GUIDED":
            try:
                ap.set_mode("GUIDED", f"go-to command ({origin or 'operator'})")
            except ValueError as err:
                return self._answer(_refused(f"GUIDED target refused: {err}"), origin)
        try:
            ap.guided_position(self.now_s(), n, e, speed_mps, stage=switch_mode)
        except ValueError as err:
            return self._answer(_refused(str(err)), origin)
        speed = f" at {speed_mps:.2f} m/s" if speed_mps is not None else ""
        return self._answer(Answer(True, f"GUIDED target {n:.1f} m N, {e:.1f} m E{speed} accepted"), origin)

    def goto_global(self, lat_deg: Union[float, str], lon_deg: Union[float, str], origin: str = "",
                    speed_mps: Optional[float] = None, switch_mode: bool = False) -> Answer:
        """`goto` for a WGS84 position [deg], taken into the mission's local frame; refused for a latitude
        outside -90..90, a longitude outside -180..180, or 0, 0 (no position)."""
        local = self.local_of(lat_deg, lon_deg)
        if isinstance(local, str):
            return self._answer(_refused(f"GUIDED target refused: {local}"), origin)
        return self.goto(*local, origin, speed_mps, switch_mode)

    def local_of(self, lat_deg: Union[float, str], lon_deg: Union[float, str]) -> Union[Tuple[float, float], str]:
        """(north, east) [m] of a WGS84 position [deg] in the mission's local frame, or why it is not one."""
        try:
            lat, lon = float(lat_deg), float(lon_deg)
        except (TypeError, ValueError):
            lat = lon = math.nan
        if not (math.isfinite(lat) and math.isfinite(lon) and -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0) \
                or (lat == 0.0 and lon == 0.0):
            return f"latitude {str(lat_deg)[:40]!r}, longitude {str(lon_deg)[:40]!r} is not a position"
        return self.autopilot.frame.to_ned(lat, lon)

    def guided_velocity(self, kind: str, a: Union[float, str], b: Union[float, str], origin: str = "") -> Answer:
        """GUIDED's velocity target: kind "body" (a surge [m/s, + ahead], b yaw rate [rad/s, + to starboard]),
        "ground" (a north, b east [m/s], over ground) or "heading" (a heading [rad, compass: from north,
        clockwise], b speed [m/s, - astern]); renewed within the VELOCITY timeout (failsafe.manual.timeout_s)
        or the thrusters go neutral. Also a heartbeat. Refused outside GUIDED and for values that are not finite
        numbers; a stream's refusal is logged once per origin and reason, as `velocity`'s."""
        if kind not in GUIDED_KINDS:
            return self._answer(_refused(f"GUIDED velocity target refused: unknown kind {str(kind)[:40]!r} (one of "
                                         f"{', '.join(GUIDED_KINDS)})"), origin)
        try:
            self.autopilot.guided_velocity(self.now_s(), kind, float(a), float(b))
        except (TypeError, ValueError) as e:
            text = str(e) if "refused" in str(e) else (f"GUIDED velocity target refused: the {GUIDED_KINDS[kind]} "
                                                       f"must be finite numbers ({e})")
            return self._stream_refusal(_refused(text), origin)
        self._velocity_refused = None
        self._stream("GUIDED velocity", origin)
        return Answer(True, "GUIDED velocity")

    def _stream_refusal(self, answer: Answer, origin: str) -> Answer:
        """A refused stream command: logged once per (origin, text) until one is carried out."""
        if self._velocity_refused == (origin, answer.text):
            return answer
        self._velocity_refused = (origin, answer.text)
        return self._answer(answer, origin)

    def esc_test(self, index: int, fraction: float, origin: str = "", hold_s: Optional[float] = None) -> Answer:
        """The bench ESC test (Autopilot.esc_test): thruster `index` at `fraction` of its range from neutral
        while disarmed, for `hold_s` [s] (None: half a second) unless renewed, then neutral. Refused, with the
        reason, when armed or out of limits. A held button is a stream: its start is logged, not every
        renewal."""
        try:
            if hold_s is None:
                self.autopilot.esc_test(self.now_s(), index, float(fraction))
            else:
                self.autopilot.esc_test(self.now_s(), index, float(fraction), float(hold_s))
        except (TypeError, ValueError) as e:
            return self._answer(_refused(f"ESC test refused: {e}"), origin)
        self._stream("ESC test", origin)
        return Answer(True, "ESC test")

    def change_speed(self, speed_mps: float, origin: str = "") -> Answer:
        """The cruise speed [m/s, > 0, at most the hull's max_speed_mps] of the mission flown, from now on: AUTO's
        legs without a speed of their own, RTL home, GUIDED targets without a speed (MAV_CMD_DO_CHANGE_SPEED).
        The mission's waypoints and progress stay; the files do not change, so a restart or another mission
        flies its own cruise again (the CRUISE_SPEED parameter is the one kept). Refused, with the reason and
        nothing changed, for a value that is not a finite number or is out of range."""
        try:
            speed = float(speed_mps)
        except (TypeError, ValueError):
            speed = math.nan
        if not (math.isfinite(speed) and speed > 0.0):
            return self._answer(_refused(f"speed change refused: the speed must be a number over 0 m/s, got "
                                         f"{str(speed_mps)[:40]!r}"), origin)
        ap = self.autopilot
        vmax = ap.vessel.hull.max_speed_mps
        if speed > vmax:
            return self._answer(_refused(f"speed change refused: {speed:g} m/s is faster than the hull's "
                                         f"max_speed_mps ({vmax:g} m/s)"), origin)
        ap.retune(ap.vessel, replace(ap.mission, cruise_speed_mps=speed))
        return self._answer(Answer(True, f"cruise speed {speed:g} m/s from now on (not kept across a restart)"),
                            origin)

    def set_param(self, name: str, value: float, origin: str = "") -> Answer:
        """Set a field tunable (autopilot/files/tunables.py): validated by the vessel/mission schema, persisted to the
        overlay file, applied live where safe, on the mission flown now."""
        if self.params is None:
            return self._answer(_refused(f"parameter {name} refused: this autopilot has no parameter store"),
                                origin)
        try:
            ok, text = self.params.set(name, value)
        except KeyError:
            return self._answer(_refused(f"parameter {name!r} refused: no such parameter"), origin)
        return self._answer(Answer(True, text) if ok else _refused(text), origin)

    def _stream(self, verb: str, origin: str) -> None:
        now = self.now_s()
        key = (verb, origin)
        last = self._streams.get(key)
        self._streams[key] = now
        if last is None or not now - last <= STREAM_GAP_S:
            if len(self._streams) > 256:         # forget streams long over (origins come and go)
                self._streams = {k: t for k, t in self._streams.items() if now - t <= STREAM_GAP_S}
                self._streams[key] = now
            self.log(f"operator {verb} stream (from {origin or 'unknown'})")

    # ------------------------------------------------------------------ text commands
    def prepare_text(self, command: str) -> Optional[MissionLoad]:
        """For a 'mission PATH' text command, its file read and checked (prepare_mission_file), from any thread;
        None for every other command (and for one over MAX_COMMAND_BYTES, which `text` refuses). Hand the
        result to `text(command, origin, load)` on the loop."""
        if utf8_size(command, MAX_COMMAND_BYTES) > MAX_COMMAND_BYTES:
            return None
        words = command.strip().split(maxsplit=1)
        if len(words) == 2 and words[0].lower() == "mission" and words[1].strip():
            return self.prepare_mission_file(words[1].strip())
        return None

    def text(self, command: str, origin: str = "", load: Optional[MissionLoad] = None) -> Answer:
        """A text command as `autopilot command` sends it: see TEXT_COMMANDS. `load`: prepare_text(command),
        made off the loop ('mission PATH' then only swaps it in). Over MAX_COMMAND_BYTES it is refused
        unparsed, naming the limit; only `disarm` is still carried out (its reason cut)."""
        size = utf8_size(command, MAX_COMMAND_BYTES)
        if size > MAX_COMMAND_BYTES:
            head = command[:MAX_COMMAND_BYTES].split(maxsplit=1)
            if head and head[0].lower() == "disarm":
                return self.disarm(f"{head[1][:ECHO_CHARS] if len(head) > 1 else ''}... ({size} bytes)", origin)
            return self._answer(_refused(f"command refused: {size} bytes is over the {MAX_COMMAND_BYTES}-byte "
                                         f"limit of a command"), origin)
        words = command.strip().split(maxsplit=1)
        verb = words[0].lower() if words else ""
        arg = words[1].strip() if len(words) > 1 else ""
        if verb == "arm" and not arg:
            return self.arm(origin)
        if verb == "disarm":
            return self.disarm(arg, origin)
        if verb == "mode" and arg:
            return self.set_mode(arg, origin, reason=f"mode command ({origin or 'operator'})")
        if verb == "mission" and arg:
            return self.swap_mission(load, origin) if load is not None else self.load_mission_file(arg, origin)
        if verb == "heartbeat" and not arg:
            return self.heartbeat(origin)
        if verb == "manual":
            parts = arg.split()
            if len(parts) != 2:
                return self._answer(_refused(f"manual command {arg[:80]!r} refused: expected two numbers "
                                             f"THROTTLE STEERING in -1..1"), origin)
            return self.manual(parts[0], parts[1], origin)
        if verb == "goto":
            return self._goto_text(arg, origin)
        if verb == "velocity" and arg.split()[:1] == ["ned"]:
            parts = arg.split()[1:]
            if len(parts) != 2:
                return self._answer(_refused(f"velocity command {arg[:80]!r} refused: expected 'velocity ned "
                                             f"NORTH_MPS EAST_MPS'"), origin)
            return self.guided_velocity("ground", parts[0], parts[1], origin)
        if verb == "velocity":
            parts = arg.split()
            try:
                surge, rate_dps = (float(p) for p in parts) if len(parts) == 2 else (None, None)
            except ValueError:
                surge = rate_dps = None
            if surge is None:
                return self._answer(_refused(f"velocity command {arg[:80]!r} refused: expected two numbers "
                                             f"SPEED_MPS YAW_RATE_DPS (+ = to starboard)"), origin)
            assert rate_dps is not None       # None together with surge
            return self.velocity(surge, math.radians(rate_dps), origin)
        return self._answer(_refused(f"unknown command {command[:200]!r}: use {TEXT_COMMANDS}"), origin)

    def _goto_text(self, arg: str, origin: str) -> Answer:
        """'goto local NORTH_M EAST_M [SPEED_MPS]' or 'goto global LAT_DEG LON_DEG [SPEED_MPS]': in GUIDED only
        (a typed go-to does not take the boat out of another mode; 'mode GUIDED' first)."""
        parts = arg.split()
        usage = _refused(f"goto command {arg[:80]!r} refused: expected 'goto local NORTH_M EAST_M [SPEED_MPS]' or "
                         f"'goto global LAT_DEG LON_DEG [SPEED_MPS]'")
        if len(parts) not in (3, 4) or parts[0].lower() not in ("local", "global"):
            return self._answer(usage, origin)
        speed: Optional[float] = None
        if len(parts) == 4:
            try:
                speed = float(parts[3])
            except ValueError:
                return self._answer(usage, origin)
        if parts[0].lower() == "local":
            return self.goto(parts[1], parts[2], origin, speed)
        return self.goto_global(parts[1], parts[2], origin, speed)

    def admit_text(self, text: str, gate, sender_node: Optional[str] = None) -> Answer:
        """A text command through `gate` (autopilot.commands.auth.CommandGate), then carried out."""
        return self.answer_admission(gate.admit(text, sender_node))

    def answer_admission(self, adm, load: Optional[MissionLoad] = None) -> Answer:
        """A gate's admission (CommandGate.admit) carried out, or its refusal answered; `load`:
        prepare_text(adm.command), made off the loop."""
        if adm.command is None:
            return self._answer(_refused(adm.reason), adm.origin)
        return self.text(adm.command, adm.origin, load)
