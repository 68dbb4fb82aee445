"""Everything `autopilot check` verifies before anything starts: files, schemas, and the mission's geometry.

`check_config(config_path, mission_path)` returns a CheckReport listing every problem found, each a
`Problem(file, key, reason)` that prints as one line `FILE: KEY: REASON`. It never raises on bad input and
starts nothing. What is checked:

- the config file reads and validates: a vessel YAML (has `hull:`) or a boat config (has `vessel:`, see
  autopilot.files.boat), following the boat config's references to the vessel and mission files;
- the vessel's magnetometer calibration file (sensors.mag.calibration_file, relative to the vessel file) parses
  when it exists. Named but not written yet (the first day) is a warning note saying what the boat will do
  (autopilot.calibration.store.missing_calibration_effect), as is a vessel that names none. A file written by
  `autopilot calibrate mag --sim` is a problem for a boat config with backend hw unless
  `allow_sim_calibration` (then a note); a sim or gazebo backend takes it silently, a bare vessel file gets a
  note;
- the mission (YAML or QGC WPL 110, see autopilot.files.mission_files) validates;
- speeds (cruise and per waypoint) are > 0 and within the vessel's hull.max_speed_mps;
- no leg (launch point -> first waypoint, waypoint -> waypoint, and the way home for on_complete: rtl) is
  longer than `max_leg_m` (default 5 km: a typo in a coordinate, not a survey line);
- with a geofence: the fence has at most MAX_FENCE_VERTICES vertices (autopilot/safety/geofence.py; checked
  before anything else is done with it), is a simple polygon, and every waypoint, the launch point, every leg
  and the final loiter circle lie inside it.

The mission's local frame is the one MissionConfig defines: origin at `anchor`, else at the first waypoint.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from autopilot.files.boat import BoatConfig, load_boat_config, normalise_boat_yaml, ros_decision
from autopilot.files.mission_files import read_mission_file
from autopilot.guidance.path_following import mission_frame, point_to_ned
from autopilot.safety.geofence import fence_size_problem, geofence_of
from autopilot.vocab.config import MissionConfig, VesselConfig, load_vessel, read_yaml
from autopilot.vocab.schema import ConfigError, build, every_error
from estimation.heading.mag_calibration import calibration_from_simulator, calibration_path

DEFAULT_MAX_LEG_M = 5000.0


@dataclass(frozen=True)
class Problem:
    file: str
    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key or '<top level>'}: {self.reason}"

    @classmethod
    def from_error(cls, e: ConfigError) -> "Problem":
        return cls(e.file, e.key, e.reason)

    @classmethod
    def all_from(cls, e: ConfigError) -> List["Problem"]:
        """One Problem per mistake `e` stands for (several for a schema.ConfigErrors)."""
        return [cls.from_error(one) for one in every_error(e)]


@dataclass
class CheckReport:
    problems: List[Problem] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    vessel: Optional[VesselConfig] = None
    mission: Optional[MissionConfig] = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, problem: Problem) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def add_error(self, e: ConfigError) -> None:
        """Every mistake of a ConfigError (one, or each of a schema.ConfigErrors)."""
        for problem in Problem.all_from(e):
            self.add(problem)


def check_config(config_path, mission_path=None, max_leg_m: float = DEFAULT_MAX_LEG_M,
                 allow_sim_calibration: bool = False) -> CheckReport:
    """Validate a vessel or boat config and a mission; see the module docstring."""
    report = CheckReport()
    config_path = Path(config_path)
    try:
        data = read_yaml(config_path)
    except ConfigError as e:
        report.add_error(e)
        data = None

    vessel_path: Optional[Path] = None
    backend: Optional[str] = None             # a bare vessel file names none
    if data is not None:
        if "hull" in data:
            vessel_path = config_path
        elif "vessel" in data:
            vessel_path, boat_mission, backend = _check_boat_config(config_path, data, report)
            if mission_path is None:
                mission_path = boat_mission
        else:
            report.add(Problem(str(config_path), "", "neither a vessel file (no 'hull:') nor a boat config "
                                                     "(no 'vessel:')"))
    if vessel_path is not None:
        try:
            report.vessel = load_vessel(str(vessel_path), all_errors=True)
        except ConfigError as e:
            report.add_error(e)
        if report.vessel is not None:
            _check_mag_calibration(report.vessel, report, backend, allow_sim_calibration)
            report.notes.extend(model_notes(report.vessel))

    if mission_path is None:
        report.notes.append("no mission checked (give --mission FILE, or name one in a boat config)")
        return report
    try:
        loaded = read_mission_file(mission_path, all_errors=True)
    except ConfigError as e:
        report.add_error(e)
        return report
    report.mission = loaded.mission
    report.notes.extend(loaded.notes)
    for p in check_mission(loaded.mission, report.vessel, loaded.waypoint_labels, max_leg_m):
        report.add(p)
    if report.vessel is not None:
        for note in (lookahead_note(report.vessel, loaded.mission), wheel_over_note(report.vessel, loaded.mission)):
            if note:
                report.notes.append(note)
    return report


def lookahead_note(vessel: VesselConfig, mission: MissionConfig) -> str:
    """What `check` says when guidance will fly a longer LOS lookahead than the mission's (the boat's turning
    radius or its heading loop, autopilot/guidance/turning.py); "" otherwise."""
    from autopilot.guidance.turning import lookahead_floor_reason, max_yaw_moment_nm, raised_lookahead_m
    try:
        max_yaw_nm = max_yaw_moment_nm(vessel)
        raised = raised_lookahead_m(vessel, mission, max_yaw_nm)
    except (ValueError, ConfigError):
        return ""                     # the thrusters' problem is reported elsewhere
    if raised is None:
        return ""
    filed, flown = raised
    where = (f"{mission.source_file or '<mission>'}: guidance.lookahead_m" if mission.guidance.lookahead_m is not None
             else f"{vessel.source_file or vessel.name}: control.lookahead_hull_lengths")
    return (f"{where}: {filed:.1f} m is shorter than {lookahead_floor_reason(vessel, mission, max_yaw_nm)}; "
            f"guidance flies {flown:.1f} m (the mission's guidance.lookahead_min_turn_radii: 0 keeps {filed:.1f} m)")


def wheel_over_note(vessel: VesselConfig, mission: MissionConfig) -> str:
    """What `check` says when guidance will begin turns before their waypoints further out than the acceptance
    radius (guidance.wheel_over, autopilot/guidance/path_following.py); "" otherwise."""
    from autopilot.guidance.path_following import MissionGuidance
    from autopilot.guidance.turning import max_yaw_moment_nm
    if mission.identification is not None or mission.trajectory is not None:
        return ""                     # AUTO flies no waypoint legs there
    try:
        planned = MissionGuidance(mission, vessel, max_yaw_nm=max_yaw_moment_nm(vessel)).planned_wheel_over_m()
    except (ValueError, ConfigError):
        return ""                     # the thrusters' problem is reported elsewhere
    if not planned:
        return ""
    index, most = max(planned, key=lambda p: p[1])
    return (f"{mission.source_file or '<mission>'}: guidance.wheel_over: {vessel.name} begins {len(planned)} of its "
            f"turns before their waypoint, up to {most:.1f} m before waypoints[{index}] at its file's turn rate "
            f"(further for a boat that turns slower or drifts toward the next leg); false turns at the waypoints")


def check_mission(mission: MissionConfig, vessel: Optional[VesselConfig],
                  labels: Optional[Sequence[str]] = None, max_leg_m: float = DEFAULT_MAX_LEG_M) -> List[Problem]:
    """Speed, leg-length and geofence problems of an already-validated mission (vessel None: no speed limit)."""
    file = mission.source_file or "<mission>"
    labels = list(labels) if labels is not None else [f"waypoints[{i}]" for i in range(len(mission.waypoints))]
    problems: List[Problem] = []
    frame = mission_frame(mission)
    wps = [point_to_ned(p, frame) for p in mission.waypoints]
    start = point_to_ned(mission.start.point, frame) if mission.start is not None else None

    # speeds
    vmax = vessel.hull.max_speed_mps if vessel is not None else math.inf
    where_max = f"the vessel's hull.max_speed_mps ({vmax:g} m/s in {vessel.source_file})" if vessel else ""
    if mission.cruise_speed_mps > vmax:
        problems.append(Problem(file, "cruise_speed_mps",
                                f"{mission.cruise_speed_mps:g} m/s is faster than {where_max}"))
    for label, p in zip(labels, mission.waypoints):
        if p.speed_mps is None:
            continue
        if p.speed_mps <= 0:
            problems.append(Problem(file, f"{label}.speed_mps", "must be > 0 m/s (the boat would never arrive)"))
        elif p.speed_mps > vmax:
            problems.append(Problem(file, f"{label}.speed_mps", f"{p.speed_mps:g} m/s is faster than {where_max}"))

    ref_points = _trajectory_checks(mission, vessel, wps, vmax, where_max, file, problems)

    # legs: (label of the leg's end, from, to, description)
    legs = []
    if start is not None:
        legs.append((labels[0], start, wps[0], "from the launch point (start.point)"))
    for i in range(1, len(wps)):
        legs.append((labels[i], wps[i - 1], wps[i], f"from {labels[i - 1]}"))
    if mission.on_complete == "rtl" and start is not None:
        legs.append(("on_complete", wps[-1], start, f"home to the launch point from {labels[-1]}"))
    for label, a, b, what in legs:
        length = math.hypot(b[0] - a[0], b[1] - a[1])
        if length > max_leg_m:
            problems.append(Problem(file, label, f"leg {what} is {length / 1000:.2f} km, longer than the "
                                                 f"{max_leg_m / 1000:g} km limit (a mistyped coordinate?)"))

    # geofence
    if mission.geofence:
        too_many = fence_size_problem(len(mission.geofence))
        if too_many is not None:
            problems.append(Problem(file, "geofence", too_many))
            return problems
        try:
            fence = geofence_of(point_to_ned(p, frame) for p in mission.geofence)
        except ValueError as e:
            problems.append(Problem(file, "geofence", str(e)))
            return problems
        if start is not None and not fence.contains(*start):
            problems.append(Problem(file, "start.point", f"outside the geofence by "
                                                          f"{-fence.signed_distance_m(*start):.1f} m"))
        outside = set()
        for label, ne in zip(labels, wps):
            if not fence.contains(*ne):
                outside.add(label)
                problems.append(Problem(file, label, f"outside the geofence by "
                                                     f"{-fence.signed_distance_m(*ne):.1f} m"))
        for label, a, b, what in legs:
            if fence.contains(*a) and fence.contains(*b) and not fence.segment_inside(a, b):
                problems.append(Problem(file, label, f"the leg {what} leaves the geofence"))
        if mission.identification is not None and labels[0] not in outside:
            half = mission.identification.box_m / 2
            cn, ce = wps[0]
            corners = [(cn + a * half, ce + b * half) for a, b in ((1, 1), (1, -1), (-1, -1), (-1, 1))]
            worst = min(fence.signed_distance_m(*c) for c in corners)
            if worst < 0.0:
                problems.append(Problem(file, "identification.box_m",
                                        f"the {mission.identification.box_m:g} m box around {labels[0]} reaches "
                                        f"{-worst:.1f} m outside the geofence"))
        if ref_points is not None and labels[0] not in outside:
            worst = min(fence.signed_distance_m(*p) for p in ref_points)
            if worst < 0.0:
                problems.append(Problem(file, "trajectory", f"the reference reaches {-worst:.1f} m outside the "
                                                            f"geofence"))
        if mission.on_complete == "loiter" and labels[-1] not in outside:
            margin = fence.signed_distance_m(*wps[-1])
            if margin < mission.loiter_radius_m:
                problems.append(Problem(file, "loiter_radius_m",
                                        f"the {mission.loiter_radius_m:g} m loiter circle around {labels[-1]} "
                                        f"crosses the geofence ({margin:.1f} m from the edge)"))
    return problems


def _trajectory_checks(mission, vessel, wps, vmax, where_max, file, problems):
    """A trajectory's reference: it can be made, it never asks for more than the boat's top speed. Returns
    its points (NED, sampled every second) for the geofence check, or None."""
    if mission.trajectory is None:
        return None
    import numpy as np

    from autopilot.guidance.trajectory import make_path, make_reference
    cn, ce = wps[0]
    try:
        if mission.trajectory.kind == "path":
            path = make_path(mission.trajectory, (cn, ce))
            if mission.trajectory.speed_mps > vmax:
                problems.append(Problem(file, "trajectory.speed_mps", f"{mission.trajectory.speed_mps:g} m/s is "
                                                                      f"faster than {where_max}"))
            return [tuple(p) for p in path.xy[::10]]
        ref = make_reference(mission.trajectory, mission.source_file)
    except ValueError as e:
        problems.append(Problem(file, "trajectory", str(e)))
        return None
    taus = np.arange(0.0, ref.duration_s + 1e-9, 1.0)
    speeds = [float(np.hypot(*ref.state(t)[1])) for t in taus]
    k = int(np.argmax(speeds))
    if speeds[k] > vmax:
        problems.append(Problem(file, "trajectory", f"the reference asks for {speeds[k]:.2f} m/s at t = "
                                                    f"{taus[k]:g} s, faster than {where_max}"))
    return [(cn + n, ce + e) for n, e in (ref.position(t) for t in taus)]


def _check_boat_config(path: Path, data: dict, report: CheckReport):
    """Validate a boat config; returns (vessel path, mission path, backend) it names (None where unusable). A
    boat config with mistakes of its own still has the vessel and mission files it names checked."""
    try:
        cfg = build(BoatConfig, normalise_boat_yaml(data), str(path), all_errors=True)
    except ConfigError as e:
        report.add_error(e)
        vessel, mission = data.get("vessel"), data.get("mission")
        if not isinstance(vessel, str) or not vessel or not isinstance(mission, (str, type(None))):
            return None, None, None
        named = BoatConfig(vessel=vessel, mission=mission, source_file=str(path))
        return named.vessel_path(), named.mission_path(), None
    cfg = dataclasses.replace(cfg, source_file=str(path))
    _check_command_auth(cfg, report)
    _check_ros(cfg, report)
    vessel_path = cfg.vessel_path()
    try:
        load_vessel(str(vessel_path))
    except ConfigError:
        pass                      # reported when the vessel itself is checked
    else:
        try:                      # cross-file rules (gazebo thruster names) live in the boat config loader
            load_boat_config(path)
        except ConfigError as e:
            if Path(e.file) == path:
                report.add_error(e)
    return vessel_path, cfg.mission_path(), cfg.backend


def _check_ros(cfg: BoatConfig, report: CheckReport) -> None:
    """What `autopilot run` will say about ROS 2 on this machine: a problem when the config needs it and rclpy
    does not import here, a note saying whether the ROS 2 rim will start otherwise."""
    use_ros, line = ros_decision(cfg)
    if use_ros is None:
        report.add(Problem(cfg.source_file, "ros.start" if cfg.backend != "gazebo" else "backend",
                           line.removeprefix("error: ")))
    else:
        report.notes.append(line)


def _check_command_auth(cfg: BoatConfig, report: CheckReport) -> None:
    from autopilot.commands.auth import TokenError, read_token
    if cfg.commands.auth == "off":
        report.notes.append("commands.auth is off: anyone on this ROS domain can arm and steer the boat")
        return
    try:
        read_token(cfg.token_path())
    except TokenError as e:
        report.notes.append(f"commands: {e}; until then only disarm and mode HOLD are obeyed "
                            f"(`autopilot keys token --config {cfg.source_file}`)")


def _check_mag_calibration(vessel: VesselConfig, report: CheckReport, backend: Optional[str] = None,
                           allow_sim: bool = False) -> None:
    """The calibration file as the backend will load it (autopilot.calibration.store.load_boat_calibration);
    backend None: a bare vessel file, whose backend is not known."""
    from autopilot.calibration.store import (
        ALLOW_SIM_OPTION,
        SIMULATED_BACKENDS,
        load_boat_calibration,
        missing_calibration_effect,
    )
    vfile = vessel.source_file
    key = "sensors.mag.calibration_file"
    path = calibration_path(vessel)
    if path is None:
        report.notes.append(f"{vfile}: {key}: not set; calibrate the magnetometer "
                            f"(`autopilot calibrate mag`) before arming in a navigating mode")
        return
    if not path.exists():
        report.notes.append(f"{vfile}: {key}: warning: {path} does not exist yet: "
                            f"{missing_calibration_effect(vessel)}")
        return
    try:
        load_boat_calibration(vessel, backend or "sim", allow_sim=allow_sim)   # a bare vessel: read it only
    except ConfigError as e:
        report.add(Problem(vfile, key, f"{e.file}: {e.key or '<top level>'}: {e.reason}"))
        return
    if backend in SIMULATED_BACKENDS or not calibration_from_simulator(path):
        return
    if backend is None:
        report.notes.append(f"{vfile}: {key}: warning: {path} was written by the simulator; a boat config with "
                            f"backend hw refuses it unless {ALLOW_SIM_OPTION}")
    else:
        report.notes.append(f"{vfile}: {key}: warning: {path} was written by the simulator; accepted for backend "
                            f"{backend} because of {ALLOW_SIM_OPTION}: the heading is off by this boat's own hard "
                            f"and soft iron until it is calibrated")


def model_notes(vessel) -> List[str]:
    """What `check` says about the vessel model: whether it was ever validated against data, and how far
    its yaw coefficients may be off before the heading loop loses REQUIRED_MARGIN_DEG of phase margin, at rest
    and at the hull's max_speed_mps."""
    from autopilot.control.margins import (
        REQUIRED_MARGIN_DEG,
        coefficient_margins,
        heading_phase_margin_deg,
        margin_kept_to_mps,
        zeta_keeping_margin,
    )
    vfile = vessel.source_file or vessel.name
    req = f"{REQUIRED_MARGIN_DEG:g} deg"
    notes = []
    b = vessel.battery
    if b.low_voltage_v is None:
        notes.append(f"{vfile}: battery.low_voltage_v: not set: the low-battery failsafe acts below "
                     f"{b.low_voltage_threshold_v:g} V ({b.cells} cells x {b.low_voltage_threshold_v / b.cells:g} V "
                     f"for {b.chemistry}); set it (or 0 to disable) to choose")
    if not vessel.validated_against:
        notes.append(f"{vfile}: validated_against: empty: warning: this vessel model was never validated against "
                     f"data from the boat; the estimator will learn a drag error and the controller has the "
                     f"margins below, but fly a test run and record it")
    pm = heading_phase_margin_deg(vessel)
    margins = ", ".join(m.describe() for m in coefficient_margins(vessel))
    notes.append(f"{vfile}: heading loop phase margin {_margin_text(pm)} at rest as filed; "
                 f"stays >= {req} with the true boat's {margins}")
    fast = vessel.hull.max_speed_mps
    pm_fast = heading_phase_margin_deg(vessel, fast)
    head = (f"{vfile}: under way the sway a turn makes adds the Munk moment to the yaw: heading loop phase "
            f"margin {_margin_text(pm_fast)} at {fast:g} m/s (hull.max_speed_mps) as filed")
    if pm_fast >= REQUIRED_MARGIN_DEG:
        margins = ", ".join(m.describe() for m in coefficient_margins(vessel, speed_mps=fast))
        notes.append(f"{head}; stays >= {req} with the true boat's {margins}")
    else:
        upto = margin_kept_to_mps(vessel, fast)
        # rounded down, so a speed short of max_speed_mps never reads as it
        upto_text = (f"{req} is not kept even at rest" if upto is None else
                     f"{req} is kept up to {math.floor(upto * 100.0) / 100.0:g} m/s")
        zeta = zeta_keeping_margin(vessel, fast)
        fix = ("" if zeta is None else
               f", or raise control.heading.zeta to {zeta:.2f} (rate damping in place of what the Munk moment "
               f"takes) to keep {req} from rest to {fast:g} m/s")
        notes.append(f"{head}: warning: below {req}; {upto_text}. Fly slower{fix}")
    return notes


def _margin_text(pm_deg: float, required_deg: Optional[float] = None) -> str:
    """A phase margin as `check` prints it: one decimal, and never rounded up onto `required_deg` (the default
    REQUIRED_MARGIN_DEG) from below, so a margin the check calls short never reads as enough (44.96 deg is
    "44.9 deg", not "45.0 deg ... below 45 deg")."""
    from autopilot.control.margins import REQUIRED_MARGIN_DEG
    if pm_deg == -math.inf:
        return "none (the loop is unstable)"
    if pm_deg == math.inf:
        return "unbounded (|L| never crosses 1)"
    required = REQUIRED_MARGIN_DEG if required_deg is None else required_deg
    text = f"{pm_deg:.1f}"
    if pm_deg < required <= float(text):
        text = f"{math.floor(pm_deg * 10.0) / 10.0:.1f}"
    return f"{text} deg"
