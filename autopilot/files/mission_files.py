"""Load a mission from our YAML, a QGroundControl / Mission Planner waypoint file (`QGC WPL 110`) or a
QGroundControl `.plan` (JSON: mission, geofence, rally points); turn missions, fences and rally points into
MAVLink mission items and back.

Every format gives an `autopilot.vocab.config.MissionConfig`, validated by the same schema, so everything downstream
(checks, guidance, the log) sees one kind of mission. The format is recognised by content: a file whose first
line is `QGC WPL 110` is a waypoint file, a JSON object with a "fileType" key is a plan file (it must say
"Plan"), anything else is read as mission YAML.

QGC WPL 110, one item per line, tab- or space-separated:

    SEQ CURRENT FRAME COMMAND PARAM1 PARAM2 PARAM3 PARAM4 LAT_DEG LON_DEG ALT_M AUTOCONTINUE

The items, from a file or a MAVLink upload, are flown by the rules of `mission_from_items`: item 0 is home,
NAV_WAYPOINT, DO_CHANGE_SPEED and a last RTL, LOITER_UNLIM or DO_SET_MODE HOLD are taken, other navigation
commands and DO_JUMP refuse the whole mission naming the item, anything else is skipped with a note. The fields
items cannot carry (guidance law, geofence, ...) come from `defaults`, a mapping of MissionConfig keys, and
otherwise from QGC_DEFAULTS; what the items do say wins over `defaults`. `mission_to_items` writes any mission
(YAML included) as the items a ground station downloads. MAVLink fences: `fence_from_items` (one inclusion
polygon); rally points: `rally_from_items` (kept, not flown); .plan files: `parse_qgc_plan`.
Why these rules: docs/design-notes/core.md, "Files".
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from autopilot.safety.geofence import fence_size_problem
from autopilot.vocab.config import MissionConfig, PointConfig, load_mission
from autopilot.vocab.schema import ConfigError, build

QGC_HEADER = "QGC WPL 110"

MAV_CMD_NAV_WAYPOINT = 16
MAV_CMD_NAV_LOITER_UNLIM = 17
MAV_CMD_NAV_RETURN_TO_LAUNCH = 20
MAV_CMD_DO_SET_MODE = 176
MAV_CMD_DO_JUMP = 177
MAV_CMD_DO_CHANGE_SPEED = 178
MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION = 5001
MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION = 5002
MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION = 5003
MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION = 5004
MAV_CMD_NAV_RALLY_POINT = 5100

MAV_FRAME_GLOBAL, MAV_FRAME_MISSION, MAV_FRAME_GLOBAL_RELATIVE_ALT = 0, 2, 3
GLOBAL_FRAMES = (0, 3, 5, 6, 10, 11)   # MAV_FRAME_GLOBAL, _RELATIVE_ALT, _INT, _RELATIVE_ALT_INT, _TERRAIN_ALT(_INT)
MAV_MODE_FLAG_CUSTOM_MODE_ENABLED = 1
ROVER_MODE_HOLD = 4                    # ArduPilot Rover's HOLD: the mode numbers our MAVLink heartbeat uses

# Fields a waypoint file does not carry, used unless `defaults` gives them.
QGC_DEFAULTS = {"cruise_speed_mps": 1.0, "acceptance_radius_m": 3.0}

_CMD_NAMES = {16: "NAV_WAYPOINT", 17: "NAV_LOITER_UNLIM", 18: "NAV_LOITER_TURNS", 19: "NAV_LOITER_TIME",
              20: "NAV_RETURN_TO_LAUNCH", 21: "NAV_LAND", 22: "NAV_TAKEOFF", 31: "NAV_LOITER_TO_ALT",
              82: "NAV_SPLINE_WAYPOINT", 93: "NAV_DELAY", 112: "CONDITION_DELAY", 114: "CONDITION_DISTANCE",
              176: "DO_SET_MODE", 177: "DO_JUMP", 178: "DO_CHANGE_SPEED", 179: "DO_SET_HOME",
              181: "DO_SET_RELAY", 183: "DO_SET_SERVO", 189: "DO_LAND_START", 203: "DO_DIGICAM_CONTROL",
              206: "DO_SET_CAM_TRIGG_DIST"}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MissionItem:
    """One mission item, as a waypoint file line or a MAVLink MISSION_ITEM_INT carries it."""

    seq: int
    frame: int                                  # MAV_FRAME
    command: int                                # MAV_CMD
    params: Tuple[float, float, float, float]   # PARAM1..PARAM4
    lat_deg: float
    lon_deg: float
    alt_m: float = 0.0
    current: int = 0
    autocontinue: int = 1
    line: int = 0                               # line in its file (0: not from a file)

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line else f"item {self.seq}"


@dataclass(frozen=True)
class LoadedMission:
    """A mission with what the loader has to say about it.

    `waypoint_labels[i]` names waypoint i the way its file does ("waypoints[2]" in YAML, "item 5" in a
    waypoint file or upload, "mission.items[4]" in a plan), so messages point at what a person has to edit.
    `notes` are the items skipped. `rally` holds a plan's rally points: kept, never flown.
    """

    mission: MissionConfig
    format: str                               # "yaml", "qgc-wpl-110", "qgc-plan" or "mavlink"
    waypoint_labels: Tuple[str, ...]
    notes: Tuple[str, ...] = ()
    items: Tuple[MissionItem, ...] = ()       # the items it came from (waypoint files, plans and uploads)
    rally: Tuple[PointConfig, ...] = ()


def load_mission_file(path, defaults: Optional[Mapping] = None,
                      on_note: Optional[Callable[[str], None]] = None) -> MissionConfig:
    """A MissionConfig from YAML, QGC WPL 110 or a .plan. Notes (skipped items) go to `on_note`, else to the
    log."""
    loaded = read_mission_file(path, defaults)
    for note in loaded.notes:
        (on_note or log.warning)(note)
    return loaded.mission


def read_mission_file(path, defaults: Optional[Mapping] = None, *, all_errors: bool = False) -> LoadedMission:
    """Load any of the three formats (recognised by content); raises ConfigError(file, key, reason) on any
    problem. `defaults` apply to waypoint and plan files (YAML missions carry every field themselves).
    `all_errors`: a YAML mission's schema mistakes all at once (schema.ConfigErrors when there are several)."""
    path = Path(path)
    text = _read_text(path)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first.startswith("QGC WPL"):
        return parse_qgc_wpl(text, str(path), defaults)
    if first.startswith("{"):
        try:
            doc = _json_loads(text, str(path))
        except ConfigError:
            # not JSON: a plan file's error if it looks like one, else the YAML loader's (flow-style YAML)
            if path.suffix.lower() == ".plan" or '"fileType"' in text:
                raise
        else:
            if isinstance(doc, dict) and "fileType" in doc:
                return _plan_from_doc(doc, str(path), defaults)
    mission = load_mission(path, all_errors=all_errors)
    return LoadedMission(mission, "yaml", tuple(f"waypoints[{i}]" for i in range(len(mission.waypoints))))


# ------------------------------------------------------------------------------------------- waypoint files
def parse_qgc_wpl(text: str, file: str = "<text>", defaults: Optional[Mapping] = None) -> LoadedMission:
    """Parse the text of a QGC WPL 110 file: its lines become MissionItems, which mission_from_items turns into a
    mission (see there for what is taken)."""
    lines = [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines or lines[0][1] != QGC_HEADER:
        # never quote the line: the file may be anything a stranger named (its content is not ours to echo)
        got = "a different first line" if lines else "an empty file"
        raise ConfigError(file, "line 1", f"expected the header {QGC_HEADER!r}, got {got}")
    items = [_parse_item(file, n, ln) for n, ln in lines[1:]]
    data = dict(defaults or {})
    data.setdefault("description", f"{QGC_HEADER} mission from {Path(file).name}")
    loaded = mission_from_items(items, file, data)
    return dataclasses.replace(loaded, format="qgc-wpl-110")


# ------------------------------------------------------------------------------------------- items -> mission
def mission_from_items(items: Sequence[MissionItem], source: str,
                       defaults: Optional[Mapping] = None) -> LoadedMission:
    """A mission from items (a waypoint file's lines, a MAVLink upload); MAV_CMD numbers from the MAVLink common
    message set:

    - item 0 is the home position (whatever its command). When it has a position it becomes the mission's anchor
      (origin of the local frame) and the expected launch point (`start`); a home of 0, 0 means "unknown", ignored.
    - NAV_WAYPOINT (16): a waypoint at LAT/LON (frames 0, 3, 5, 6, 10, 11: all the global frames; ALT ignored).
      PARAM1 (hold time) is not supported and is ignored with a note. PARAM2 (acceptance radius): one radius
      applies to the whole mission, so when every NAV_WAYPOINT gives the same PARAM2 > 0 that is the mission's
      `acceptance_radius_m`; otherwise a PARAM2 that differs from the mission's radius is ignored with a note.
    - DO_CHANGE_SPEED (178): PARAM2 is the speed [m/s] for the legs that follow (PARAM1 speed type 0 or 1, both
      taken as speed through the water); -1 means no change. The first one before the first waypoint sets
      `cruise_speed_mps` (also the speed home for RTL); any later one sets the speed of the legs after it.
    - NAV_RETURN_TO_LAUNCH (20) as the last item: `on_complete: rtl`.
    - NAV_LOITER_UNLIM (17) as the last item: a last waypoint there (if it has a position) and
      `on_complete: loiter` with PARAM3 as the loiter radius when given.
    - DO_SET_MODE (176) to HOLD (PARAM1 with MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, PARAM2 = 4, ArduPilot Rover's
      HOLD) as the last item: `on_complete: hold`. Without any of these three last items, `on_complete` comes
      from `defaults`, else it is `loiter` (station keeping at the last waypoint).
    - Refused (the whole mission is rejected, naming the item): any other navigation command (MAV_CMD 16-99,
      e.g. spline waypoints, loiter turns/time, land, takeoff), DO_JUMP (177), RTL, LOITER_UNLIM or DO_SET_MODE
      HOLD before the last item, and waypoints in a local frame or at 0, 0.
    - Skipped with a note: everything else (DO_* actions such as camera or servo commands, CONDITION_* items);
      the boat follows the same path without performing them.

    The fields items cannot carry come from `defaults`, else QGC_DEFAULTS; what the items say (a speed, a uniform
    acceptance radius, the last item) wins over `defaults`. `source` names where they came from in messages (a
    file, "upload from ..."). Raises ConfigError(source, "item N", reason) naming the first item that cannot be
    flown."""
    return _mission_from_items(list(items), source, defaults, lambda it: f"item {it.seq}", "waypoints")


def _mission_from_items(items: List[MissionItem], source: str, defaults: Optional[Mapping],
                        label: Callable[[MissionItem], str], none_key: str) -> LoadedMission:
    for k, it in enumerate(items):
        if it.seq != k:
            raise ConfigError(source, it.where, f"item number {it.seq} out of sequence (expected {k})")
    notes = []
    data: Dict[str, Any] = dict(QGC_DEFAULTS)
    data.update(defaults or {})
    data.setdefault("name", Path(source).stem or "mission")
    data.setdefault("description", f"mission items from {Path(source).name}")
    origin = {}                                # MissionConfig key -> the item that set it (for messages)
    waypoints, labels = [], []
    cruise_set = False                         # the first DO_CHANGE_SPEED before any waypoint sets the cruise
    speed_mps: Optional[float] = None          # a later DO_CHANGE_SPEED: the speed of the legs after it
    hold_noted = radius_noted = False

    if items:
        home = items[0]
        if home.lat_deg != 0.0 or home.lon_deg != 0.0:
            point = build(PointConfig, {"lat_deg": home.lat_deg, "lon_deg": home.lon_deg}, source, label(home))
            data.setdefault("anchor", {"lat_deg": point.lat_deg, "lon_deg": point.lon_deg})
            data.setdefault("start", {"point": {"lat_deg": point.lat_deg, "lon_deg": point.lon_deg}})
        else:
            notes.append(f"{source}: {label(home)}: home is 0, 0 (unknown); the first waypoint anchors the "
                         f"local frame")

    # One acceptance radius for the mission: the items' own when every waypoint gives the same one.
    radii = {it.params[1] for it in items[1:] if it.command == MAV_CMD_NAV_WAYPOINT}
    if len(radii) == 1:
        radius = radii.pop()
        if math.isfinite(radius) and radius > 0:
            first_wp = next(it for it in items[1:] if it.command == MAV_CMD_NAV_WAYPOINT)
            data["acceptance_radius_m"] = radius
            origin["acceptance_radius_m"] = label(first_wp)

    last = len(items) - 1
    for it in items[1:]:
        where = label(it)
        name = _CMD_NAMES.get(it.command, f"MAV_CMD {it.command}")
        if it.command == MAV_CMD_NAV_WAYPOINT:
            waypoints.append(_waypoint(source, it, where, speed_mps))
            labels.append(where)
            if it.params[0] > 0 and not hold_noted:
                notes.append(f"{source}: {where}: hold time {it.params[0]:g} s ignored (not supported)")
                hold_noted = True
            if it.params[1] > 0 and abs(it.params[1] - float(data["acceptance_radius_m"])) > 1e-6 \
                    and not radius_noted:
                notes.append(f"{source}: {where}: acceptance radius {it.params[1]:g} m ignored; the mission uses "
                             f"acceptance_radius_m = {float(data['acceptance_radius_m']):g} m for every waypoint")
                radius_noted = True
        elif it.command == MAV_CMD_DO_CHANGE_SPEED:
            kind, value = it.params[0], it.params[1]
            if kind not in (0.0, 1.0):
                notes.append(f"{source}: {where}: DO_CHANGE_SPEED of type {kind:g} (not a ground/air speed) "
                             f"skipped")
            elif value > 0 and math.isfinite(value):
                if not waypoints and not cruise_set:
                    data["cruise_speed_mps"] = value
                    origin["cruise_speed_mps"] = where
                    cruise_set = True
                else:
                    speed_mps = value
        elif it.command == MAV_CMD_NAV_RETURN_TO_LAUNCH:
            _only_last(source, it, where, last, "NAV_RETURN_TO_LAUNCH (20)")
            data["on_complete"] = "rtl"
        elif it.command == MAV_CMD_NAV_LOITER_UNLIM:
            _only_last(source, it, where, last, "NAV_LOITER_UNLIM (17)")
            if it.lat_deg != 0.0 or it.lon_deg != 0.0:
                waypoints.append(_waypoint(source, it, where, speed_mps))
                labels.append(where)
            data["on_complete"] = "loiter"
            if math.isfinite(it.params[2]) and abs(it.params[2]) > 0:
                data["loiter_radius_m"] = abs(it.params[2])
                origin["loiter_radius_m"] = where
        elif it.command == MAV_CMD_DO_SET_MODE and _is_hold(it):
            _only_last(source, it, where, last, "DO_SET_MODE to HOLD (176)")
            data["on_complete"] = "hold"
        elif it.command == MAV_CMD_DO_JUMP or 16 <= it.command <= 99:
            raise ConfigError(source, where, f"{name} ({it.command}) is not flown by this autopilot; only "
                                             f"NAV_WAYPOINT (16), DO_CHANGE_SPEED (178), and RTL (20), "
                                             f"LOITER_UNLIM (17) or DO_SET_MODE HOLD (176) as the last item "
                                             f"are taken")
        else:
            notes.append(f"{source}: {where}: {name} ({it.command}) skipped (no such action on this autopilot)")

    if not waypoints:
        raise ConfigError(source, none_key, "no NAV_WAYPOINT (16) item: nothing to fly")
    data["waypoints"] = [{k: v for k, v in dataclasses.asdict(w).items() if v is not None} for w in waypoints]
    data.pop("source_file", None)
    try:
        mission = build(MissionConfig, data, source)
    except ConfigError as e:
        if e.key in origin:                    # a value an item gave: name the item
            raise ConfigError(source, f"{origin[e.key]}.{e.key}", e.reason) from None
        raise
    mission = dataclasses.replace(mission, source_file=source)
    return LoadedMission(mission, "mavlink", tuple(labels), tuple(notes), tuple(items))


def _only_last(source: str, it: MissionItem, where: str, last: int, what: str) -> None:
    if it.seq != last:
        raise ConfigError(source, where, f"{what} is only accepted as the last item (the items after it would "
                                         f"never be reached)")


def _is_hold(it: MissionItem) -> bool:
    """DO_SET_MODE to ArduPilot Rover's HOLD with the custom-mode flag: how a mission says "stop at the end"."""
    mode, custom = it.params[0], it.params[1]
    return (math.isfinite(mode) and mode == int(mode) and bool(int(mode) & MAV_MODE_FLAG_CUSTOM_MODE_ENABLED)
            and custom == ROVER_MODE_HOLD)


# ------------------------------------------------------------------------------------------- mission -> items
def mission_to_items(mission: MissionConfig) -> List[MissionItem]:
    """The items a ground station downloads for `mission` (one loaded from YAML or anything else); read back
    by mission_from_items they fly the same path at the same speeds and end the same way (waypoints, speeds,
    acceptance radius, on_complete and loiter radius; not the guidance law, the fence or the initial heading of
    `start`). A one-waypoint mission that ends in a loiter has no NAV_WAYPOINT to carry its acceptance radius.

    Item 0 is home: the launch point (`start`), else the anchor, else the first waypoint (frame 0, command 16).
    Item 1 is DO_CHANGE_SPEED with the cruise speed (params 1, cruise, -1, 0). Then a NAV_WAYPOINT per waypoint
    (frame 3, GLOBAL_RELATIVE_ALT; PARAM2 the acceptance radius), each preceded by a DO_CHANGE_SPEED when its
    leg's speed differs from the leg before (the first leg's from the cruise speed). Waypoints in metres are
    converted to latitude/longitude in the mission's frame. The end: on_complete rtl adds
    NAV_RETURN_TO_LAUNCH (20); loiter makes the last waypoint NAV_LOITER_UNLIM (17) with PARAM3 the loiter
    radius; hold adds DO_SET_MODE (176) to Rover HOLD."""
    from autopilot.guidance.path_following import mission_frame
    frame = mission_frame(mission)

    def lat_lon(p: PointConfig) -> Tuple[float, float]:
        if p.lat_deg is not None:
            assert p.lon_deg is not None                            # PointConfig.validate: they go together
            return (p.lat_deg, p.lon_deg)
        assert p.north_m is not None and p.east_m is not None       # PointConfig.validate: lat/lon or north/east
        return frame.to_wgs84(p.north_m, p.east_m)

    geo = [lat_lon(p) for p in mission.waypoints]
    if mission.start is not None:
        home = lat_lon(mission.start.point)
    elif mission.anchor is not None:
        home = (mission.anchor.lat_deg, mission.anchor.lon_deg)
    else:
        home = geo[0]
    cruise = mission.cruise_speed_mps
    rows = [(MAV_FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0.0, 0.0, 0.0, 0.0), home),
            (MAV_FRAME_MISSION, MAV_CMD_DO_CHANGE_SPEED, (1.0, cruise, -1.0, 0.0), (0.0, 0.0))]
    speed = cruise
    last = len(geo) - 1
    for i, (p, ll) in enumerate(zip(mission.waypoints, geo)):
        leg = p.speed_mps if p.speed_mps is not None else cruise
        if leg != speed:
            rows.append((MAV_FRAME_MISSION, MAV_CMD_DO_CHANGE_SPEED, (1.0, leg, -1.0, 0.0), (0.0, 0.0)))
            speed = leg
        if i == last and mission.on_complete == "loiter":
            rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_LOITER_UNLIM,
                         (0.0, 0.0, mission.loiter_radius_m, 0.0), ll))
        else:
            rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_WAYPOINT,
                         (0.0, mission.acceptance_radius_m, 0.0, 0.0), ll))
    if mission.on_complete == "rtl":
        rows.append((MAV_FRAME_MISSION, MAV_CMD_NAV_RETURN_TO_LAUNCH, (0.0, 0.0, 0.0, 0.0), (0.0, 0.0)))
    elif mission.on_complete == "hold":
        rows.append((MAV_FRAME_MISSION, MAV_CMD_DO_SET_MODE,
                     (float(MAV_MODE_FLAG_CUSTOM_MODE_ENABLED), float(ROVER_MODE_HOLD), 0.0, 0.0), (0.0, 0.0)))
    return [MissionItem(k, fr, cmd, params, lat, lon, 0.0, int(k == 0), 1)
            for k, (fr, cmd, params, (lat, lon)) in enumerate(rows)]


# ------------------------------------------------------------------------------------------- fence and rally
_FENCE_SUPPORTED = "this boat keeps to one inclusion polygon (NAV_FENCE_POLYGON_VERTEX_INCLUSION, 5001)"


def fence_from_items(items: Sequence[MissionItem], source: str) -> Tuple[PointConfig, ...]:
    """The geofence polygon from MAVLink fence items (MISSION_TYPE_FENCE): one inclusion polygon, every item a
    NAV_FENCE_POLYGON_VERTEX_INCLUSION (5001) in a global frame with PARAM1 the vertex count (at least 3, the
    same on every vertex, equal to the vertices sent). Exclusion polygons (5002), circles (5003, 5004), a
    second inclusion polygon and anything else are refused: ConfigError(source, "item N", reason) saying what is
    supported. No items: no fence."""
    items = list(items)
    what = {MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION: "an exclusion polygon",
            MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION: "an inclusion circle",
            MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION: "an exclusion circle"}
    n: Optional[int] = None                    # the polygon's vertex count (item 0's PARAM1)
    out = []
    for k, it in enumerate(items):
        where = f"item {it.seq}"
        if it.seq != k:
            raise ConfigError(source, where, f"item number {it.seq} out of sequence (expected {k})")
        if it.command in what:
            raise ConfigError(source, where, f"{what[it.command]} (MAV_CMD {it.command}) is not supported; "
                                             f"{_FENCE_SUPPORTED}")
        if it.command != MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION:
            raise ConfigError(source, where, f"MAV_CMD {it.command} is not a fence vertex; {_FENCE_SUPPORTED}")
        if n is not None and k >= n:
            raise ConfigError(source, where, f"a second polygon (the vertex count {n} ends the first at item "
                                             f"{n - 1}) is not supported; {_FENCE_SUPPORTED}")
        count = it.params[0]
        if not (math.isfinite(count) and count == int(count)):
            raise ConfigError(source, where, "PARAM1 (vertex count) must be a whole number")
        if n is None:
            if count < 3:
                raise ConfigError(source, where, f"a fence polygon needs at least 3 vertices; PARAM1 (vertex "
                                                 f"count) is {count:g}")
            too_many = fence_size_problem(int(count))
            if too_many is not None:
                raise ConfigError(source, where, f"PARAM1 (vertex count): {too_many}")
            n = int(count)
        elif int(count) != n:
            raise ConfigError(source, where, f"vertex count {count:g} (PARAM1) differs from item 0's {n}: one "
                                             f"polygon, one count")
        if it.frame not in GLOBAL_FRAMES:
            raise ConfigError(source, where, f"frame {it.frame} is not a global (latitude/longitude) frame")
        out.append(build(PointConfig, {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}, source, where))
    if n is not None and len(items) != n:
        raise ConfigError(source, "item 0", f"vertex count {n} (PARAM1) does not match the {len(items)} vertices "
                                            f"sent")
    return tuple(out)


def fence_to_items(fence: Sequence[PointConfig], frame=None) -> List[MissionItem]:
    """MAVLink fence items (one inclusion polygon, MAV_CMD 5001, frame 0) for a geofence polygon. Points in
    metres need `frame`, the mission's LocalFrame (autopilot.guidance.path_following.mission_frame)."""
    out = []
    for k, p in enumerate(fence):
        if p.lat_deg is not None:
            assert p.lon_deg is not None                            # PointConfig.validate: they go together
            lat, lon = p.lat_deg, p.lon_deg
        elif frame is None:
            raise ValueError("fence_to_items: a fence point in metres needs the mission's frame")
        else:
            lat, lon = frame.to_wgs84(p.north_m, p.east_m)
        out.append(MissionItem(k, MAV_FRAME_GLOBAL, MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION,
                               (float(len(fence)), 0.0, 0.0, 0.0), lat, lon))
    return out


def rally_from_items(items: Sequence[MissionItem], source: str) -> Tuple[PointConfig, ...]:
    """Rally points from MAVLink rally items (MISSION_TYPE_RALLY: NAV_RALLY_POINT, 5100, global frame).

    This autopilot does not fly rally points: RTL goes to the launch point. They are kept only so a ground
    station can download them again. Anything else is refused naming the item."""
    out = []
    for k, it in enumerate(items):
        where = f"item {it.seq}"
        if it.seq != k:
            raise ConfigError(source, where, f"item number {it.seq} out of sequence (expected {k})")
        if it.command != MAV_CMD_NAV_RALLY_POINT:
            raise ConfigError(source, where, f"MAV_CMD {it.command} is not a rally point (5100)")
        if it.frame not in GLOBAL_FRAMES:
            raise ConfigError(source, where, f"frame {it.frame} is not a global (latitude/longitude) frame")
        out.append(build(PointConfig, {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}, source, where))
    return tuple(out)


# ------------------------------------------------------------------------------------------- QGC .plan
BOAT_VEHICLE_TYPES = (10, 11)        # MAV_TYPE_GROUND_ROVER, MAV_TYPE_SURFACE_BOAT: their cruiseSpeed is ours
_COMPLEX_NAMES = {"survey": "a survey", "CorridorScan": "a corridor scan", "StructureScan": "a structure scan",
                  "fwLandingPattern": "a fixed-wing landing pattern", "vtolLandingPattern": "a VTOL landing "
                                                                                          "pattern"}
_PLAN_KEYS = ("fileType", "version", "groundStation", "mission", "items", "type", "command", "frame", "params",
              "autoContinue", "doJumpId", "complexItemType", "plannedHomePosition", "cruiseSpeed",
              "hoverSpeed", "vehicleType", "firmwareType", "geoFence", "polygons", "polygon", "inclusion",
              "circles", "circle", "center", "radius", "rallyPoints", "points", "breachReturn")
MAX_JSON_INT_DIGITS = 30             # an integer longer than this in a plan is not a plan's


def parse_qgc_plan(text: str, file: str = "<text>", defaults: Optional[Mapping] = None) -> LoadedMission:
    """A QGroundControl .plan (JSON, fileType "Plan"): the mission's SimpleItems become MissionItems (a
    SimpleItem's command, frame, params[7] = PARAM1..4, LAT, LON, ALT; null is 0), with plannedHomePosition as
    item 0, flown by the rules of mission_from_items; `mission.cruiseSpeed` is the cruise speed when the plan was
    made for a boat or rover (vehicleType 10 or 11; otherwise it is a fixed-wing speed, ignored with a note).
    The one inclusion polygon of its geoFence becomes the mission's geofence (replacing any in `defaults`); its
    rally points are read into LoadedMission.rally and not flown. Complex items (survey, corridor scan,
    structure scan: convert them to waypoints in QGC), exclusion polygons, circles and a second polygon are
    refused. Every error is ConfigError(file, key path such as "mission.items[3].params", reason), never
    quoting the file."""
    return _plan_from_doc(_json_loads(text, file), file, defaults)


def _plan_from_doc(plan, file: str, defaults: Optional[Mapping]) -> LoadedMission:
    if not isinstance(plan, dict):
        raise ConfigError(file, "", "must be a JSON object (a QGroundControl plan file)")
    if plan.get("fileType") != "Plan":
        raise ConfigError(file, "fileType", 'must be "Plan" (a QGroundControl plan file)')
    mission = _obj(plan.get("mission"), file, "mission")
    raw_items = mission.get("items")
    if not isinstance(raw_items, list):
        raise ConfigError(file, "mission.items", "must be a list of mission items")
    home = mission.get("plannedHomePosition")
    home = [0.0, 0.0, 0.0] if home is None else _numbers(home, file, "mission.plannedHomePosition", 3)
    items = [MissionItem(0, MAV_FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0.0, 0.0, 0.0, 0.0), home[0], home[1],
                         home[2], 1, 1)]
    keys = ["mission.plannedHomePosition"]      # items[k] came from keys[k]
    for k, raw in enumerate(raw_items):
        key = f"mission.items[{k}]"
        items.append(_plan_item(raw, file, key, len(items)))
        keys.append(key)

    notes = []
    data = dict(defaults or {})
    data.setdefault("name", Path(file).stem)
    data.setdefault("description", f"QGroundControl plan {Path(file).name}")
    speed = mission.get("cruiseSpeed")
    if speed is not None:
        if not _is_number(speed) or not math.isfinite(float(speed)):
            raise ConfigError(file, "mission.cruiseSpeed", "must be a number (m/s)")
        vehicle = mission.get("vehicleType")
        if vehicle in BOAT_VEHICLE_TYPES:
            if speed > 0 and not 0.05 <= speed <= 20:
                raise ConfigError(file, "mission.cruiseSpeed", f"{float(speed):g} m/s is not a boat's cruise speed "
                                                               f"(0.05..20 m/s)")
            if speed > 0:
                data["cruise_speed_mps"] = float(speed)
        elif speed > 0:
            made_for = f"MAV_TYPE {vehicle}" if _is_number(vehicle) and isinstance(vehicle, int) else "unknown"
            notes.append(f"{file}: mission.cruiseSpeed: ignored: the plan was made for another kind of vehicle "
                         f"({made_for}), whose cruise speed is not a boat's; set a speed in QGC's mission settings "
                         f"(DO_CHANGE_SPEED) or plan for a boat")
    fence, fence_notes = _plan_fence(plan.get("geoFence"), file)
    notes.extend(fence_notes)
    if fence:
        data["geofence"] = [{"lat_deg": p.lat_deg, "lon_deg": p.lon_deg} for p in fence]
    rally = _plan_rally(plan.get("rallyPoints"), file)
    if rally:
        notes.append(f"{file}: rallyPoints: {len(rally)} rally points read but not flown (RTL goes to the launch "
                     f"point)")
    loaded = _mission_from_items(items, file, data, lambda it: keys[it.seq], "mission.items")
    return dataclasses.replace(loaded, format="qgc-plan", notes=loaded.notes + tuple(notes), rally=rally)


def _plan_item(raw, file: str, key: str, seq: int) -> MissionItem:
    it = _obj(raw, file, key)
    kind = it.get("type")
    if kind == "ComplexItem":
        complex_type = it.get("complexItemType")
        what = _COMPLEX_NAMES.get(complex_type, "a complex item") \
            if isinstance(complex_type, str) else "a complex item"
        raise ConfigError(file, key, f"{what} (a QGroundControl ComplexItem) is a pattern this autopilot does not "
                                     f"fly; convert it to waypoints in QGC (or export a .waypoints file)")
    if kind != "SimpleItem":
        raise ConfigError(file, f"{key}.type", 'must be "SimpleItem" or "ComplexItem"')
    command, frame = it.get("command"), it.get("frame")
    if not (isinstance(command, int) and not isinstance(command, bool) and 0 <= command <= 65535):
        raise ConfigError(file, f"{key}.command", "must be a MAV_CMD number (a whole number 0..65535)")
    if not (isinstance(frame, int) and not isinstance(frame, bool) and 0 <= frame <= 255):
        raise ConfigError(file, f"{key}.frame", "must be a MAV_FRAME number (a whole number 0..255)")
    raw_params = it.get("params")
    if not isinstance(raw_params, list) or len(raw_params) != 7:
        raise ConfigError(file, f"{key}.params", "must be a list of 7 numbers (null allowed)")
    params = []
    for j, v in enumerate(raw_params):
        if v is None:                            # QGC writes an unset (NaN) parameter as null
            v = 0.0
        if not _is_number(v):
            raise ConfigError(file, f"{key}.params[{j}]", "must be a number or null")
        v = float(v)
        if math.isnan(v):
            v = 0.0
        if not math.isfinite(v):
            raise ConfigError(file, f"{key}.params[{j}]", "must be a finite number or null")
        params.append(v)
    auto = it.get("autoContinue", True)
    if not isinstance(auto, (bool, int)):
        raise ConfigError(file, f"{key}.autoContinue", "must be true or false")
    return MissionItem(seq, frame, command, (params[0], params[1], params[2], params[3]), params[4], params[5],
                       params[6], 0, int(bool(auto)))


def _plan_fence(fence, file: str) -> Tuple[Tuple[PointConfig, ...], List[str]]:
    """The one inclusion polygon of a .plan's geoFence (() when it has none), and notes."""
    if fence is None:
        return (), []
    fence = _obj(fence, file, "geoFence")
    notes = []
    circles = fence.get("circles")
    if circles is not None and not isinstance(circles, list):
        raise ConfigError(file, "geoFence.circles", "must be a list")
    for i, c in enumerate(circles or []):
        inclusion = c.get("inclusion", True) if isinstance(c, dict) else True
        kind = "an exclusion circle" if inclusion is False else "an inclusion circle"
        raise ConfigError(file, f"geoFence.circles[{i}]", f"{kind}: circular fences are not supported; draw the "
                                                          f"area the boat must stay in as one inclusion polygon")
    polygons = fence.get("polygons")
    if polygons is not None and not isinstance(polygons, list):
        raise ConfigError(file, "geoFence.polygons", "must be a list")
    shapes = [(f"geoFence.polygons[{i}]", p) for i, p in enumerate(polygons or [])]
    if fence.get("polygon") is not None:         # a version-1 geoFence: one polygon, the inclusion area
        shapes.insert(0, ("geoFence.polygon", {"polygon": fence["polygon"], "inclusion": True}))
    if fence.get("breachReturn") is not None:
        notes.append(f"{file}: geoFence.breachReturn: ignored (a fence breach is handled by the geofence "
                     f"failsafe)")
    points: Tuple[PointConfig, ...] = ()
    for key, raw in shapes:
        poly = _obj(raw, file, key)
        inclusion = poly.get("inclusion", True)
        if not isinstance(inclusion, bool):
            raise ConfigError(file, f"{key}.inclusion", "must be true or false")
        if not inclusion:
            raise ConfigError(file, key, "an exclusion polygon: exclusion polygons are not supported; the fence "
                                         "is one inclusion polygon, the area the boat must stay inside")
        if points:
            raise ConfigError(file, key, "a second inclusion polygon: one inclusion polygon is supported (draw "
                                         "the one area the boat may be in)")
        vertices = poly.get("polygon")
        if not isinstance(vertices, list) or len(vertices) < 3:
            raise ConfigError(file, f"{key}.polygon", "must be a list of at least 3 [lat, lon] points")
        too_many = fence_size_problem(len(vertices))
        if too_many is not None:
            raise ConfigError(file, f"{key}.polygon", too_many)
        pts = []
        for j, v in enumerate(vertices):
            vkey = f"{key}.polygon[{j}]"
            lat, lon, _alt = _numbers(v, file, vkey, 3)
            pts.append(build(PointConfig, {"lat_deg": lat, "lon_deg": lon}, file, vkey))
        points = tuple(pts)
    return points, notes


def _plan_rally(rally, file: str) -> Tuple[PointConfig, ...]:
    """A .plan's rally points, through rally_from_items (errors name "rallyPoints.points[k]")."""
    if rally is None:
        return ()
    rally = _obj(rally, file, "rallyPoints")
    raw = rally.get("points")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(file, "rallyPoints.points", "must be a list of [lat, lon, alt] points")
    items = []
    for k, p in enumerate(raw):
        lat, lon, alt = _numbers(p, file, f"rallyPoints.points[{k}]", 3)
        items.append(MissionItem(k, MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_RALLY_POINT, (0.0, 0.0, 0.0, 0.0),
                                 lat, lon, alt))
    try:
        return rally_from_items(items, file)
    except ConfigError as e:                   # "item 3.lat_deg" -> "rallyPoints.points[3].lat_deg"
        head, _, rest = e.key.partition(".")
        key = f"rallyPoints.points[{head.split()[-1]}]" + (f".{rest}" if rest else "")
        raise ConfigError(file, key, e.reason) from None


def _json_loads(text: str, file: str):
    """json.loads refusing what a plan never holds (a key twice in one object, NaN's cousins Infinity and
    -Infinity, integers of more than MAX_JSON_INT_DIGITS digits); ConfigError(file, "line N", reason)
    without quoting the text."""
    def pairs(kv):
        out = {}
        for k, v in kv:
            if k in out:
                name = f" {k!r}" if k in _PLAN_KEYS else ""
                raise _JsonRefusal(f"a key{name} given twice in one object (readers disagree on which counts)")
            out[k] = v
        return out

    def whole(s: str) -> int:
        if len(s.lstrip("-")) > MAX_JSON_INT_DIGITS:
            raise _JsonRefusal(f"an integer of more than {MAX_JSON_INT_DIGITS} digits")
        return int(s)

    def constant(s: str) -> float:
        if s == "NaN":
            return math.nan                    # unset, as QGC's null
        raise _JsonRefusal("Infinity is not a number a plan can hold")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=whole, parse_constant=constant)
    except _JsonRefusal as e:
        raise ConfigError(file, "", f"not a valid plan: {e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(file, f"line {e.lineno}", f"not valid JSON (column {e.colno}: {e.msg}); a "
                                                    f"QGroundControl .plan file is JSON") from None
    except RecursionError:
        raise ConfigError(file, "", "not valid JSON: nested too deeply") from None
    except (ValueError, OverflowError):
        raise ConfigError(file, "", "not valid JSON: a value Python cannot convert") from None


class _JsonRefusal(Exception):
    pass


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _obj(value, file: str, key: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(file, key, "must be a JSON object")
    return value


def _numbers(value, file: str, key: str, n: int) -> list:
    """2..n finite numbers (missing ones are 0)."""
    if not isinstance(value, list) or len(value) < 2 or len(value) > n:
        raise ConfigError(file, key, f"must be a list of 2..{n} numbers")
    out = []
    for v in value:
        if not _is_number(v):
            raise ConfigError(file, key, "must hold numbers")
        try:
            v = float(v)
        except OverflowError:
            raise ConfigError(file, key, "must hold finite numbers") from None
        if not math.isfinite(v):
            raise ConfigError(file, key, "must hold finite numbers")
        out.append(v)
    return out + [0.0] * (n - len(out))


# ------------------------------------------------------------------------------------------- helpers
def _parse_item(file: str, line_no: int, line: str) -> MissionItem:
    f = line.split()
    if len(f) != 12:
        raise ConfigError(file, f"line {line_no}", f"expected 12 fields (SEQ CURRENT FRAME COMMAND P1..P4 LAT LON "
                                                   f"ALT AUTOCONTINUE), got {len(f)}")
    try:
        whole = [float(x) for x in f[:4]]
        nums = [float(x) for x in f[4:11]]
    except ValueError:
        raise ConfigError(file, f"line {line_no}", "fields must be numbers") from None
    if any(not v.is_integer() for v in whole):      # 1.5 is no item number, frame or command (nan, inf neither)
        raise ConfigError(file, f"line {line_no}", "SEQ, CURRENT, FRAME and COMMAND must be whole numbers")
    seq, _current, frame, command = (int(v) for v in whole)
    if any(v != v or v in (float("inf"), float("-inf")) for v in nums):
        raise ConfigError(file, f"line {line_no}", "fields must be finite numbers")
    try:
        autocontinue = int(float(f[11]))
    except (ValueError, OverflowError):
        autocontinue = 1                         # not used by this autopilot; kept for the round trip
    return MissionItem(seq, frame, command, (nums[0], nums[1], nums[2], nums[3]), nums[4], nums[5], nums[6],
                       int(_current), autocontinue, line=line_no)


def _waypoint(source: str, it: MissionItem, where: str, speed_mps: Optional[float]) -> PointConfig:
    if it.frame not in GLOBAL_FRAMES:
        raise ConfigError(source, where, f"frame {it.frame} is not a global (latitude/longitude) frame; "
                                         f"use one of {', '.join(map(str, GLOBAL_FRAMES))}")
    if it.lat_deg == 0.0 and it.lon_deg == 0.0:
        raise ConfigError(source, where, "waypoint at latitude 0, longitude 0 (no position set)")
    p = {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}
    if speed_mps is not None:
        p["speed_mps"] = speed_mps
    return build(PointConfig, p, source, where)


def _read_text(path: Path) -> str:
    from autopilot.vocab.safe_read import read_user_text
    return read_user_text(path)
