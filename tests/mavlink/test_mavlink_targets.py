"""SET_POSITION_TARGET_* type masks and frames read as ArduPilot Rover reads them in GUIDED (targets.py), built
with pymavlink's own encoder so the fields are what a MAVROS or MAVSDK sender puts on the wire."""
from __future__ import annotations

import math

import pytest

from autopilot.mavlink import targets as TG
from tests.support.mavlink_gcs import M

MAV = M.MAVLink(None)
IGN = {name: getattr(M, f"POSITION_TARGET_TYPEMASK_{name}_IGNORE")
       for name in ("X", "Y", "Z", "VX", "VY", "VZ", "AX", "AY", "AZ", "YAW", "YAW_RATE")}


def _mask(*used):
    """A type_mask using only the fields named (every other one ignored)."""
    return sum(bit for name, bit in IGN.items() if name not in used)


def _local(frame, mask, x=0.0, y=0.0, vx=0.0, vy=0.0, yaw=0.0, yaw_rate=0.0):
    return MAV.set_position_target_local_ned_encode(0, 1, 1, frame, mask, x, y, 0, vx, vy, 0, 0, 0, 0, yaw,
                                                    yaw_rate)


def _global(frame, mask, lat=0.0, lon=0.0, vx=0.0, vy=0.0, yaw=0.0):
    return MAV.set_position_target_global_int_encode(0, 1, 1, frame, mask, int(round(lat * 1e7)),
                                                     int(round(lon * 1e7)), 0, vx, vy, 0, 0, 0, 0, yaw, 0)


def test_position_only_in_each_local_frame_and_its_resolution():
    t = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("X", "Y", "Z"), 10.0, -4.0), False)
    assert t == TG.Target("position", "local", 10.0, -4.0)
    assert TG.resolve(t, 3.0, 3.0, 1.0) == t                             # from the origin, not the boat
    off = TG.parse(_local(M.MAV_FRAME_LOCAL_OFFSET_NED, _mask("X", "Y"), 10.0, -4.0), False)
    assert TG.resolve(off, 3.0, 3.0, 1.0) == TG.Target("position", "local", 13.0, -1.0)
    body = TG.parse(_local(M.MAV_FRAME_BODY_OFFSET_NED, _mask("X", "Y"), 10.0, 0.0), False)
    r = TG.resolve(body, 0.0, 0.0, math.radians(90.0))                 # facing east: 10 m ahead is 10 m east
    assert r.kind == "position" and abs(r.a) < 1e-9 and abs(r.b - 10.0) < 1e-9
    # the position wins over a velocity sent with it, as in Rover
    both = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("X", "Y", "VX", "VY"), 1.0, 2.0, 5.0, 5.0), False)
    assert both.kind == "position"


def test_global_position_and_frames():
    t = TG.parse(_global(M.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, _mask("X", "Y", "Z"), 51.1, 17.05), True)
    assert t.kind == "position" and t.frame == "global" and abs(t.a - 51.1) < 1e-7 and abs(t.b - 17.05) < 1e-7
    assert TG.parse(_global(M.MAV_FRAME_GLOBAL_INT, _mask("X", "Y"), 51.1, 17.05), True).kind == "position"
    assert "not a global frame" in TG.parse(_global(M.MAV_FRAME_LOCAL_NED, _mask("X", "Y"), 51.1, 17.0), True)
    assert "is not one of LOCAL_NED" in TG.parse(_local(M.MAV_FRAME_GLOBAL_INT, _mask("X", "Y"), 1, 1), False)


def test_velocity_forms():
    # velocity only, NED: over ground
    assert TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("VX", "VY", "VZ"), vx=0.3, vy=0.4), False) == \
        TG.Target("ground", "local", 0.3, 0.4)
    # in a body frame the vector is turned by the heading when the target arrives
    body = TG.parse(_local(M.MAV_FRAME_BODY_NED, _mask("VX", "VY"), vx=1.0, vy=0.0), False)
    r = TG.resolve(body, 0.0, 0.0, math.radians(180.0))
    assert r.kind == "ground" and abs(r.a + 1.0) < 1e-9 and abs(r.b) < 1e-9
    # velocity and yaw rate: a surge speed (astern for vx < 0) and a turn rate
    assert TG.parse(_local(M.MAV_FRAME_BODY_NED, _mask("VX", "YAW_RATE"), vx=-0.5, yaw_rate=0.2), False) == \
        TG.Target("body", "body", -0.5, pytest.approx(0.2))
    # velocity and yaw: that heading at |v|; in a body frame the yaw is relative to the bow
    h = TG.parse(_local(M.MAV_FRAME_BODY_NED, _mask("VX", "VY", "YAW"), vx=0.6, vy=0.8, yaw=0.5), False)
    r = TG.resolve(h, 0.0, 0.0, 1.0)
    assert r.kind == "heading" and abs(r.a - 1.5) < 1e-6 and abs(r.b - 1.0) < 1e-6
    # yaw alone, yaw rate alone: turn with speed 0
    assert TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("YAW"), yaw=1.0), False).b == 0.0
    assert TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("YAW_RATE"), yaw_rate=0.3), False).kind == "body"
    # a global target's velocity is north/east
    g = TG.parse(_global(M.MAV_FRAME_GLOBAL_INT, _mask("VX", "VY"), vx=0.0, vy=0.7), True)
    assert g.kind == "ground" and abs(g.b - 0.7) < 1e-6


def test_masks_rover_refuses_are_refused_with_the_reason():
    acc = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("X", "Y", "AX", "AY", "AZ"), 1.0, 1.0), False)
    assert isinstance(acc, str) and "acceleration" in acc
    none = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask()), False)
    assert isinstance(none, str) and "nothing to follow" in none
    nan = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("X", "Y"), math.nan, 1.0), False)
    assert isinstance(nan, str) and "finite" in nan
    inf = TG.parse(_local(M.MAV_FRAME_LOCAL_NED, _mask("VX", "VY"), vx=math.inf), False)
    assert isinstance(inf, str) and "finite" in inf
