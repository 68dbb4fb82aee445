"""A geofence over the vertex limit (MAX_FENCE_VERTICES) is refused on every path with one clear reason naming
where it came from and the limit: `autopilot check` on a YAML mission and on a QGroundControl .plan (quickly,
even for 25,000 vertices), the operator desk's mission commands (the path ROS's `mission PATH` and the web page
take), a mission built in memory, and MAVLink fence items announcing too many vertices."""
from __future__ import annotations

import dataclasses
import json
import math
import time

import pytest
import yaml

from autopilot.cli.main import main
from autopilot.commands.desk import OperatorDesk
from autopilot.files.mission_files import MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, MissionItem, fence_from_items
from autopilot.safety.geofence import MAX_FENCE_VERTICES
from autopilot.vocab.config import PointConfig, load_mission, load_vessel
from autopilot.vocab.schema import ConfigError
from tests.support.paths import DATA, REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"
POND = DATA / "mavlink_pond.yaml"
LIMIT_TEXT = f"vertices is more than the {MAX_FENCE_VERTICES} a geofence may have"


def ring(n: int, lat0: float, lon0: float, radius_m: float = 60.0):
    """n (lat, lon) vertices of a simple wiggly polygon about (lat0, lon0)."""
    out = []
    for k in range(n):
        th = 2 * math.pi * k / n
        r = radius_m * (1 + 0.2 * math.sin(9 * th))
        out.append((lat0 + r * math.cos(th) / 111195.0,
                    lon0 + r * math.sin(th) / (111195.0 * math.cos(math.radians(lat0)))))
    return out


def pond_yaml(tmp_path, vertices: int):
    data = yaml.safe_load(POND.read_text())
    start = data["start"]["point"]
    data["geofence"] = [{"lat_deg": a, "lon_deg": b} for a, b in ring(vertices, start["lat_deg"], start["lon_deg"])]
    path = tmp_path / f"fence-{vertices}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def pond_plan(tmp_path, vertices: int):
    mission = yaml.safe_load(POND.read_text())
    home = mission["start"]["point"]
    wp = mission["waypoints"][0]
    plan = {"fileType": "Plan", "version": 1, "groundStation": "QGroundControl",
            "mission": {"version": 2, "firmwareType": 3, "vehicleType": 11, "cruiseSpeed": 1.0,
                        "plannedHomePosition": [home["lat_deg"], home["lon_deg"], 0],
                        "items": [{"type": "SimpleItem", "command": 16, "frame": 3, "autoContinue": True,
                                   "params": [0, 0, 0, None, wp["lat_deg"], wp["lon_deg"], 0]}]},
            "geoFence": {"version": 2, "circles": [],
                         "polygons": [{"inclusion": True, "version": 1,
                                       "polygon": [[a, b] for a, b in ring(vertices, home["lat_deg"],
                                                                              home["lon_deg"])]}]},
            "rallyPoints": {"version": 2, "points": []}}
    path = tmp_path / f"fence-{vertices}.plan"
    path.write_text(json.dumps(plan))
    return path


def run_check(capsys, mission):
    code = main(["check", "--config", str(FOKA), "--mission", str(mission)])
    out = capsys.readouterr().out
    return code, [ln for ln in out.splitlines() if not ln.startswith(("note:", "check:"))]


@pytest.mark.slow
def test_check_refuses_a_plan_with_a_25000_vertex_fence_quickly_naming_the_polygon_and_the_limit(tmp_path, capsys):
    plan = pond_plan(tmp_path, 25_000)
    started = time.monotonic()
    code, problems = run_check(capsys, plan)
    took = time.monotonic() - started
    assert code != 0
    assert problems == [f"{plan}: geoFence.polygons[0].polygon: 25000 {LIMIT_TEXT} (MAX_FENCE_VERTICES); draw it "
                        f"with fewer points"]
    assert took < 15.0              # generous: the quadratic check took minutes; the limit answers before any work


@pytest.mark.slow
def test_check_takes_a_plan_with_a_fence_at_the_limit(tmp_path, capsys):
    code, problems = run_check(capsys, pond_plan(tmp_path, MAX_FENCE_VERTICES))
    assert (code, problems) == (0, [])


@pytest.mark.slow
def test_check_refuses_a_yaml_mission_with_a_fence_over_the_limit_naming_the_file(tmp_path, capsys):
    path = pond_yaml(tmp_path, MAX_FENCE_VERTICES + 1)
    code, problems = run_check(capsys, path)
    assert code != 0
    assert len(problems) == 1 and problems[0].startswith(f"{path}: geofence: {MAX_FENCE_VERTICES + 1} {LIMIT_TEXT}")


@pytest.fixture
def desk(tmp_path):
    from autopilot.vehicle import Autopilot
    vessel = load_vessel("foka")
    ap = Autopilot(vessel, load_mission(POND))
    events = []
    d = OperatorDesk(ap, vessel, lambda: 0.0, mission_dirs=(tmp_path.resolve(),),
                     on_event=lambda text, err: events.append(text))
    return d, events


@pytest.mark.slow
def test_the_desk_refuses_a_mission_command_whose_file_has_too_big_a_fence_and_keeps_the_mission(tmp_path, desk):
    d, events = desk
    for path in (pond_yaml(tmp_path, MAX_FENCE_VERTICES + 1), pond_plan(tmp_path, MAX_FENCE_VERTICES + 1)):
        for answer in (d.text(f"mission {path}", "ros"), d.load_mission_file(str(path), "ros"),
                       d.text(f"mission {path}", "ros", d.prepare_text(f"mission {path}"))):
            assert not answer.ok
            assert "refused" in answer.text and str(path) in answer.text and LIMIT_TEXT in answer.text
        assert d.autopilot.mission.name == "mavlink-pond"
    assert sum(LIMIT_TEXT in e for e in events) == 6


def test_the_desk_refuses_a_mission_made_in_memory_with_too_big_a_fence(desk):
    d, _ = desk
    m = d.autopilot.mission
    big = tuple(PointConfig(lat_deg=a, lon_deg=b) for a, b in ring(MAX_FENCE_VERTICES + 1, 51.1099101, 17.0598572))
    answer = d.load_mission(dataclasses.replace(m, geofence=big), "web")
    assert not answer.ok and f"geofence: {MAX_FENCE_VERTICES + 1} {LIMIT_TEXT}" in answer.text
    assert d.autopilot.mission is m
    ok = d.load_mission(dataclasses.replace(m, geofence=big[:MAX_FENCE_VERTICES]), "web")
    assert ok.ok, ok.text
    assert len(d.autopilot.fences[0].vertices) == MAX_FENCE_VERTICES


def test_mavlink_fence_items_announcing_too_many_vertices_are_refused_at_item_0():
    n = MAX_FENCE_VERTICES + 1
    items = [MissionItem(k, 0, MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, (float(n), 0.0, 0.0, 0.0), lat, lon, 0.0,
                         0, 1) for k, (lat, lon) in enumerate(ring(3, 51.11, 17.06))]
    with pytest.raises(ConfigError) as err:
        fence_from_items(items, "MAVLink fence upload")
    assert err.value.key == "item 0" and f"{n} {LIMIT_TEXT}" in err.value.reason


@pytest.mark.slow
def test_sim_refuses_a_plan_with_a_25000_vertex_fence_before_it_starts(tmp_path):
    import subprocess
    import sys
    plan = pond_plan(tmp_path, 25_000)
    r = subprocess.run([sys.executable, "-m", "autopilot.cli", "sim", str(plan), "--vessel", "foka", "--duration",
                        "5"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert f"{plan}: geoFence.polygons[0].polygon: 25000 {LIMIT_TEXT}" in r.stdout + r.stderr
