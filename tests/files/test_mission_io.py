"""Missions from QGroundControl / Mission Planner waypoint files (QGC WPL 110) and from our YAML."""
from __future__ import annotations

import pytest

from autopilot.files.mission_files import QGC_DEFAULTS, load_mission_file, parse_qgc_wpl, read_mission_file
from autopilot.vocab.config import load_mission
from autopilot.vocab.schema import ConfigError
from tests.support.paths import REPO

HOME = "0\t1\t0\t16\t0\t0\t0\t0\t51.1099101\t17.0598572\t120.0\t1"


def wpl(*items: str, home: str = HOME) -> str:
    """A waypoint file as Mission Planner writes it: header, home as item 0, then the items."""
    return "\n".join(["QGC WPL 110", home, *items]) + "\n"


def wp(seq, lat, lon, frame=3, cmd=16, p1=0, p2=0, p3=0, p4=0):
    return f"{seq}\t0\t{frame}\t{cmd}\t{p1}\t{p2}\t{p3}\t{p4}\t{lat}\t{lon}\t10.0\t1"


def test_mission_planner_file_becomes_a_mission(tmp_path):
    f = tmp_path / "lake.waypoints"
    f.write_text(wpl(wp(1, 51.11, 17.06),
                     "2\t0\t3\t178\t1\t1.2\t-1\t0\t0\t0\t0\t1",          # DO_CHANGE_SPEED 1.2 m/s (ground)
                     wp(3, 51.11, 17.0611423),
                     wp(4, 51.1101798, 17.0611423)))
    m = load_mission_file(f)
    assert m.name == "lake" and m.source_file == str(f)
    assert [(p.lat_deg, p.lon_deg) for p in m.waypoints] == [(51.11, 17.06), (51.11, 17.0611423),
                                                           (51.1101798, 17.0611423)]
    assert (m.anchor.lat_deg, m.anchor.lon_deg) == (51.1099101, 17.0598572)     # home anchors the frame
    assert (m.start.point.lat_deg, m.start.point.lon_deg) == (51.1099101, 17.0598572)
    assert m.cruise_speed_mps == QGC_DEFAULTS["cruise_speed_mps"]
    assert [p.speed_mps for p in m.waypoints] == [None, 1.2, 1.2]                # legs after the speed change
    assert m.acceptance_radius_m == QGC_DEFAULTS["acceptance_radius_m"]
    assert m.on_complete == "loiter"


def test_speed_before_first_waypoint_sets_cruise_speed_and_defaults_fill_the_rest(tmp_path):
    text = wpl("1\t0\t3\t178\t0\t0.7\t-1\t0\t0\t0\t0\t1", wp(2, 51.11, 17.06))
    m = parse_qgc_wpl(text, "m.txt", defaults={"acceptance_radius_m": 5.0, "guidance": {"law": "los"}})
    assert m.mission.cruise_speed_mps == 0.7
    assert m.mission.acceptance_radius_m == 5.0 and m.mission.guidance.law == "los"
    assert m.waypoint_labels == ("item 2",)


def test_rtl_and_loiter_as_last_item_set_what_happens_at_the_end():
    m = parse_qgc_wpl(wpl(wp(1, 51.11, 17.06), "2\t0\t2\t20\t0\t0\t0\t0\t0\t0\t0\t1"), "m").mission
    assert m.on_complete == "rtl" and len(m.waypoints) == 1
    m = parse_qgc_wpl(wpl(wp(1, 51.11, 17.06), wp(2, 51.111, 17.061, cmd=17, p3=6)), "m").mission
    assert m.on_complete == "loiter" and m.loiter_radius_m == 6.0 and len(m.waypoints) == 2


def test_actions_are_skipped_with_a_note_and_unsupported_waypoint_params_noted():
    loaded = parse_qgc_wpl(wpl(wp(1, 51.11, 17.06, p1=5, p2=8),
                               "2\t0\t0\t206\t10\t0\t0\t0\t0\t0\t0\t1",          # DO_SET_CAM_TRIGG_DIST
                               wp(3, 51.111, 17.06)), "m.waypoints")
    assert len(loaded.mission.waypoints) == 2
    text = "\n".join(loaded.notes)
    assert "item 1: hold time 5 s ignored" in text
    assert "item 1: acceptance radius 8 m ignored" in text
    assert "item 2: DO_SET_CAM_TRIGG_DIST (206) skipped" in text


def test_notes_reach_the_callback(tmp_path):
    f = tmp_path / "m.waypoints"
    f.write_text(wpl(wp(1, 51.11, 17.06), "2\t0\t0\t183\t9\t1500\t0\t0\t0\t0\t0\t1"))
    seen = []
    load_mission_file(f, on_note=seen.append)
    assert len(seen) == 1 and "DO_SET_SERVO (183) skipped" in seen[0]


def test_unknown_home_leaves_the_frame_to_the_first_waypoint():
    zero_home = "0\t1\t0\t16\t0\t0\t0\t0\t0\t0\t0\t1"
    loaded = parse_qgc_wpl(wpl(wp(1, 51.11, 17.06), home=zero_home), "m")
    assert loaded.mission.anchor is None and loaded.mission.start is None
    assert any("home is 0, 0" in n for n in loaded.notes)


@pytest.mark.parametrize("items, key, reason", [
    ((wp(1, 51.11, 17.06, cmd=82),), "item 1", "NAV_SPLINE_WAYPOINT (82) is not flown"),
    ((wp(1, 51.11, 17.06), "2\t0\t0\t177\t1\t3\t0\t0\t0\t0\t0\t1"), "item 2", "DO_JUMP (177) is not flown"),
    (("1\t0\t2\t20\t0\t0\t0\t0\t0\t0\t0\t1", wp(2, 51.11, 17.06)), "item 1", "only accepted as the last item"),
    ((wp(1, 51.11, 17.06, frame=1),), "item 1", "frame 1 is not a global"),
    ((wp(1, 0, 0),), "item 1", "latitude 0, longitude 0"),
    ((wp(1, 91.0, 17.06),), "item 1.lat_deg", "must be at most 90"),
    (("1\t0\t0\t206\t10\t0\t0\t0\t0\t0\t0\t1",), "waypoints", "no NAV_WAYPOINT"),
    (("1\t0\t3\t16\t0\t0\t0\t51.11\t17.06\t10\t1",), "line 3", "expected 12 fields"),
    ((wp(2, 51.11, 17.06),), "line 3", "out of sequence"),
    (("1\t0\t3\t16\t0\t0\t0\t0\tnorth\t17.06\t10\t1",), "line 3", "must be numbers"),
    ((wp(1.5, 51.11, 17.06),), "line 3", "must be whole numbers"),        # was taken as item 1 and flown
    ((wp(1, 51.11, 17.06, cmd=16.7),), "line 3", "must be whole numbers"),
    ((wp("inf", 51.11, 17.06),), "line 3", "must be whole numbers"),
])
def test_bad_items_are_refused_naming_the_item(items, key, reason):
    with pytest.raises(ConfigError) as e:
        parse_qgc_wpl(wpl(*items), "bad.waypoints")
    assert e.value.key == key and reason in e.value.reason and e.value.file == "bad.waypoints"


def test_wrong_header_is_refused():
    with pytest.raises(ConfigError, match="expected the header 'QGC WPL 110'"):
        parse_qgc_wpl("QGC WPL 120\n" + HOME + "\n", "old.txt")


def test_yaml_missions_load_unchanged(tmp_path):
    path = REPO / "config" / "missions" / "demo.yaml"
    loaded = read_mission_file(path)
    assert loaded.format == "yaml" and loaded.mission == load_mission(path)
    assert loaded.waypoint_labels[0] == "waypoints[0]"


def test_unreadable_and_missing_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.waypoints"
    bad.write_bytes(b"QGC WPL 110\n\xff\xfe\n")
    with pytest.raises(ConfigError, match="cannot read file"):
        read_mission_file(bad)
    with pytest.raises(ConfigError, match="file not found"):
        read_mission_file(tmp_path / "nope.waypoints")
