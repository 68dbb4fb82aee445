"""Missions as MAVLink items and QGroundControl .plan files: what a ground station downloads reads back to a
mission that flies the same, a .plan (mission, fence, rally points) flies in the simulator with its fence in
force, and whatever a boat cannot keep to is refused naming the item."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from autopilot.files.mission_files import (
    MissionItem,
    fence_from_items,
    fence_to_items,
    mission_from_items,
    mission_to_items,
    parse_qgc_plan,
    parse_qgc_wpl,
    rally_from_items,
    read_mission_file,
)
from autopilot.guidance.path_following import mission_frame
from autopilot.vocab.config import ConfigError, MissionConfig, load_mission
from autopilot.vocab.schema import build
from tests.support.paths import DATA, REPO

MISSIONS = REPO / "config" / "missions"
FOKA = REPO / "config" / "vessels" / "foka.yaml"

PLAN = DATA / "pond.plan"


# ------------------------------------------------------------------------------------------- round trips
def _lat_lon(p, frame):
    return (p.lat_deg, p.lon_deg) if p.lat_deg is not None else frame.to_wgs84(p.north_m, p.east_m)


def _assert_flies_the_same(m: MissionConfig, back: MissionConfig) -> None:
    """Same waypoints (to 1e-7 deg), leg speeds, cruise speed, acceptance radius and ending."""
    frame = mission_frame(m)
    assert len(back.waypoints) == len(m.waypoints)
    for a, b in zip(m.waypoints, back.waypoints):
        assert (b.lat_deg, b.lon_deg) == pytest.approx(_lat_lon(a, frame), abs=1e-7)
        # a leg without its own speed flies the cruise speed: compare what is flown
        assert (b.speed_mps or back.cruise_speed_mps) == pytest.approx(a.speed_mps or m.cruise_speed_mps)
    assert back.cruise_speed_mps == m.cruise_speed_mps            # also the speed home for RTL
    assert back.acceptance_radius_m == m.acceptance_radius_m
    assert back.on_complete == m.on_complete
    if m.on_complete == "loiter":                                  # only a final loiter carries its radius
        assert back.loiter_radius_m == m.loiter_radius_m


# identify.yaml's `identification:` section (open-loop excitation segments) and the trajectory/path missions'
# `trajectory:` section have no MAVLink mission item, so a ground station's copy of them can only be their
# waypoint: there is nothing to compare, and they are left out here.
WAYPOINT_PRESETS = [p for p in sorted(MISSIONS.glob("*.yaml"))
                    if load_mission(p).identification is None and load_mission(p).trajectory is None]


@pytest.mark.parametrize("path", WAYPOINT_PRESETS, ids=lambda p: p.stem)
def test_every_preset_mission_downloads_as_items_that_read_back_to_the_same_mission(path):
    m = load_mission(path)
    items = mission_to_items(m)
    assert [it.seq for it in items] == list(range(len(items)))
    assert (items[0].frame, items[0].command, items[0].current) == (0, 16, 1)
    assert (items[1].command, items[1].params) == (178, (1.0, m.cruise_speed_mps, -1.0, 0.0))
    loaded = mission_from_items(items, "download")                 # no defaults: the items alone
    assert loaded.notes == ()
    _assert_flies_the_same(m, loaded.mission)
    start = loaded.mission.start.point                               # home: the launch point
    assert (start.lat_deg, start.lon_deg) == pytest.approx(_lat_lon(m.start.point, mission_frame(m)), abs=1e-7)


def _mission(**kw) -> MissionConfig:
    data = {"name": "t", "cruise_speed_mps": 1.0, "acceptance_radius_m": 4.0}
    data.update(kw)
    return build(MissionConfig, data, "t.yaml")


def test_leg_speeds_metre_waypoints_and_each_ending_survive_the_round_trip():
    anchor = {"lat_deg": 51.11, "lon_deg": 17.06}
    wps = [{"north_m": 10.0, "east_m": 0.0, "speed_mps": 1.6},     # the first leg faster than cruise
           {"north_m": 10.0, "east_m": 25.0},                      # back to cruise
           {"north_m": 40.0, "east_m": 25.0, "speed_mps": 0.6},
           {"north_m": 40.0, "east_m": -5.0, "speed_mps": 0.6}]
    for ending in ("loiter", "hold", "rtl"):
        m = _mission(anchor=anchor, waypoints=wps, on_complete=ending, loiter_radius_m=6.0)
        items = mission_to_items(m)
        speeds = [it.params[1] for it in items if it.command == 178]
        assert speeds == [1.0, 1.6, 1.0, 0.6]                      # a change only where the leg speed changes
        assert items[-1].command == {"loiter": 17, "hold": 176, "rtl": 20}[ending]
        back = mission_from_items(items, "download").mission
        _assert_flies_the_same(m, back)
    # no start and no anchor: the first waypoint is home
    m = _mission(waypoints=[{"lat_deg": 51.11, "lon_deg": 17.06}, {"lat_deg": 51.1105, "lon_deg": 17.06}])
    items = mission_to_items(m)
    assert (items[0].lat_deg, items[0].lon_deg) == (51.11, 17.06)
    _assert_flies_the_same(m, mission_from_items(items, "download").mission)


def test_hold_at_the_end_is_a_last_do_set_mode_hold_and_nowhere_else():
    m = load_mission(MISSIONS / "straight_line.yaml")
    assert m.on_complete == "hold"
    last = mission_to_items(m)[-1]
    assert (last.command, last.params[:2]) == (176, (1.0, 4.0))     # DO_SET_MODE, custom mode: Rover HOLD
    home = MissionItem(0, 0, 16, (0, 0, 0, 0), 51.11, 17.06)
    wp = MissionItem(1, 3, 16, (0, 0, 0, 0), 51.1101, 17.06)
    early_hold = MissionItem(1, 2, 176, (1, 4, 0, 0), 0, 0)
    with pytest.raises(ConfigError) as e:
        mission_from_items([home, early_hold, dataclasses.replace(wp, seq=2)], "upload")
    assert e.value.key == "item 1" and "only accepted as the last item" in e.value.reason
    # without a last RTL, LOITER_UNLIM or HOLD item the ending comes from defaults, else loiter
    assert mission_from_items([home, wp], "upload").mission.on_complete == "loiter"
    assert mission_from_items([home, wp], "upload", {"on_complete": "hold"}).mission.on_complete == "hold"


def test_one_acceptance_radius_given_by_every_waypoint_is_the_missions():
    home = MissionItem(0, 0, 16, (0, 0, 0, 0), 51.11, 17.06)
    wps = [MissionItem(k, 3, 16, (0, 6.0, 0, 0), 51.11 + 1e-4 * k, 17.06) for k in (1, 2)]
    loaded = mission_from_items([home, *wps], "upload", {"acceptance_radius_m": 3.0})
    assert loaded.mission.acceptance_radius_m == 6.0 and loaded.notes == ()
    far = [dataclasses.replace(w, params=(0, 900.0, 0, 0)) for w in wps]
    with pytest.raises(ConfigError) as e:
        mission_from_items([home, *far], "upload")
    assert e.value.key == "item 1.acceptance_radius_m"             # the item that gave it, not a mission key


def test_a_waypoint_file_keeps_its_items_for_the_round_trip():
    text = ("QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t51.1\t17.06\t0\t1\n"
            "1\t0\t3\t16\t0\t2\t0\t0\t51.1001\t17.06\t5\t1\n")
    loaded = parse_qgc_wpl(text, "w.waypoints")
    assert loaded.format == "qgc-wpl-110" and len(loaded.items) == 2
    assert loaded.items[1].alt_m == 5.0 and loaded.items[0].current == 1


# ------------------------------------------------------------------------------------------- fence and rally
def _vertex(seq, n, lat, lon, command=5001, frame=0):
    return MissionItem(seq, frame, command, (float(n), 0.0, 0.0, 0.0), lat, lon)


SQUARE = [(51.1, 17.06), (51.101, 17.06), (51.101, 17.061), (51.1, 17.061)]


def test_fence_items_round_trip():
    items = [_vertex(k, 4, *p) for k, p in enumerate(SQUARE)]
    fence = fence_from_items(items, "upload")
    assert [(p.lat_deg, p.lon_deg) for p in fence] == SQUARE
    assert fence_to_items(fence, None) == items
    assert fence_from_items([], "upload") == ()


def _square(command_of_last=5001, count=4):
    return [_vertex(k, count, *p, command=command_of_last if k == 3 else 5001) for k, p in enumerate(SQUARE)]


@pytest.mark.parametrize("items, key, fragment", [
    (_square(5002), "item 3", "an exclusion polygon (MAV_CMD 5002) is not supported"),
    (_square(5003), "item 3", "an inclusion circle (MAV_CMD 5003) is not supported"),
    (_square(5004), "item 3", "an exclusion circle (MAV_CMD 5004) is not supported"),
    (_square() + [_vertex(4, 3, 51.2, 17.0), _vertex(5, 3, 51.21, 17.0), _vertex(6, 3, 51.2, 17.01)],
     "item 4", "a second polygon"),
    (_square(count=5), "item 0", "vertex count 5 (PARAM1) does not match the 4 vertices"),
    ([_vertex(k, 4 if k != 2 else 3, *p) for k, p in enumerate(SQUARE)], "item 2", "differs from item 0's 4"),
    ([_vertex(k, math.nan, *p) for k, p in enumerate(SQUARE)], "item 0", "vertex count) must be a whole number"),
    ([_vertex(k, 2, *p) for k, p in enumerate(SQUARE[:2])], "item 0", "at least 3 vertices"),
    ([_vertex(k, 4, *p, frame=1 if k == 1 else 0) for k, p in enumerate(SQUARE)], "item 1", "not a global"),
    ([_vertex(k, 4, *p, command=16 if k == 0 else 5001) for k, p in enumerate(SQUARE)], "item 0",
     "not a fence vertex"),
])
def test_fence_items_a_boat_cannot_keep_to_are_refused_naming_the_item(items, key, fragment):
    with pytest.raises(ConfigError) as e:
        fence_from_items(items, "upload")
    assert e.value.key == key and fragment in e.value.reason
    assert "one inclusion polygon" in e.value.reason or "vert" in e.value.reason or "frame" in e.value.reason


def test_rally_points_are_kept_and_anything_else_in_their_place_is_refused():
    assert len(rally_from_items([MissionItem(0, 0, 5100, (0, 0, 0, 0), 51.1, 17.06)], "u")) == 1
    with pytest.raises(ConfigError, match="not a rally point") as e:
        rally_from_items([MissionItem(0, 0, 5100, (0, 0, 0, 0), 51.1, 17.06),
                          MissionItem(1, 0, 16, (0, 0, 0, 0), 51.1, 17.06)], "u")
    assert e.value.key == "item 1"


# ------------------------------------------------------------------------------------------- .plan files
def test_a_qgc_plan_is_read_with_its_fence_and_rally_points():
    loaded = read_mission_file(PLAN)
    m = loaded.mission
    assert loaded.format == "qgc-plan" and m.name == "pond"
    assert loaded.waypoint_labels == ("mission.items[0]", "mission.items[1]")
    assert [(p.lat_deg, p.lon_deg) for p in m.waypoints] == [(51.1100180, 17.0598572), (51.1100180, 17.0600005)]
    assert (m.start.point.lat_deg, m.start.point.lon_deg) == (51.1099101, 17.0598572)   # plannedHomePosition
    assert m.on_complete == "rtl" and m.cruise_speed_mps == 1.0                         # a boat's cruiseSpeed
    assert len(m.geofence) == 4 and [(p.lat_deg, p.lon_deg) for p in loaded.rally] == [(51.10995, 17.0599)]
    assert any("rally points read but not flown" in n for n in loaded.notes)
    assert [it.command for it in loaded.items] == [16, 16, 16, 20]
    # a plan's fence replaces a default one
    other = [{"lat_deg": 51.0, "lon_deg": 17.0}, {"lat_deg": 51.2, "lon_deg": 17.0}, {"lat_deg": 51.2, "lon_deg": 17.2}]
    assert read_mission_file(PLAN, {"geofence": other}).mission.geofence == m.geofence


@pytest.mark.slow
def test_a_qgc_plan_flies_in_the_simulator_with_its_fence_in_force(tmp_path, capsys):
    from autopilot.cli.main import main
    report = tmp_path / "r.json"
    assert main(["sim", str(PLAN), "--devices", "typed", "--gps-noise", "white", "--report", str(report)]) == 0
    r = json.loads(report.read_text())
    assert r["mission_complete"] and r["waypoints_reached"] == r["waypoints_total"] == 2
    assert r["failsafe_events"] == []
    assert "rally points read but not flown" in capsys.readouterr().err   # the plan's notes, on stderr
    assert main(["check", str(FOKA), "--mission", str(PLAN)]) == 0
    assert "inside a 4-point geofence, then rtl" in capsys.readouterr().out
    # the fence is in force: the same plan with its last waypoint moved outside it is refused
    plan = json.loads(PLAN.read_text())
    plan["mission"]["items"][1]["params"][5] = 17.0610000                 # ~55 m east of the fence's edge
    bad = tmp_path / "outside.plan"
    bad.write_text(json.dumps(plan))
    assert main(["check", str(FOKA), "--mission", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "mission.items[1]: outside the geofence" in out


def _edited(tmp_path, edit) -> Path:
    plan = json.loads(PLAN.read_text())
    edit(plan)
    path = tmp_path / "x.plan"
    path.write_text(json.dumps(plan))
    return path


def _circle(inclusion):
    return {"circle": {"center": [51.11, 17.06], "radius": 20}, "inclusion": inclusion, "version": 1}


def _polygon(inclusion=True):
    return {"inclusion": inclusion, "version": 1,
            "polygon": [[51.1097, 17.0595], [51.1103, 17.0595], [51.1103, 17.0603], [51.1097, 17.0603]]}


@pytest.mark.parametrize("edit, key, fragment", [
    # what a boat cannot fly or keep to
    (lambda p: p["mission"]["items"].insert(1, {"type": "ComplexItem", "complexItemType": "survey"}),
     "mission.items[1]", "a survey (a QGroundControl ComplexItem) is a pattern this autopilot does not fly; "
                         "convert it to waypoints in QGC"),
    (lambda p: p["mission"]["items"].append({"type": "ComplexItem", "complexItemType": "CorridorScan"}),
     "mission.items[3]", "a corridor scan"),
    (lambda p: p["mission"]["items"][1].__setitem__("command", 22), "mission.items[1]",
     "NAV_TAKEOFF (22) is not flown"),
    (lambda p: p["mission"]["items"][0].__setitem__("frame", 1), "mission.items[0]", "frame 1 is not a global"),
    (lambda p: p["geoFence"]["polygons"][0].__setitem__("inclusion", False), "geoFence.polygons[0]",
     "exclusion polygons are not supported"),
    (lambda p: p["geoFence"]["polygons"].append(_polygon(False)), "geoFence.polygons[1]",
     "exclusion polygons are not supported"),
    (lambda p: p["geoFence"]["polygons"].append(_polygon()), "geoFence.polygons[1]",
     "one inclusion polygon is supported"),
    (lambda p: p["geoFence"].__setitem__("circles", [_circle(True)]), "geoFence.circles[0]",
     "an inclusion circle: circular fences are not supported"),
    (lambda p: p["geoFence"].__setitem__("circles", [_circle(False)]), "geoFence.circles[0]",
     "an exclusion circle: circular fences are not supported"),
    (lambda p: p["geoFence"]["polygons"][0].__setitem__("polygon", [[51.1, 17.0], [51.2, 17.0]]),
     "geoFence.polygons[0].polygon", "at least 3"),
    # wrong types
    (lambda p: p["mission"]["items"][0].__setitem__("params", [0, 0, "x", 0, 51.11, 17.06, 0]),
     "mission.items[0].params[2]", "must be a number or null"),
    (lambda p: p["mission"]["items"][0].__setitem__("params", [0, 0, 0, 51.11, 17.06, 0]),
     "mission.items[0].params", "a list of 7 numbers"),
    (lambda p: p["mission"]["items"][1].__setitem__("command", "16"), "mission.items[1].command", "MAV_CMD number"),
    (lambda p: p["mission"]["items"][1].__setitem__("type", "Item"), "mission.items[1].type", "SimpleItem"),
    (lambda p: p["mission"]["items"].__setitem__(0, [16]), "mission.items[0]", "must be a JSON object"),
    (lambda p: p["mission"].__setitem__("items", {}), "mission.items", "must be a list"),
    (lambda p: p["mission"].__setitem__("plannedHomePosition", "here"), "mission.plannedHomePosition", "numbers"),
    (lambda p: p["mission"].__setitem__("cruiseSpeed", "fast"), "mission.cruiseSpeed", "must be a number"),
    (lambda p: p["mission"].__setitem__("cruiseSpeed", 35), "mission.cruiseSpeed", "not a boat's cruise speed"),
    (lambda p: p["geoFence"]["polygons"][0]["polygon"].__setitem__(2, [51.1, "e"]),
     "geoFence.polygons[0].polygon[2]", "must hold numbers"),
    (lambda p: p["geoFence"]["polygons"][0]["polygon"].__setitem__(2, [95.0, 17.0]),
     "geoFence.polygons[0].polygon[2].lat_deg", "must be at most 90"),
    (lambda p: p["geoFence"].__setitem__("polygons", {"inclusion": True}), "geoFence.polygons", "must be a list"),
    (lambda p: p["rallyPoints"].__setitem__("points", [[51.1, 17.06, 0], [51.1]]), "rallyPoints.points[1]",
     "2..3 numbers"),
    (lambda p: p["rallyPoints"].__setitem__("points", [[51.1, 190.0, 0]]), "rallyPoints.points[0].lon_deg",
     "must be at most 180"),
    (lambda p: p.__setitem__("fileType", "Mission"), "fileType", 'must be "Plan"'),
    (lambda p: p.__setitem__("mission", []), "mission", "must be a JSON object"),
])
def test_what_a_plan_holds_that_this_boat_cannot_fly_is_refused_naming_where(tmp_path, edit, key, fragment):
    with pytest.raises(ConfigError) as e:
        read_mission_file(_edited(tmp_path, edit))
    assert e.value.key == key and fragment in e.value.reason and e.value.file.endswith("x.plan")


@pytest.mark.parametrize("text, key, fragment", [
    ('{"fileType": "Plan", "mission": SECRET', "line 1", "not valid JSON"),
    ('{"fileType": "Plan",\n "mission": {"items": [SECRET]}}', "line 2", "not valid JSON"),
    ('{"fileType": "Plan", "fileType": "Plan", "mission": {}}', "", "a key 'fileType' given twice"),
    ('{"fileType": "Plan", "SECRET": 1, "SECRET": 2}', "", "a key given twice"),
    ('{"fileType": "Plan", "mission": {"cruiseSpeed": Infinity}}', "", "Infinity"),
    ('{"fileType": "Plan", "mission": {"vehicleType": 1' + "0" * 400 + '}}', "", "more than 30 digits"),
    ('{"fileType": "Plan", "mission": ' + "[" * 5000 + "]" * 5000 + "}", "", "nested too deeply"),
])
def test_a_plan_that_is_not_valid_json_is_refused_without_quoting_it(tmp_path, text, key, fragment):
    path = tmp_path / "x.plan"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_mission_file(path)
    assert e.value.key == key and fragment in e.value.reason and "SECRET" not in str(e.value)


def test_plans_are_recognised_by_content_and_other_json_is_read_as_mission_yaml(tmp_path):
    renamed = tmp_path / "lake.txt"                                # a .plan under any name
    renamed.write_text(PLAN.read_text())
    assert read_mission_file(renamed).format == "qgc-plan"
    as_json = tmp_path / "m.json"                                  # YAML's JSON form of one of our missions
    as_json.write_text(json.dumps({"name": "j", "waypoints": [{"lat_deg": 51.11, "lon_deg": 17.06}],
                                   "cruise_speed_mps": 1.0, "acceptance_radius_m": 3.0}))
    assert read_mission_file(as_json).format == "yaml"


def test_a_plan_made_for_another_vehicle_keeps_the_boats_cruise_speed_and_says_so():
    plan = json.loads(PLAN.read_text())
    plan["mission"].update(vehicleType=1, cruiseSpeed=15)          # a fixed-wing plan: 15 m/s is its speed
    loaded = parse_qgc_plan(json.dumps(plan), "fw.plan")
    assert loaded.mission.cruise_speed_mps == 1.0                  # QGC_DEFAULTS
    assert any("mission.cruiseSpeed: ignored" in n for n in loaded.notes)
    # null params (QGC's unset) and a DO_SET_CAM_TRIGG_DIST: read, the action skipped with a note naming it
    plan["mission"]["items"].insert(1, {"type": "SimpleItem", "command": 206, "frame": 2, "autoContinue": True,
                                        "params": [10, 0, 1, None, None, None, None]})
    loaded = parse_qgc_plan(json.dumps(plan), "fw.plan")
    assert any("mission.items[1]: DO_SET_CAM_TRIGG_DIST (206) skipped" in n for n in loaded.notes)


def test_an_upload_keeps_a_fence_given_in_metres_where_it_was_on_the_water(tmp_path):
    from autopilot.guidance.path_following import mission_frame
    from autopilot.mavlink.missions import MISSION, MissionStore, Upload
    path = tmp_path / "fenced.yaml"
    path.write_text("name: fenced\nanchor: {lat_deg: 51.11, lon_deg: 17.06}\nwaypoints: [{north_m: 10, east_m: 0}]\n"
                    "cruise_speed_mps: 0.8\nacceptance_radius_m: 2.0\n"
                    "geofence: [{north_m: -20, east_m: -30}, {north_m: 40, east_m: -30}, {north_m: 40, east_m: 30}]\n")
    current = load_mission(path)
    home = (51.1101, 17.0602)                      # the upload's home: a different anchor
    up = Upload((0, 255, 190), MISSION, 2, [MissionItem(0, 0, 16, (0, 0, 0, 0), *home),
                                              MissionItem(1, 3, 16, (0, 2, 0, 0), 51.1100899, 17.06)])
    mission, _ = MissionStore().build(up, current, "upload")
    frame = mission_frame(current)
    for p, q in zip(current.geofence, mission.geofence):
        assert (q.lat_deg, q.lon_deg) == pytest.approx(frame.to_wgs84(p.north_m, p.east_m), abs=1e-9)


# ------------------------------------------------------------------------------------------- the MAVLink store
def test_an_upload_retuned_by_a_parameter_still_downloads_and_numbers_as_uploaded():
    """A parameter (WP_RADIUS, CRUISE_SPEED) rebuilds the mission flown; the ground station's copy stays the
    upload, item for item, and MISSION_CURRENT keeps its numbering. Another mission is converted afresh."""
    from autopilot.mavlink.missions import MISSION, MissionStore, Upload
    from autopilot.vocab.config import load_mission
    current = load_mission(DATA / "mavlink_pond.yaml")
    items = [MissionItem(0, 0, 16, (0, 0, 0, 0), 51.1099101, 17.0598572),
             MissionItem(1, 2, 178, (1, 1.5, -1, 0), 0.0, 0.0),
             MissionItem(2, 6, 16, (0, 0, 0, 0), 51.1101, 17.0598572),
             MissionItem(3, 6, 16, (0, 0, 0, 0), 51.1101, 17.0601)]
    store = MissionStore()
    up = Upload((0, 255, 190), MISSION, len(items), list(items))
    mission, _ = store.build(up, current, "test upload")
    store.keep(MISSION, mission, items)
    retuned = dataclasses.replace(mission, acceptance_radius_m=3.0, cruise_speed_mps=1.2)
    frame = mission_frame(mission)
    assert store.items_for(MISSION, retuned, frame) == items
    assert store.waypoint_item_seqs(retuned) == [2, 3]
    moved = dataclasses.replace(mission, waypoints=mission.waypoints[:1])
    assert store.items_for(MISSION, moved, frame) != items
    assert len(store.waypoint_item_seqs(moved)) == 1
