"""The MAVLink mission protocol on top of autopilot/files/mission_files.py: uploads and downloads of missions, fences
and
rally points.

Upload (a ground station sends MISSION_COUNT, we ask for each item with MISSION_REQUEST_INT, it answers with
MISSION_ITEM_INT or MISSION_ITEM): the items become a mission by the same rules as a QGC WPL 110 file
(mission_io.mission_from_items), then pass the same checks as a file (OperatorDesk.load_mission: speeds, fence,
leg lengths). Refused uploads get a MISSION_ACK error and a STATUSTEXT naming the item; the mission the boat
flies stays. Accepted ones are written to `upload_dir` as a QGC WPL 110 file (the run log directory).

Download (MISSION_REQUEST_LIST, then MISSION_REQUEST_INT or MISSION_REQUEST per item): the items exactly as
uploaded while that mission is loaded, so an upload downloads identical; a mission loaded any other way (a
file at start, `mission PATH`) is converted by mission_io.mission_to_items. A parameter set (PARAM_SET of a
mission tunable: CRUISE_SPEED, WP_RADIUS, ...) or a speed change leaves the upload flown: it still downloads as
its items, numbered as uploaded (MISSION_CURRENT), as on ArduPilot, where parameters never rewrite the mission.

A fence upload replaces the mission's geofence (one inclusion polygon); rally points are kept for download but
not flown (RTL goes home). Clearing the mission (MISSION_CLEAR_ALL, a count of 0, or an upload of home alone)
leaves the boat nothing to fly, as on ArduPilot: AUTO is refused, a boat in AUTO goes to HOLD, and a download
is home alone (item 0, count 1). No pymavlink here: the server encodes the messages.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from autopilot.files import mission_files as mission_io
from autopilot.files.tunables import TUNABLES
from autopilot.safety.geofence import MAX_FENCE_VERTICES, fence_size_problem
from autopilot.vocab.config import MissionConfig
from autopilot.vocab.schema import ConfigError

MISSION, FENCE, RALLY = 0, 1, 2                  # MAV_MISSION_TYPE
TYPE_NAMES = {MISSION: "mission", FENCE: "fence", RALLY: "rally points"}
MAX_ITEMS = 500                                  # a mission a small boat flies; more is refused (NO_SPACE)
MAX_FENCE_ITEMS = MAX_FENCE_VERTICES             # a fence: one item per vertex (autopilot/safety/geofence.py)
REQUEST_TIMEOUT_S = 1.0                          # re-ask for an item after this long
REQUEST_RETRIES = 5                              # then give the upload up

# MAV_MISSION_RESULT
ACCEPTED, ERROR, UNSUPPORTED_FRAME, UNSUPPORTED, NO_SPACE, INVALID, DENIED, CANCELLED = 0, 1, 2, 3, 4, 5, 14, 15
INVALID_SEQUENCE = 13
# the mission's fields a parameter (autopilot/files/tunables.py) or a speed change sets on the mission flown
RETUNED_FIELDS = tuple(sorted({t.path.split(".")[1] for t in TUNABLES if t.path.startswith("mission.")}
                              | {"cruise_speed_mps"}))


def same_upload(kept: Optional[MissionConfig], mission: Optional[MissionConfig]) -> bool:
    """Whether `mission` is the mission `kept` was built as, or it with only RETUNED_FIELDS changed."""
    if kept is mission:
        return True
    if kept is None or mission is None:
        return False
    return dataclasses.replace(mission, **{f: getattr(kept, f) for f in RETUNED_FIELDS}) == kept


def count_problem(mission_type: int, count: int) -> Optional[str]:
    """Why an upload announcing `count` items (MISSION_COUNT) is refused before any item is asked for (None:
    it is not): a mission or rally points over MAX_ITEMS, a fence over MAX_FENCE_ITEMS (its vertex limit)."""
    what = TYPE_NAMES[mission_type]
    if mission_type == FENCE:
        too_many = fence_size_problem(count, MAX_FENCE_ITEMS)
        return None if too_many is None else f"refused: fence upload of {count} items: {too_many}"
    if count > MAX_ITEMS:
        return f"refused: {what} of {count} items (at most {MAX_ITEMS})"
    return None


@dataclass
class Upload:
    """An upload in progress from one ground station."""

    partner: tuple                    # (link index, system id, component id)
    mission_type: int
    count: int
    items: list = field(default_factory=list)    # mission_io.MissionItem
    asked_wall_s: float = 0.0
    retries: int = 0

    @property
    def next_seq(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class UploadResult:
    result: int                       # MAV_MISSION_RESULT
    text: str                         # for the STATUSTEXT and the log


class MissionStore:
    """What each mission type downloads as; what an upload turns into."""

    def __init__(self, upload_dir: Optional[Path] = None):
        self.upload_dir = upload_dir
        # mission type -> (the MissionConfig it produced, its items)
        self._uploaded: Dict[int, Tuple[Optional[MissionConfig], Tuple[mission_io.MissionItem, ...]]] = {}
        self._written = 0
        self.version = 0              # counts accepted uploads (a download cache keys on it)
        self.rally: tuple = ()
        self.cleared_home: Optional[mission_io.MissionItem] = None     # item 0 a cleared mission downloads as

    def items_for(self, mission_type: int, mission: MissionConfig, frame, cleared: bool = False) -> list:
        """The items a ground station downloads for the mission the boat flies now (`cleared`: home alone)."""
        if mission_type == RALLY:
            return list(self.rally)
        if mission_type == MISSION and cleared:
            home = self.cleared_home or self.items_for(MISSION, mission, frame)[0]
            return [dataclasses.replace(home, seq=0, current=0)]
        kept = self._uploaded.get(mission_type)
        if kept is not None and same_upload(kept[0], mission):
            return list(kept[1])
        if mission_type == FENCE:
            return mission_io.fence_to_items(mission.geofence, frame)
        return mission_io.mission_to_items(mission)

    def clear(self, mission: MissionConfig, frame, home: Optional[mission_io.MissionItem] = None) -> None:
        """The mission was cleared: downloads are `home` (else the mission's item 0) alone from now on."""
        self.cleared_home = home or self.items_for(MISSION, mission, frame)[0]
        self.version += 1
        self._write(MISSION, [self.cleared_home])

    def waypoint_item_seqs(self, mission: MissionConfig, cleared: bool = False) -> List[int]:
        """Item seq of each waypoint of `mission` as a ground station numbers them (MISSION_CURRENT)."""
        if cleared:
            return []
        kept = self._uploaded.get(MISSION)
        items = kept[1] if kept is not None and same_upload(kept[0], mission) else mission_io.mission_to_items(mission)
        return [it.seq for it in items[1:]
                if it.command == 16 or (it.command == 17 and (it.lat_deg != 0.0 or it.lon_deg != 0.0))]

    def build(self, up: Upload, current: MissionConfig, source: str):
        """The mission an upload asks for: (MissionConfig, labels) or UploadResult (refused). Fields items
        cannot carry (acceptance radius, guidance law, geofence, and what to do at the end unless a last RTL
        or LOITER_UNLIM item says) stay the current mission's."""
        items = up.items
        try:
            if up.mission_type == MISSION:
                defaults = {k: v for k, v in dataclasses.asdict(current).items()
                            if k in ("acceptance_radius_m", "cruise_speed_mps", "guidance", "geofence",
                                     "loiter_radius_m", "on_complete")}
                defaults["name"] = "mavlink-upload"
                # the upload's home becomes its anchor: a fence given in metres keeps its place on the water
                from autopilot.guidance.path_following import mission_frame
                frame = mission_frame(current)
                points = []
                for p in current.geofence:
                    if p.lat_deg is not None:
                        points.append({"lat_deg": p.lat_deg, "lon_deg": p.lon_deg})
                    else:
                        assert p.north_m is not None and p.east_m is not None   # PointConfig.validate: local point
                        points.append(dict(zip(("lat_deg", "lon_deg"), frame.to_wgs84(p.north_m, p.east_m))))
                defaults["geofence"] = points
                loaded = mission_io.mission_from_items(items, source, defaults)
                return loaded.mission, tuple(loaded.waypoint_labels)
            if up.mission_type == FENCE:
                fence = mission_io.fence_from_items(items, source)
                return dataclasses.replace(current, geofence=tuple(fence)), ()
            mission_io.rally_from_items(items, source)
            return None, ()
        except ConfigError as e:
            reason = e.reason
            code = UNSUPPORTED_FRAME if "frame" in reason else UNSUPPORTED if "not flown" in reason \
                or "supported" in reason else INVALID
            return UploadResult(code, f"{TYPE_NAMES[up.mission_type]} refused: {e.key}: {reason}")

    def keep(self, mission_type: int, mission: Optional[MissionConfig], items: list) -> None:
        """Remember an accepted upload (downloaded identically while `mission` is flown) and write it out."""
        self.version += 1
        if mission_type == RALLY:
            self.rally = tuple(items)
        else:
            self._uploaded[mission_type] = (mission, tuple(items))
            kept = self._uploaded.get(MISSION)
            if mission_type == FENCE and kept is not None:
                assert kept[0] is not None      # a mission upload is kept with the MissionConfig it produced
                same = mission is not None and same_upload(dataclasses.replace(kept[0], geofence=mission.geofence),
                                                           mission)
                if same:
                    self._uploaded[MISSION] = (mission, kept[1])     # the same mission items; only the fence changed
                else:
                    del self._uploaded[MISSION]                      # built on another mission: download afresh
        self._write(mission_type, items)

    def _write(self, mission_type: int, items: list) -> Optional[Path]:
        if self.upload_dir is None:
            return None
        try:
            self.upload_dir.mkdir(parents=True, exist_ok=True)
            self._written += 1
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self.upload_dir / (f"upload-{stamp}-{self._written:03d}-{TYPE_NAMES[mission_type].split()[0]}"
                                      f".waypoints")
            path.write_text(items_to_wpl(items))
            return path
        except OSError:
            return None                         # a full disk must not refuse a mission; the log says so


def items_to_wpl(items) -> str:
    """QGC WPL 110 text for `items` (what `autopilot sim`, `check` and `run` read back)."""
    lines = ["QGC WPL 110"]
    for it in items:
        p1, p2, p3, p4 = it.params
        lines.append(f"{it.seq}\t{it.current}\t{it.frame}\t{it.command}\t{p1:.8g}\t{p2:.8g}\t{p3:.8g}\t{p4:.8g}\t"
                     f"{it.lat_deg:.8f}\t{it.lon_deg:.8f}\t{it.alt_m:.6g}\t{it.autocontinue}")
    return "\n".join(lines) + "\n"
