"""Missions as MAVLink items: what a ground station downloads reads back to the same path, and fence items are
taken or refused by the rules a boat can keep."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autopilot.config import ConfigError, load_mission
from autopilot.mission_io import (MissionItem, fence_from_items, fence_to_items, mission_from_items,
                                  mission_to_items, parse_qgc_wpl, rally_from_items)

MISSIONS = Path(__file__).resolve().parents[1] / "config" / "missions"


@pytest.mark.parametrize("name", ["demo", "hexagon", "straight_line"])   # identify.yaml's identification
def test_a_downloaded_mission_reads_back_to_the_same_path(name):           # section has no MAVLink item
    m = load_mission(MISSIONS / f"{name}.yaml")
    defaults = {"acceptance_radius_m": m.acceptance_radius_m, "on_complete": m.on_complete}
    back = mission_from_items(mission_to_items(m), "download", defaults).mission
    assert len(back.waypoints) == len(m.waypoints)
    from autopilot.guidance import mission_frame
    frame = mission_frame(m)
    for a, b in zip(m.waypoints, back.waypoints):
        la, lo = (a.lat_deg, a.lon_deg) if a.lat_deg is not None else frame.to_wgs84(a.north_m, a.east_m)
        assert (b.lat_deg, b.lon_deg) == pytest.approx((la, lo), abs=1e-7)
        assert b.speed_mps == a.speed_mps
    assert (back.cruise_speed_mps, back.on_complete, back.loiter_radius_m) == \
        (m.cruise_speed_mps, m.on_complete, m.loiter_radius_m)


def test_a_waypoint_file_keeps_its_items_for_the_round_trip():
    text = ("QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t51.1\t17.06\t0\t1\n"
            "1\t0\t3\t16\t0\t2\t0\t0\t51.1001\t17.06\t5\t1\n")
    loaded = parse_qgc_wpl(text, "w.waypoints")
    assert loaded.format == "qgc-wpl-110" and len(loaded.items) == 2
    assert loaded.items[1].alt_m == 5.0 and loaded.items[0].current == 1


def _vertex(seq, n, lat, lon, command=5001):
    return MissionItem(seq, 0, command, (float(n), 0.0, 0.0, 0.0), lat, lon)


def test_fence_items_round_trip_and_the_unsupported_kinds_are_refused_naming_the_item():
    pts = [(51.1, 17.06), (51.101, 17.06), (51.101, 17.061), (51.1, 17.061)]
    items = [_vertex(k, 4, *p) for k, p in enumerate(pts)]
    fence = fence_from_items(items, "upload")
    assert [(p.lat_deg, p.lon_deg) for p in fence] == pts
    assert fence_to_items(fence) == [dataclasses.replace(it) for it in items]
    for bad, fragment in ((items[:3] + [_vertex(3, 4, 51.1, 17.061, command=5002)], "exclusion polygon"),
                          (items[:3] + [_vertex(3, 4, 51.1, 17.061, command=5003)], "inclusion circle"),
                          ([_vertex(k, 5, *p) for k, p in enumerate(pts)], "vertex count"),
                          (items[:2], "at least 3")):
        with pytest.raises(ConfigError) as e:
            fence_from_items([_vertex(k, len(bad), it.lat_deg, it.lon_deg, it.command) if "count" not in fragment
                              else it for k, it in enumerate(bad)], "upload")
        assert fragment in str(e.value) and "item" in e.value.key


def test_rally_points_are_kept_and_anything_else_in_their_place_is_refused():
    assert len(rally_from_items([MissionItem(0, 0, 5100, (0, 0, 0, 0), 51.1, 17.06)], "u")) == 1
    with pytest.raises(ConfigError, match="not a rally point"):
        rally_from_items([MissionItem(0, 0, 16, (0, 0, 0, 0), 51.1, 17.06)], "u")


DATA = Path(__file__).resolve().parent / "data"


def test_a_qgc_plan_is_flown_in_the_simulator_with_its_fence_in_force(tmp_path, capsys):
    from autopilot.cli import main
    from autopilot.mission_io import read_mission_file
    loaded = read_mission_file(DATA / "pond.plan")
    assert loaded.format == "qgc-plan" and len(loaded.mission.waypoints) == 2
    assert loaded.mission.on_complete == "rtl" and len(loaded.mission.geofence) == 4
    assert any("rally points read but not flown" in n for n in loaded.notes)
    report = tmp_path / "r.json"
    assert main(["sim", str(DATA / "pond.plan"), "--devices", "typed", "--gps-noise", "white",
                 "--report", str(report)]) == 0
    import json
    r = json.loads(report.read_text())
    assert r["mission_complete"] and r["failsafe_events"] == []
    # the fence is in force: a waypoint outside it is refused by `autopilot check`
    outside = (DATA / "pond.plan").read_text().replace("17.0600005", "17.0610000")
    bad = tmp_path / "outside.plan"
    bad.write_text(outside)
    assert main(["check", str(MISSIONS.parent / "vessels" / "foka.yaml"), "--mission", str(bad)]) != 0
    assert "outside the geofence" in capsys.readouterr().out


@pytest.mark.parametrize("edit, fragment", [
    (lambda p: p["mission"]["items"].append({"type": "ComplexItem", "complexItemType": "survey"}),
     "convert it to waypoints"),
    (lambda p: p["geoFence"]["polygons"][0].__setitem__("inclusion", False), "exclusion polygons"),
    (lambda p: p["geoFence"].__setitem__("circles", [{"circle": {"center": [51.11, 17.06], "radius": 20}}]),
     "circular fences"),
    (lambda p: p["mission"]["items"][0].__setitem__("params", [0, 0, "x", 0, 51.11, 17.06, 0]), "params[2]"),
    (lambda p: p["mission"]["items"][1].__setitem__("command", 22), "NAV_TAKEOFF"),
    (lambda p: p.__setitem__("fileType", "Mission"), "fileType"),
])
def test_what_a_plan_file_holds_that_this_boat_cannot_fly_is_refused_by_name(tmp_path, edit, fragment):
    import json

    from autopilot.mission_io import read_mission_file
    plan = json.loads((DATA / "pond.plan").read_text())
    edit(plan)
    path = tmp_path / "x.plan"
    path.write_text(json.dumps(plan))
    with pytest.raises(ConfigError) as e:
        read_mission_file(path)
    assert fragment in str(e.value)


def test_a_plan_that_is_not_json_is_refused_without_quoting_it(tmp_path):
    from autopilot.mission_io import read_mission_file
    path = tmp_path / "x.plan"
    path.write_text('{"fileType": "Plan", "mission": SECRET')
    with pytest.raises(ConfigError) as e:
        read_mission_file(path)
    assert "not valid JSON" in str(e.value) and "SECRET" not in str(e.value)
