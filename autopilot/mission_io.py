"""Load a mission from our YAML, a QGroundControl / Mission Planner waypoint file (`QGC WPL 110`) or a
QGroundControl `.plan` (JSON: mission, geofence, rally points; see parse_qgc_plan).

Both give an `autopilot.config.MissionConfig`, validated by the same schema, so everything downstream (checks,
guidance, the log) sees one kind of mission. The format is recognised by content: a file whose first line is
`QGC WPL 110` is a waypoint file, anything else is read as mission YAML.

QGC WPL 110, one item per line, tab- or space-separated:

    SEQ CURRENT FRAME COMMAND PARAM1 PARAM2 PARAM3 PARAM4 LAT_DEG LON_DEG ALT_M AUTOCONTINUE

What a boat takes from it (MAV_CMD numbers from the MAVLink common message set):

- item 0 is the home position (whatever its command). When it has a position it becomes the mission's anchor
  (origin of the local frame) and the expected launch point (`start`); a home of 0, 0 means "unknown", ignored.
- NAV_WAYPOINT (16): a waypoint at LAT/LON (frames 0, 3, 5, 6, 10, 11: all the global frames; ALT ignored).
  PARAM1 (hold time) is not supported and is ignored with a note; PARAM2 (acceptance radius) is ignored with a
  note when it differs from the mission's `acceptance_radius_m` (one radius applies to the whole mission).
- DO_CHANGE_SPEED (178): PARAM2 is the speed [m/s] for the legs that follow (PARAM1 speed type 0 or 1, both
  taken as speed through the water). Before the first waypoint it sets `cruise_speed_mps`. -1 means no change.
- NAV_RETURN_TO_LAUNCH (20) as the last item: `on_complete: rtl`.
- NAV_LOITER_UNLIM (17) as the last item: a last waypoint there (if it has a position) and `on_complete: loiter`
  with PARAM3 as the loiter radius when given.
- Refused (the file is rejected, naming the item): any other navigation command (MAV_CMD 16-99, e.g. spline
  waypoints, loiter turns/time, land, takeoff), DO_JUMP (177), RTL or LOITER_UNLIM before the last item, and
  waypoints in a local frame or at 0, 0 -- skipping any of them would change where the boat goes.
- Skipped with a note: everything else (DO_* actions such as camera or servo commands, CONDITION_* items); the
  boat follows the same path without performing them.

The fields a waypoint file cannot carry (acceptance radius, guidance law, geofence, ...) come from `defaults`,
a mapping of MissionConfig keys, and otherwise from QGC_DEFAULTS.

The same rules apply to items that do not come from a file (`mission_from_items`: a MAVLink upload), and
`mission_to_items` writes any mission as items a ground station downloads and reads back to the same path.
MAVLink fences (`fence_from_items`): one inclusion polygon (MAV_CMD 5001, PARAM1 = vertex count); exclusion
polygons and circles are refused naming the item. Rally points (5100) are read so they can be downloaded again,
but not flown.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from autopilot.config import MissionConfig, PointConfig, load_mission
from autopilot.config_schema import ConfigError, build

QGC_HEADER = "QGC WPL 110"

MAV_CMD_NAV_WAYPOINT = 16
MAV_CMD_NAV_LOITER_UNLIM = 17
MAV_CMD_NAV_RETURN_TO_LAUNCH = 20
MAV_CMD_DO_JUMP = 177
MAV_CMD_DO_CHANGE_SPEED = 178

GLOBAL_FRAMES = (0, 3, 5, 6, 10, 11)   # MAV_FRAME_GLOBAL, _RELATIVE_ALT, _INT, _RELATIVE_ALT_INT, _TERRAIN_ALT(_INT)

# Fields a waypoint file does not carry, used unless `defaults` gives them.
QGC_DEFAULTS = {"cruise_speed_mps": 1.0, "acceptance_radius_m": 3.0}

_CMD_NAMES = {16: "NAV_WAYPOINT", 17: "NAV_LOITER_UNLIM", 18: "NAV_LOITER_TURNS", 19: "NAV_LOITER_TIME",
              20: "NAV_RETURN_TO_LAUNCH", 21: "NAV_LAND", 22: "NAV_TAKEOFF", 31: "NAV_LOITER_TO_ALT",
              82: "NAV_SPLINE_WAYPOINT", 93: "NAV_DELAY", 112: "CONDITION_DELAY", 114: "CONDITION_DISTANCE",
              177: "DO_JUMP", 178: "DO_CHANGE_SPEED", 179: "DO_SET_HOME", 181: "DO_SET_RELAY",
              183: "DO_SET_SERVO", 189: "DO_LAND_START", 203: "DO_DIGICAM_CONTROL", 206: "DO_SET_CAM_TRIGG_DIST"}

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
    waypoint file), so messages point at the line a person has to edit. `notes` are the items skipped.
    """

    mission: MissionConfig
    format: str                               # "yaml", "qgc-wpl-110", "qgc-plan" or "mavlink"
    waypoint_labels: Tuple[str, ...]
    notes: Tuple[str, ...] = ()
    items: Tuple[MissionItem, ...] = ()       # the items it came from (waypoint files and uploads)


def load_mission_file(path, defaults: Optional[Mapping] = None,
                      on_note: Optional[Callable[[str], None]] = None) -> MissionConfig:
    """A MissionConfig from YAML or QGC WPL 110. Notes (skipped items) go to `on_note`, else to the log."""
    loaded = read_mission_file(path, defaults)
    for note in loaded.notes:
        (on_note or log.warning)(note)
    return loaded.mission


def read_mission_file(path, defaults: Optional[Mapping] = None) -> LoadedMission:
    """Load either format; raises ConfigError(file, key, reason) on any problem."""
    path = Path(path)
    text = _read_text(path)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first.startswith("QGC WPL"):
        return parse_qgc_wpl(text, str(path), defaults)
    if first.startswith("{") and '"fileType"' in text[:4096] or path.suffix == ".plan":
        return parse_qgc_plan(text, str(path), defaults)
    mission = load_mission(path)
    return LoadedMission(mission, "yaml", tuple(f"waypoints[{i}]" for i in range(len(mission.waypoints))))


def parse_qgc_wpl(text: str, file: str = "<text>", defaults: Optional[Mapping] = None) -> LoadedMission:
    """Parse the text of a QGC WPL 110 file (see the module docstring for what is taken)."""
    lines = [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines or lines[0][1] != QGC_HEADER:
        # never quote the line: the file may be anything a stranger named (its content is not ours to echo)
        got = "a different first line" if lines else "an empty file"
        raise ConfigError(file, "line 1", f"expected the header {QGC_HEADER!r}, got {got}")
    items = [_parse_item(file, n, ln) for n, ln in lines[1:]]
    for k, it in enumerate(items):
        if it.seq != k:
            raise ConfigError(file, f"line {it.line}", f"item number {it.seq} out of sequence (expected {k})")
    loaded = mission_from_items(items, file, defaults)
    return dataclasses.replace(loaded, format="qgc-wpl-110")


def mission_from_items(items: Sequence[MissionItem], file: str, defaults: Optional[Mapping] = None) -> LoadedMission:
    """A mission from items (a waypoint file's lines, a MAVLink upload) by the rules in the module docstring;
    ConfigError(file, "item N", reason) naming the first item that cannot be flown."""
    items = list(items)
    for k, it in enumerate(items):
        if it.seq != k:
            raise ConfigError(file, it.where, f"item number {it.seq} out of sequence (expected {k})")
    notes = []
    data = dict(QGC_DEFAULTS)
    data.update(defaults or {})
    data.setdefault("name", Path(file).stem)
    data.setdefault("description", f"{QGC_HEADER} mission from {Path(file).name}")
    waypoints, labels = [], []
    speed_mps: Optional[float] = None          # set by DO_CHANGE_SPEED after the first waypoint
    hold_noted = radius_noted = False

    if items:
        home = items[0]
        if home.lat_deg != 0.0 or home.lon_deg != 0.0:
            point = _point(file, home, {"lat_deg": home.lat_deg, "lon_deg": home.lon_deg})
            data.setdefault("anchor", {"lat_deg": point.lat_deg, "lon_deg": point.lon_deg})
            data.setdefault("start", {"point": {"lat_deg": point.lat_deg, "lon_deg": point.lon_deg}})
        else:
            notes.append(f"{file}: item 0: home is 0, 0 (unknown); the first waypoint anchors the local frame")

    last = len(items) - 1
    for it in items[1:]:
        where = f"item {it.seq}"
        name = _CMD_NAMES.get(it.command, f"MAV_CMD {it.command}")
        if it.command == MAV_CMD_NAV_WAYPOINT:
            p = {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}
            if speed_mps is not None:
                p["speed_mps"] = speed_mps
            waypoints.append(_waypoint(file, it, p))
            labels.append(where)
            if it.params[0] > 0 and not hold_noted:
                notes.append(f"{file}: {where}: hold time {it.params[0]:g} s ignored (not supported)")
                hold_noted = True
            if it.params[1] > 0 and abs(it.params[1] - float(data["acceptance_radius_m"])) > 1e-6 \
                    and not radius_noted:
                notes.append(f"{file}: {where}: acceptance radius {it.params[1]:g} m ignored; the mission uses "
                             f"acceptance_radius_m = {float(data['acceptance_radius_m']):g} m for every waypoint")
                radius_noted = True
        elif it.command == MAV_CMD_DO_CHANGE_SPEED:
            kind, value = it.params[0], it.params[1]
            if kind not in (0.0, 1.0):
                notes.append(f"{file}: {where}: DO_CHANGE_SPEED of type {kind:g} (not a ground/air speed) skipped")
            elif value > 0:
                if waypoints:
                    speed_mps = value
                else:
                    data["cruise_speed_mps"] = value
        elif it.command == MAV_CMD_NAV_RETURN_TO_LAUNCH:
            if it.seq != last:
                raise ConfigError(file, where, "NAV_RETURN_TO_LAUNCH (20) is only accepted as the last item "
                                               "(the items after it would never be reached)")
            data["on_complete"] = "rtl"
        elif it.command == MAV_CMD_NAV_LOITER_UNLIM:
            if it.seq != last:
                raise ConfigError(file, where, "NAV_LOITER_UNLIM (17) is only accepted as the last item "
                                               "(the items after it would never be reached)")
            if it.lat_deg != 0.0 or it.lon_deg != 0.0:
                p = {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}
                if speed_mps is not None:
                    p["speed_mps"] = speed_mps
                waypoints.append(_waypoint(file, it, p))
                labels.append(where)
            data["on_complete"] = "loiter"
            if abs(it.params[2]) > 0:
                data["loiter_radius_m"] = abs(it.params[2])
        elif it.command == MAV_CMD_DO_JUMP or 16 <= it.command <= 99:
            raise ConfigError(file, where, f"{name} ({it.command}) is not flown by this autopilot; only "
                                           f"NAV_WAYPOINT (16), DO_CHANGE_SPEED (178), and RTL (20) or "
                                           f"LOITER_UNLIM (17) as the last item are taken")
        else:
            notes.append(f"{file}: {where}: {name} ({it.command}) skipped (no such action on this autopilot)")

    if not waypoints:
        raise ConfigError(file, "waypoints", "the file has no NAV_WAYPOINT (16) item")
    data["waypoints"] = [dataclasses.asdict(w) for w in waypoints]
    data.pop("source_file", None)
    mission = build(MissionConfig, data, file)
    mission = dataclasses.replace(mission, source_file=file)
    return LoadedMission(mission, "mavlink", tuple(labels), tuple(notes), tuple(items))


BOAT_VEHICLE_TYPES = (10, 11)        # MAV_TYPE_GROUND_ROVER, MAV_TYPE_SURFACE_BOAT: their cruiseSpeed is ours


def parse_qgc_plan(text: str, file: str = "<text>", defaults: Optional[Mapping] = None) -> LoadedMission:
    """A QGroundControl .plan (JSON, fileType "Plan"): the mission's SimpleItems by the waypoint-file rules
    (plannedHomePosition is item 0), one inclusion polygon of its geoFence as the mission's geofence, and its
    rally points (read, not flown). Complex items (survey, corridor scan, structure scan), exclusion polygons
    and circles are refused naming where they are; a ConfigError(file, "mission.items[3]", reason), never the
    file's content."""
    import json
    try:
        plan = json.loads(text)
    except (ValueError, RecursionError) as e:
        where = f"line {e.lineno}" if hasattr(e, "lineno") else ""
        raise ConfigError(file, where, "not valid JSON (a QGroundControl .plan file is JSON)") from None
    if not isinstance(plan, dict) or plan.get("fileType") != "Plan":
        raise ConfigError(file, "fileType", 'must be "Plan" (a QGroundControl plan file)')
    mission = _obj(plan.get("mission"), file, "mission")
    raw_items = mission.get("items")
    if not isinstance(raw_items, list):
        raise ConfigError(file, "mission.items", "must be a list of mission items")
    home = mission.get("plannedHomePosition")
    if home is None:
        home = [0.0, 0.0, 0.0]
    home = _numbers(home, file, "mission.plannedHomePosition", 3)
    items = [MissionItem(0, 0, MAV_CMD_NAV_WAYPOINT, (0.0, 0.0, 0.0, 0.0), home[0], home[1], home[2], 1, 1)]
    notes = []
    for k, raw in enumerate(raw_items):
        key = f"mission.items[{k}]"
        it = _obj(raw, file, key)
        kind = it.get("type")
        if kind == "ComplexItem":
            what = it.get("complexItemType", "a complex item")
            raise ConfigError(file, key, f"{str(what)[:40]!r} is a QGroundControl pattern this autopilot does not "
                                         f"fly; convert it to waypoints in QGC (or export a .waypoints file)")
        if kind != "SimpleItem":
            raise ConfigError(file, f"{key}.type", 'must be "SimpleItem" or "ComplexItem"')
        command, frame = it.get("command"), it.get("frame")
        if isinstance(command, bool) or not isinstance(command, int) or \
                isinstance(frame, bool) or not isinstance(frame, int):
            raise ConfigError(file, key, "command and frame must be whole numbers")
        raw_params = it.get("params")
        if not isinstance(raw_params, list) or len(raw_params) != 7:
            raise ConfigError(file, f"{key}.params", "must be a list of 7 numbers (null allowed)")
        params = []
        for j, v in enumerate(raw_params):
            if v is None:
                v = 0.0
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise ConfigError(file, f"{key}.params[{j}]", "must be a finite number or null")
            params.append(float(v))
        items.append(MissionItem(len(items), frame, command, tuple(params[:4]), params[4], params[5], params[6],
                                 0, 1 if it.get("autoContinue", True) else 0))
    data = dict(defaults or {})
    speed = mission.get("cruiseSpeed")
    if isinstance(speed, (int, float)) and not isinstance(speed, bool) and speed > 0 and \
            mission.get("vehicleType") in BOAT_VEHICLE_TYPES:
        data.setdefault("cruise_speed_mps", float(speed))
    data.setdefault("name", Path(file).stem)
    data.setdefault("description", f"QGroundControl plan {Path(file).name}")
    fence = _plan_fence(plan.get("geoFence"), file)
    if fence:
        data["geofence"] = [{"lat_deg": lat, "lon_deg": lon} for lat, lon in fence]
    rally = plan.get("rallyPoints")
    if isinstance(rally, dict) and rally.get("points"):
        notes.append(f"{file}: rallyPoints: {len(rally['points'])} rally points read but not flown (RTL goes to "
                     f"the launch point)")
    loaded = mission_from_items(items, file, data)
    return dataclasses.replace(loaded, format="qgc-plan", notes=loaded.notes + tuple(notes))


def _obj(value, file: str, key: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(file, key, "must be a JSON object")
    return value


def _numbers(value, file: str, key: str, n: int) -> list:
    if not isinstance(value, list) or len(value) < 2 or len(value) > n:
        raise ConfigError(file, key, f"must be a list of 2..{n} numbers")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise ConfigError(file, key, "must hold finite numbers")
        out.append(float(v))
    return out + [0.0] * (n - len(out))


def _plan_fence(fence, file: str) -> list:
    """The one inclusion polygon of a .plan's geoFence as (lat, lon) pairs ([] when it has none)."""
    if fence is None:
        return []
    fence = _obj(fence, file, "geoFence")
    circles = fence.get("circles") or []
    if circles:
        raise ConfigError(file, "geoFence.circles", "circular fences are not supported; draw the area as one "
                                                    "inclusion polygon")
    polygons = fence.get("polygons") or []
    if not isinstance(polygons, list):
        raise ConfigError(file, "geoFence.polygons", "must be a list")
    if len(polygons) > 1:
        raise ConfigError(file, "geoFence.polygons", f"{len(polygons)} polygons: one inclusion polygon is "
                                                     f"supported")
    if not polygons:
        return []
    poly = _obj(polygons[0], file, "geoFence.polygons[0]")
    if poly.get("inclusion", True) is not True:
        raise ConfigError(file, "geoFence.polygons[0].inclusion", "exclusion polygons are not supported; the "
                                                                  "fence is the area the boat must stay inside")
    points = poly.get("polygon")
    if not isinstance(points, list) or len(points) < 3:
        raise ConfigError(file, "geoFence.polygons[0].polygon", "must be a list of at least 3 [lat, lon] points")
    return [tuple(_numbers(p, file, f"geoFence.polygons[0].polygon[{i}]", 2)) for i, p in enumerate(points)]


MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION = 5001
MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION = 5002
MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION = 5003
MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION = 5004
MAV_CMD_NAV_RALLY_POINT = 5100
MAV_FRAME_GLOBAL, MAV_FRAME_GLOBAL_RELATIVE_ALT = 0, 3


def mission_to_items(mission: MissionConfig) -> List[MissionItem]:
    """The items a ground station downloads for `mission` (one loaded from YAML or anything else); read back
    by mission_from_items they fly the same path: item 0 home (the launch point, else the anchor, else the first
    waypoint), DO_CHANGE_SPEED with the cruise speed, a NAV_WAYPOINT per waypoint (a DO_CHANGE_SPEED before one
    whose leg speed differs), and a last RTL, or the last waypoint as LOITER_UNLIM, for on_complete."""
    from autopilot.guidance import mission_frame
    frame = mission_frame(mission)
    geo = []
    for p in mission.waypoints:
        if p.lat_deg is not None:
            geo.append((p.lat_deg, p.lon_deg))
        else:
            geo.append(frame.to_wgs84(p.north_m, p.east_m))
    if mission.start is not None:
        sp = mission.start.point
        home = (sp.lat_deg, sp.lon_deg) if sp.lat_deg is not None else frame.to_wgs84(sp.north_m, sp.east_m)
    elif mission.anchor is not None:
        home = (mission.anchor.lat_deg, mission.anchor.lon_deg)
    else:
        home = geo[0]
    rows = [(MAV_FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0.0, 0.0, 0.0, 0.0), home),
            (MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_DO_CHANGE_SPEED, (1.0, mission.cruise_speed_mps, -1.0, 0.0),
             (0.0, 0.0))]
    speed = None
    last = len(geo) - 1
    for i, (p, ll) in enumerate(zip(mission.waypoints, geo)):
        if p.speed_mps is not None and p.speed_mps != speed:
            rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_DO_CHANGE_SPEED, (1.0, p.speed_mps, -1.0, 0.0),
                         (0.0, 0.0)))
            speed = p.speed_mps
        if i == last and mission.on_complete == "loiter":
            rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_LOITER_UNLIM,
                         (0.0, 0.0, mission.loiter_radius_m, 0.0), ll))
        else:
            rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_WAYPOINT,
                         (0.0, mission.acceptance_radius_m, 0.0, 0.0), ll))
    if mission.on_complete == "rtl":
        rows.append((MAV_FRAME_GLOBAL_RELATIVE_ALT, MAV_CMD_NAV_RETURN_TO_LAUNCH, (0.0, 0.0, 0.0, 0.0), (0.0, 0.0)))
    return [MissionItem(k, fr, cmd, params, lat, lon, 0.0, int(k == 0), 1)
            for k, (fr, cmd, params, (lat, lon)) in enumerate(rows)]


def fence_from_items(items: Sequence[MissionItem], file: str) -> Tuple[PointConfig, ...]:
    """A geofence polygon from MAVLink fence items: one inclusion polygon (MAV_CMD 5001, PARAM1 the vertex
    count, global frame). Exclusion polygons, circles and a second polygon are refused naming the item."""
    items = list(items)
    what = {MAV_CMD_NAV_FENCE_POLYGON_VERTEX_EXCLUSION: "an exclusion polygon",
            MAV_CMD_NAV_FENCE_CIRCLE_INCLUSION: "an inclusion circle",
            MAV_CMD_NAV_FENCE_CIRCLE_EXCLUSION: "an exclusion circle"}
    for k, it in enumerate(items):
        where = f"item {it.seq}"
        if it.seq != k:
            raise ConfigError(file, where, f"item number {it.seq} out of sequence (expected {k})")
        if it.command in what:
            raise ConfigError(file, where, f"{what[it.command]} is not supported; this boat keeps to one inclusion "
                                           f"polygon (MAV_CMD 5001)")
        if it.command != MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION:
            raise ConfigError(file, where, f"MAV_CMD {it.command} is not a fence vertex; only inclusion polygon "
                                           f"vertices (5001) are taken")
        if int(it.params[0]) != len(items):
            raise ConfigError(file, where, f"vertex count {it.params[0]:g} does not match the {len(items)} vertices "
                                           f"sent (one inclusion polygon is supported)")
        if it.frame not in GLOBAL_FRAMES:
            raise ConfigError(file, where, f"frame {it.frame} is not a global (latitude/longitude) frame")
    if 0 < len(items) < 3:
        raise ConfigError(file, "item 0", f"a fence polygon needs at least 3 vertices, got {len(items)}")
    return tuple(build(PointConfig, {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}, file, f"item {it.seq}")
                 for it in items)


def fence_to_items(fence: Sequence[PointConfig], frame=None) -> List[MissionItem]:
    """MAVLink fence items for a geofence polygon (points in metres need `frame`, the mission's LocalFrame)."""
    out = []
    for k, p in enumerate(fence):
        lat, lon = (p.lat_deg, p.lon_deg) if p.lat_deg is not None else frame.to_wgs84(p.north_m, p.east_m)
        out.append(MissionItem(k, MAV_FRAME_GLOBAL, MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION,
                               (float(len(fence)), 0.0, 0.0, 0.0), lat, lon))
    return out


def rally_from_items(items: Sequence[MissionItem], file: str) -> Tuple[PointConfig, ...]:
    """Rally points (MAV_CMD 5100) from MAVLink rally items. They are kept so a ground station can download
    them again, but not flown: RTL goes home."""
    out = []
    for k, it in enumerate(items):
        where = f"item {it.seq}"
        if it.seq != k:
            raise ConfigError(file, where, f"item number {it.seq} out of sequence (expected {k})")
        if it.command != MAV_CMD_NAV_RALLY_POINT:
            raise ConfigError(file, where, f"MAV_CMD {it.command} is not a rally point (5100)")
        out.append(build(PointConfig, {"lat_deg": it.lat_deg, "lon_deg": it.lon_deg}, file, where))
    return tuple(out)


# ------------------------------------------------------------------------------------------- helpers
def _parse_item(file: str, line_no: int, line: str) -> MissionItem:
    f = line.split()
    if len(f) != 12:
        raise ConfigError(file, f"line {line_no}", f"expected 12 fields (SEQ CURRENT FRAME COMMAND P1..P4 LAT LON "
                                                   f"ALT AUTOCONTINUE), got {len(f)}")
    try:
        seq, _current, frame, command = (int(float(x)) for x in f[:4])
        nums = [float(x) for x in f[4:11]]
    except (ValueError, OverflowError):          # OverflowError: int(float("inf")) in SEQ/FRAME/COMMAND
        raise ConfigError(file, f"line {line_no}", "fields must be numbers") from None
    if any(v != v or v in (float("inf"), float("-inf")) for v in nums):
        raise ConfigError(file, f"line {line_no}", "fields must be finite numbers")
    try:
        autocontinue = int(float(f[11]))
    except (ValueError, OverflowError):
        autocontinue = 1                         # not used by this autopilot; kept for the round trip
    return MissionItem(seq, frame, command, tuple(nums[:4]), nums[4], nums[5], nums[6], int(_current),
                       autocontinue, line=line_no)


def _point(file: str, it: MissionItem, p: dict) -> PointConfig:
    return build(PointConfig, p, file, f"item {it.seq}")


def _waypoint(file: str, it: MissionItem, p: dict) -> PointConfig:
    where = f"item {it.seq}"
    if it.frame not in GLOBAL_FRAMES:
        raise ConfigError(file, where, f"frame {it.frame} is not a global (latitude/longitude) frame; "
                                       f"use one of {', '.join(map(str, GLOBAL_FRAMES))}")
    if it.lat_deg == 0.0 and it.lon_deg == 0.0:
        raise ConfigError(file, where, "waypoint at latitude 0, longitude 0 (no position set)")
    return _point(file, it, p)


def _read_text(path: Path) -> str:
    from autopilot.safe_read import read_user_text
    return read_user_text(path)
