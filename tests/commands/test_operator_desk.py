"""The one command layer: every path's commands get the same checks and answers."""
from __future__ import annotations

import math

import pytest

from autopilot.commands.desk import OperatorDesk
from autopilot.vehicle import Autopilot
from autopilot.vocab.config import load_mission, load_vessel
from tests.support.paths import REPO


@pytest.fixture
def desk(tmp_path):
    vessel = load_vessel("foka")
    ap = Autopilot(vessel, load_mission(REPO / "config/missions/demo.yaml"))
    said = []
    return OperatorDesk(ap, vessel, lambda: 1.0, mission_dirs=(REPO / "config" / "missions",),
                        on_event=lambda text, err: said.append((text, err))), said


def test_every_refusal_says_so_and_is_logged_with_its_origin(desk):
    d, said = desk
    for answer in (d.arm("alice"), d.set_mode("DRIFT", "alice"), d.text("jump", "alice"),
                   d.manual(math.nan, 0.0, "alice"), d.set_current_waypoint(99, "alice"),
                   d.load_mission_file("/etc/passwd", "alice"), d.set_param("HDG_ZETA", 1.0, "alice")):
        assert not answer.ok and "refused" in answer.text
    assert all(err and "(from alice)" in text for text, err in said)
    assert said[0][0].startswith("arming refused") and d.arm().reasons        # each failed check, apart


def test_commands_that_stop_the_boat_are_always_carried_out(desk):
    d, said = desk
    assert d.disarm("swimmer", "bob").ok and d.set_mode("hold", "bob").ok
    assert d.text("mode LOITER", "bob").ok and d.autopilot._pending_mode[0] == "LOITER"


def test_a_mission_outside_the_folders_or_failing_its_checks_leaves_the_old_one(desk, tmp_path):
    d, _ = desk
    old = d.autopilot.mission
    fast = tmp_path / "fast.yaml"
    fast.write_text((REPO / "config/missions/demo.yaml").read_text().replace("cruise_speed_mps: 0.8",
                                                                              "cruise_speed_mps: 9"))
    assert not d.load_mission_file(str(fast)).ok                                  # outside the folders
    d.mission_dirs = ()
    answer = d.load_mission_file(str(fast))
    assert not answer.ok and "faster than" in answer.text and d.autopilot.mission is old
    assert d.load_mission_file(str(REPO / "config/missions/hexagon.yaml")).ok
    assert d.autopilot.mission.name != old.name


def test_home_outside_the_fence_is_refused(desk, tmp_path):
    d, _ = desk
    from autopilot.safety.geofence import Geofence
    d.autopilot.fences = [Geofence([(0, 0), (0, 10), (10, 10), (10, 0)])]
    assert not d.set_home(50.0, 50.0).ok and d.autopilot.home_ned is None
    assert d.set_home(5.0, 5.0).ok and d.autopilot.home_ned == (5.0, 5.0)


def test_velocity_commands_are_refused_outside_velocity_and_when_malformed(desk):
    d, said = desk
    answer = d.text("velocity 1.0 10", "carol")
    assert not answer.ok and "not VELOCITY" in answer.text
    for bad in ("velocity 1.0", "velocity fast left", "velocity nan 0"):
        answer = d.text(bad, "carol")
        assert not answer.ok and "refused" in answer.text, bad
    d.autopilot.mode = d.autopilot.modes["VELOCITY"]
    assert d.text("velocity 1.0 -10", "carol").ok
    surge, rate = d.autopilot.velocity._cmd.values
    assert surge == 1.0 and rate == pytest.approx(math.radians(-10))


def test_two_stations_beating_at_once_are_each_logged_once_not_at_every_beat():
    vessel = load_vessel("foka")
    ap = Autopilot(vessel, load_mission(REPO / "config/missions/demo.yaml"))
    clock = {"t": 0.0}
    said = []
    d = OperatorDesk(ap, vessel, lambda: clock["t"], on_event=lambda text, err: said.append(text))
    for k in range(20):                        # a ground station and the web page, 1 Hz each, interleaved
        clock["t"] = 0.5 * k
        assert d.heartbeat("GCS 255" if k % 2 else "web 10.0.0.5").ok
    streams = [t for t in said if "heartbeat stream" in t]
    assert streams == ["operator heartbeat stream (from web 10.0.0.5)", "operator heartbeat stream (from GCS 255)"]
    clock["t"] = 30.0                          # the GCS went quiet and came back: a new stream, said again
    d.heartbeat("GCS 255")
    assert said[-1] == "operator heartbeat stream (from GCS 255)"


def test_a_speed_change_sets_the_cruise_of_the_mission_flown_and_a_bad_one_changes_nothing(desk):
    d, said = desk
    ap = d.autopilot
    waypoints = ap.mission.waypoints
    assert d.change_speed(1.2, "gcs").ok
    assert ap.mission.cruise_speed_mps == 1.2 and ap.mission.waypoints == waypoints
    assert ap.modes["RTL"].speed_mps == 1.2                      # RTL home flies it too
    for bad in (math.nan, 0.0, -1.0, "fast", ap.vessel.hull.max_speed_mps + 0.1):
        answer = d.change_speed(bad, "gcs")
        assert not answer.ok and "refused" in answer.text and "(from gcs)" in said[-1][0]
    assert ap.mission.cruise_speed_mps == 1.2
