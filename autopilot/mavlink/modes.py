"""Our modes as ArduPilot Rover's custom mode numbers (HEARTBEAT.custom_mode, SET_MODE, MAV_CMD_DO_SET_MODE).

Ground stations name a boat's custom modes from the Rover table, so QGC, Mission Planner and MAVProxy list
MANUAL, HOLD, LOITER, AUTO, RTL and GUIDED by name and send these numbers. VELOCITY is Rover's ACRO (1): the
sticks ask for a speed and a turn rate. GUIDED is Rover's GUIDED (15): position and velocity targets from a
companion computer (SET_POSITION_TARGET_*, DO_REPOSITION). The two modes only a failsafe enters are
reported as the nearest Rover mode: HEADING_HOLD (hold the heading at slow speed while GNSS is lost) as
STEERING (3), BRAKE (stop, then the failsafe's next action) as HOLD (4). Neither can be asked for.
CALIBRATE_ON_WATER (the first-day magnetometer circles) is shown as CIRCLE (9); a ground station cannot ask
for it by number (our command text `mode calibrate_on_water` does).
"""
from __future__ import annotations

from typing import Dict, Optional, cast

from autopilot.vocab.modes import ModeName

# keyed by ModeName, a str Enum: custom_mode looks them up by a snapshot's plain mode name (str)
ROVER_MODE_NUMBERS: Dict[str, int] = {ModeName.MANUAL: 0, ModeName.VELOCITY: 1, ModeName.HOLD: 4,
                                      ModeName.LOITER: 5, ModeName.AUTO: 10, ModeName.RTL: 11,
                                      ModeName.GUIDED: 15}
REPORTED_AS: Dict[str, int] = {ModeName.HEADING_HOLD: 3, ModeName.BRAKE: 4,   # failsafe-only modes, shown as the
                               ModeName.CALIBRATE_ON_WATER: 9}                # nearest Rover mode
ROVER_NAMES = {0: "MANUAL", 1: "ACRO", 3: "STEERING", 4: "HOLD", 5: "LOITER", 6: "FOLLOW", 7: "SIMPLE",
               8: "DOCK", 9: "CIRCLE", 10: "AUTO", 11: "RTL", 12: "SMART_RTL", 15: "GUIDED", 16: "INITIALISING"}


def custom_mode(name: str) -> int:
    """HEARTBEAT.custom_mode for our mode `name` (AUTO for an identification run, which flies as AUTO)."""
    if name in ROVER_MODE_NUMBERS:
        return ROVER_MODE_NUMBERS[name]
    return REPORTED_AS.get(name, ROVER_MODE_NUMBERS[ModeName.HOLD])


def mode_name(number: int) -> Optional[ModeName]:
    """Our mode for a Rover custom mode number a ground station asks for; None if we have no such mode."""
    for name, n in ROVER_MODE_NUMBERS.items():
        if n == number:
            return cast(ModeName, name)     # the table's keys are ModeName members
    return None


def describe(number: int) -> str:
    """A Rover mode number as a person reads it ('GUIDED (15)')."""
    return f"{ROVER_NAMES.get(number, 'mode')} ({number})"
