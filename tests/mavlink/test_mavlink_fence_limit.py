"""Fence uploads over MAVLink against `autopilot sim --realtime` in its own process: one announcing more vertices
than the limit is refused at its MISSION_COUNT (NO_SPACE, and a STATUSTEXT naming the limit) before a single
item is asked for; a large one under the limit (more items than a mission may have) is taken and downloaded,
checked off the control loop so the loop misses no deadlines worth its overrun failsafe."""
from __future__ import annotations

import math

import pytest

from autopilot.safety.geofence import MAX_FENCE_VERTICES
from tests.support.mavlink_gcs import Gcs, M, SimBoat, free_udp_port

HOME = (51.1099101, 17.0598572)


@pytest.fixture
def boat(tmp_path):
    port = free_udp_port()
    gcs = Gcs(port)
    sim = SimBoat(tmp_path, port)
    yield sim, gcs
    gcs.close()
    sim.stop()


def fence_items(n: int) -> list:
    lat0, lon0 = HOME
    out = []
    for k in range(n):
        th = 2 * math.pi * k / n
        r = 60.0 * (1 + 0.2 * math.sin(9 * th))
        out.append((0, M.MAV_CMD_NAV_FENCE_POLYGON_VERTEX_INCLUSION, n, 0, 0, 0, lat0 + r * math.cos(th) / 111195.0,
                    lon0 + r * math.sin(th) / (111195.0 * math.cos(math.radians(lat0))), 0))
    return out


@pytest.mark.slow
def test_a_fence_over_the_limit_is_refused_at_its_count_before_any_item_is_asked_for(boat):
    sim, gcs = boat
    gcs.connect()
    n = MAX_FENCE_VERTICES + 1
    tgt = (gcs.conn.target_system, gcs.conn.target_component)
    gcs.mav.mission_count_send(*tgt, n, M.MAV_MISSION_TYPE_FENCE)
    ack = gcs.wait("MISSION_ACK", lambda m: m.mission_type == M.MAV_MISSION_TYPE_FENCE, 10.0)
    assert ack is not None and ack.type == M.MAV_MISSION_NO_SPACE, sim.output()[-2000:]
    for kind in ("MISSION_REQUEST_INT", "MISSION_REQUEST"):        # the last of each kind the station got
        req = gcs.conn.messages.get(kind)
        assert req is None or req.mission_type != M.MAV_MISSION_TYPE_FENCE, req
    text = gcs.wait_text("a geofence may have", 5.0)
    assert text is not None and f"{n} vertices is more than the {MAX_FENCE_VERTICES}" in text, gcs.texts[-5:]


@pytest.mark.slow
def test_a_large_fence_under_the_limit_is_taken_and_downloaded_without_an_overrun_hold(boat):
    sim, gcs = boat
    gcs.connect()
    n = 1000                                   # more than the 500 items a mission may have
    ack = gcs.upload(fence_items(n), mission_type=M.MAV_MISSION_TYPE_FENCE, timeout=120.0)
    assert ack is not None and ack.type == M.MAV_MISSION_ACCEPTED, gcs.texts[-5:]
    assert gcs.wait_text("loaded from a MAVLink fence upload", 10.0), gcs.texts[-5:]
    back = gcs.download(M.MAV_MISSION_TYPE_FENCE, timeout=30.0)
    assert back is not None and len(back) == n
    gcs.poll(2.0)
    assert not [t for t in gcs.texts if "missed deadlines" in t], gcs.texts[-10:]
