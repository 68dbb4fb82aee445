"""SET_POSITION_TARGET_LOCAL_NED and SET_POSITION_TARGET_GLOBAL_INT read as ArduPilot Rover reads them in GUIDED,
as the targets of our GUIDED mode (autopilot/modes/guided.py). Pure: no autopilot, no link.

Frames: LOCAL_NED (x north, y east [m] of the mission's local origin, as Rover takes them from its EKF origin),
LOCAL_OFFSET_NED (north, east [m] of where the boat is), BODY_NED and BODY_OFFSET_NED (x ahead, y to starboard [m]
of the boat; velocities in body axes too, turned into north/east by the heading when the target arrives),
GLOBAL_INT, GLOBAL_RELATIVE_ALT_INT and GLOBAL_TERRAIN_ALT_INT with their float twins (lat_int, lon_int
[deg * 1e7]; velocities north, east). Altitude and vertical speed are a boat's to ignore. Any other frame is refused.

type_mask (POSITION_TARGET_TYPEMASK: a set bit means "ignore"), the combinations Rover follows:
- the acceleration bits: at least one must be set (Rover answers "set ACC_IGNORE in mask" otherwise; a boat follows
  no acceleration or force target);
- position used (x and y, or lat and lon, not ignored; z does not matter): go there; everything else is ignored,
  as Rover does (its position wins over any velocity);
- else velocity used (vx not ignored; an ignored vy counts as 0):
  * with neither yaw nor yaw rate: a velocity over ground (north, east [m/s]; a body-frame one turned by the
    heading);
  * with yaw rate: surge speed |v| (astern when vx < 0) and that yaw rate [rad/s, + clockwise seen from above];
  * with yaw: that heading [rad, from north, clockwise; relative to the bow in a body frame] at speed |v|
    (astern when vx < 0);
- else yaw alone: turn to that heading, speed 0; yaw rate alone: turn at that rate, speed 0;
- nothing used: refused.
Where Rover would ignore the message silently, `parse` says why, so the sender is told.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from autopilot.mavlink.pymav import mavlink as S

IGNORE_X, IGNORE_Y = S.POSITION_TARGET_TYPEMASK_X_IGNORE, S.POSITION_TARGET_TYPEMASK_Y_IGNORE
IGNORE_VX, IGNORE_VY = S.POSITION_TARGET_TYPEMASK_VX_IGNORE, S.POSITION_TARGET_TYPEMASK_VY_IGNORE
IGNORE_ACC = (S.POSITION_TARGET_TYPEMASK_AX_IGNORE | S.POSITION_TARGET_TYPEMASK_AY_IGNORE
              | S.POSITION_TARGET_TYPEMASK_AZ_IGNORE)
IGNORE_YAW, IGNORE_YAW_RATE = S.POSITION_TARGET_TYPEMASK_YAW_IGNORE, S.POSITION_TARGET_TYPEMASK_YAW_RATE_IGNORE

LOCAL_FRAMES = {S.MAV_FRAME_LOCAL_NED: "local", S.MAV_FRAME_LOCAL_OFFSET_NED: "offset",
                S.MAV_FRAME_BODY_NED: "body", S.MAV_FRAME_BODY_OFFSET_NED: "body"}
GLOBAL_FRAMES = frozenset({S.MAV_FRAME_GLOBAL, S.MAV_FRAME_GLOBAL_INT, S.MAV_FRAME_GLOBAL_RELATIVE_ALT,
                           S.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, S.MAV_FRAME_GLOBAL_TERRAIN_ALT,
                           S.MAV_FRAME_GLOBAL_TERRAIN_ALT_INT})


@dataclass(frozen=True)
class Target:
    """What a target message asks for, before the boat's own position and heading are applied.

    kind "position": `frame` "local" (a, b north, east [m] of the mission origin), "offset" (north, east [m] of
    the boat), "body" (ahead, starboard [m] of the boat) or "global" (a, b latitude, longitude [deg]).
    kind "ground": a, b velocity north, east [m/s] over ground (`frame` "body": ahead, starboard, to be turned by
    the heading). kind "body": a surge speed [m/s, + ahead], b yaw rate [rad/s, + starboard].
    kind "heading": a heading [rad, compass] (`frame` "body": relative to the bow), b speed [m/s, - astern]."""

    kind: str
    frame: str
    a: float
    b: float


def parse(msg, is_global: bool) -> Union[Target, str]:
    """The Target `msg` (a pymavlink SET_POSITION_TARGET_LOCAL_NED, or with `is_global` _GLOBAL_INT) asks for,
    or the reason it cannot be followed (module docstring)."""
    what = "SET_POSITION_TARGET_GLOBAL_INT" if is_global else "SET_POSITION_TARGET_LOCAL_NED"
    frame_no = int(msg.coordinate_frame)
    if is_global:
        if frame_no not in GLOBAL_FRAMES:
            return f"{what} frame {frame_no} is not a global frame (GLOBAL_INT, GLOBAL_RELATIVE_ALT_INT, ...)"
        frame = "global"
    else:
        if frame_no not in LOCAL_FRAMES:
            return (f"{what} frame {frame_no} is not one of LOCAL_NED (1), LOCAL_OFFSET_NED (7), BODY_NED (8), "
                    f"BODY_OFFSET_NED (9)")
        frame = LOCAL_FRAMES[frame_no]
    mask = int(msg.type_mask)
    if not mask & IGNORE_ACC:
        return f"{what} asks for an acceleration or force: set the acceleration ignore bits in type_mask"
    if not mask & (IGNORE_X | IGNORE_Y):
        if is_global:
            a, b = msg.lat_int / 1e7, msg.lon_int / 1e7
        else:
            a, b = float(msg.x), float(msg.y)
        return _finite(what, Target("position", frame, a, b))
    vel_used = not mask & IGNORE_VX
    yaw_used, rate_used = not mask & IGNORE_YAW, not mask & IGNORE_YAW_RATE
    if vel_used:
        vx, vy = float(msg.vx), 0.0 if mask & IGNORE_VY else float(msg.vy)
        speed = math.copysign(math.hypot(vx, vy), vx) if (yaw_used or rate_used) else math.hypot(vx, vy)
        if rate_used and not yaw_used:
            return _finite(what, Target("body", frame, speed, float(msg.yaw_rate)))
        if yaw_used:
            return _finite(what, Target("heading", frame, float(msg.yaw), speed))
        return _finite(what, Target("ground", frame, vx, vy))
    if yaw_used and not rate_used:
        return _finite(what, Target("heading", frame, float(msg.yaw), 0.0))
    if rate_used and not yaw_used:
        return _finite(what, Target("body", frame, 0.0, float(msg.yaw_rate)))
    return f"{what} type_mask {mask:#x} leaves nothing to follow (no position, velocity, yaw or yaw rate)"


def _finite(what: str, target: Target) -> Union[Target, str]:
    if not (math.isfinite(target.a) and math.isfinite(target.b)):
        return f"{what} refused: its values must be finite numbers, got {target.a!r}, {target.b!r}"
    return target


def resolve(target: Target, north_m: float, east_m: float, heading_rad: float) -> Target:
    """The target in the core's terms (autopilot/modes/guided.py), given where the boat is [m, local NED] and
    its heading [rad, compass]: positions "local" (north, east [m]) or "global" (lat, lon [deg]); velocities
    with frame "" (north/east, compass heading)."""
    c, s = math.cos(heading_rad), math.sin(heading_rad)
    if target.kind == "position":
        if target.frame == "offset":
            return Target("position", "local", north_m + target.a, east_m + target.b)
        if target.frame == "body":
            return Target("position", "local", north_m + c * target.a - s * target.b,
                          east_m + s * target.a + c * target.b)
        return target
    if target.frame != "body" or target.kind == "body":
        return Target(target.kind, "", target.a, target.b)
    if target.kind == "ground":
        return Target("ground", "", c * target.a - s * target.b, s * target.a + c * target.b)
    return Target("heading", "", target.a + heading_rad, target.b)
