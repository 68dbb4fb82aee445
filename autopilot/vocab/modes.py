"""The modes by name, each with what it needs to run, declared once here and read by the vehicle, the failsafes,
the pre-arm checks and the rims (MAVLink's mode numbers, ROS, the CLI).

A `ModeName` is a `str` (its value is the name every log, report, topic and ground station shows), so it
compares equal to that text; parse operator input with `ModeName.parse`.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import FrozenSet


@dataclass(frozen=True)
class Needs:
    """What a mode needs. `position`: a valid position estimate (the GNSS failsafes act, and the pre-arm
    navigation checks apply); `estimate`: its control feeds back the estimate (heading, speed, yaw rate), so
    without a valid one it is held at neutral and an IMU loss acts; `operator`: it flies a stream of operator
    commands that times out to neutral; `drives`: it drives the thrusters at all; `selectable`: an operator may
    ask for it (False for the stages only a failsafe enters)."""

    position: bool = False
    estimate: bool = False
    operator: bool = False
    drives: bool = True
    selectable: bool = True

    def __post_init__(self) -> None:
        if self.position and not self.estimate:
            raise ValueError("a mode that needs a position needs the estimate it comes from")
        if (self.estimate or self.operator) and not self.drives:
            raise ValueError("a mode that steers on the estimate or the operator drives the thrusters")


class ModeName(str, Enum):
    """Every mode of the vehicle. The value is the name; `needs` says what the mode needs to run."""

    needs: Needs

    def __new__(cls, name: str, needs: Needs) -> "ModeName":
        member = str.__new__(cls, name)
        member._value_ = name
        member.needs = needs
        return member

    MANUAL = "MANUAL", Needs(operator=True)
    HOLD = "HOLD", Needs(drives=False)
    LOITER = "LOITER", Needs(position=True, estimate=True)
    AUTO = "AUTO", Needs(position=True, estimate=True)
    RTL = "RTL", Needs(position=True, estimate=True)
    VELOCITY = "VELOCITY", Needs(estimate=True, operator=True)
    GUIDED = "GUIDED", Needs(position=True, estimate=True)   # targets from a companion computer or a GCS
    CALIBRATE_ON_WATER = "CALIBRATE_ON_WATER", Needs(position=True, estimate=True)
    HEADING_HOLD = "HEADING_HOLD", Needs(position=True, estimate=True, selectable=False)
    BRAKE = "BRAKE", Needs(position=True, estimate=True, selectable=False)

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    @classmethod
    def parse(cls, text: str) -> "ModeName":
        """The mode `text` names (case and surrounding space ignored); ValueError listing the modes otherwise."""
        key = str(text).strip().upper()
        for mode in cls:
            if mode.value == key:
                return mode
        raise ValueError(f"unknown mode {str(text)[:40]!r}: one of {', '.join(m.value for m in cls)}")


def modes_that(**needs: bool) -> FrozenSet[ModeName]:
    """The modes whose `needs` has every given field at the given value: modes_that(position=True)."""
    return frozenset(m for m in ModeName if all(getattr(m.needs, k) == v for k, v in needs.items()))
