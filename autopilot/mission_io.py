"""Load a mission from our YAML or from a QGroundControl / Mission Planner waypoint file (`QGC WPL 110`).

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
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Tuple

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
class LoadedMission:
    """A mission with what the loader has to say about it.

    `waypoint_labels[i]` names waypoint i the way its file does ("waypoints[2]" in YAML, "item 5" in a
    waypoint file), so messages point at the line a person has to edit. `notes` are the items skipped.
    """

    mission: MissionConfig
    format: str                               # "yaml" or "qgc-wpl-110"
    waypoint_labels: Tuple[str, ...]
    notes: Tuple[str, ...] = ()


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
    return LoadedMission(mission, "qgc-wpl-110", tuple(labels), tuple(notes))


# ------------------------------------------------------------------------------------------- helpers
@dataclass(frozen=True)
class _Item:
    line: int
    seq: int
    frame: int
    command: int
    params: Tuple[float, float, float, float]
    lat_deg: float
    lon_deg: float


def _parse_item(file: str, line_no: int, line: str) -> _Item:
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
    return _Item(line_no, seq, frame, command, tuple(nums[:4]), nums[4], nums[5])


def _point(file: str, it: _Item, p: dict) -> PointConfig:
    return build(PointConfig, p, file, f"item {it.seq}")


def _waypoint(file: str, it: _Item, p: dict) -> PointConfig:
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
