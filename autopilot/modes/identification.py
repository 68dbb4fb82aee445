"""AUTO on an identification mission: open-loop excitation segments inside a box, for `autopilot identify hull`.

Each segment (autopilot.vocab.config.ExcitationSegmentConfig) is a surge force and a yaw moment over time, as
fractions of the allocator's full forward force and full yaw moment, sent straight to the allocation (no
controller in the loop: what the hull does with them is what is identified). Between segments the boat goes
back to a start point 0.4 box lengths from the centre (the first waypoint), turns to face across the box
(alternating direction), holds that heading for settle_s, and only then starts the next segment. A segment
that reaches the box's edge is cut short (a warning says which) and the boat goes back. Failsafes, the
geofence and operator mode changes act as in any AUTO mission; when every segment of every set has run, the
mode is finished and the mission's on_complete follows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, List

import numpy as np

from autopilot.modes.base import Mode, ModeOutput
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import GuidanceSetpoint, Wrench

ARRIVE_M = 3.0                 # the start point counts as reached within this distance
ALIGNED_RAD = math.radians(10.0)
SLOW_WITHIN_M = 8.0            # the way back slows down linearly inside this distance


@dataclass(frozen=True)
class Segment:
    name: str
    duration_s: float
    surge: Callable[[float], float]     # fraction of the full forward surge force at time-in-segment [s]
    yaw: Callable[[float], float]       # fraction of the full yaw moment (+ turns to starboard)


def plan(config) -> List[Segment]:
    """The segments of every set of an IdentificationConfig, in flying order."""
    out: List[Segment] = []
    for k in range(config.sets):
        rng = np.random.default_rng([config.seed, k])
        for i, s in enumerate(config.segments):
            tag = f"set {k + 1} #{i + 1} {s.type}"
            if s.type == "surge_steps":
                for level in s.levels:
                    out.append(Segment(f"{tag} {level:g}", s.duration_s, _const(level), _const(0.0)))
            elif s.type == "turns":
                out.append(Segment(f"{tag} starboard", s.duration_s, _const(s.surge), _const(s.yaw)))
                out.append(Segment(f"{tag} port", s.duration_s, _const(s.surge), _const(-s.yaw)))
            elif s.type == "sine":
                out.append(Segment(tag, s.duration_s, _const(s.surge), _sine(s.yaw, s.period_s)))
            elif s.type == "square":
                out.append(Segment(tag, s.duration_s, _const(s.surge), _square(s.yaw, s.period_s)))
            else:                                                  # prbs on both channels
                n = int(math.ceil(s.duration_s / s.bit_s)) + 1
                bx, bn = rng.integers(0, 2, n), rng.integers(0, 2, n)
                out.append(Segment(tag, s.duration_s, _prbs_surge(bx, s.surge, s.bit_s), _prbs_yaw(bn, s.yaw, s.bit_s)))
    return out


def _const(v: float) -> Callable[[float], float]:
    return lambda t: v


def _sine(a: float, p: float) -> Callable[[float], float]:
    return lambda t: a * math.sin(2 * math.pi * t / p)


def _square(a: float, p: float) -> Callable[[float], float]:
    return lambda t: a * (1.0 if math.sin(2 * math.pi * t / p) >= 0 else -1.0)


def _prbs_surge(b: np.ndarray, a: float, w: float) -> Callable[[float], float]:
    return lambda t: a * (0.3 + 0.7 * b[int(t / w)])


def _prbs_yaw(b: np.ndarray, a: float, w: float) -> Callable[[float], float]:
    return lambda t: a * (2 * int(b[int(t / w)]) - 1)


class IdentificationMode(Mode):
    """See the module docstring. `max_surge_n` and `max_yaw_nm` are the allocator's full force and moment;
    `return_speed_mps` the speed of the way back."""

    name = ModeName.AUTO

    def __init__(self, config, center_ne, max_surge_n: float, max_yaw_nm: float, return_speed_mps: float):
        self.config = config
        self.center_ne = center_ne
        self.segments = plan(config)
        self.max_surge_n, self.max_yaw_nm = max_surge_n, max_yaw_nm
        self.return_speed_mps = return_speed_mps
        self.progress = None           # an info message for the log, taken by the vehicle
        self.index = 0                 # segment being prepared or flown
        self.cut_short = 0
        self._phase = "return"
        self._t_phase = 0.0
        self._heading0 = 0.0

    def enter(self, t_s, nav) -> None:
        self._heading0 = nav.heading_rad if nav.valid else 0.0
        self._to(t_s, "return")

    @property
    def finished(self) -> bool:
        return self.index >= len(self.segments)

    def _to(self, t_s: float, phase: str) -> None:
        self._phase, self._t_phase = phase, t_s

    def _start_point(self):
        """(north, east, heading) of the next segment's start: 0.4 box behind the centre, facing across."""
        h = self._heading0 + (math.pi if self.index % 2 else 0.0)
        back = 0.4 * self.config.box_m
        cn, ce = self.center_ne
        return cn - back * math.cos(h), ce - back * math.sin(h), h

    def _inside(self, nav) -> bool:
        half = 0.5 * self.config.box_m
        return abs(nav.north_m - self.center_ne[0]) <= half and abs(nav.east_m - self.center_ne[1]) <= half

    def update(self, t_s, nav) -> ModeOutput:
        if self.finished:
            return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=nav.heading_rad, speed_mps=0.0))
        sn, se, heading = self._start_point()
        if self._phase == "excite":
            seg = self.segments[self.index]
            t = t_s - self._t_phase
            if t >= seg.duration_s or not self._inside(nav):
                if t < seg.duration_s:
                    self.cut_short += 1
                    self.notice = f"identification segment {seg.name!r} cut short at the box edge after {t:.1f} s"
                self.progress = f"identification segment {self.index + 1}/{len(self.segments)} ended after {t:.1f} s"
                self.index += 1
                self._to(t_s, "return")
                return self.update(t_s, nav)
            return ModeOutput(wrench=Wrench(seg.surge(t) * self.max_surge_n, seg.yaw(t) * self.max_yaw_nm))
        dn, de = sn - nav.north_m, se - nav.east_m
        dist = math.hypot(dn, de)
        if self._phase == "return":
            if dist > ARRIVE_M:
                speed = self.return_speed_mps * min(1.0, dist / SLOW_WITHIN_M)
                return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=math.atan2(de, dn), speed_mps=speed))
            self._to(t_s, "settle")
        err = math.remainder(heading - nav.heading_rad, 2 * math.pi)
        if abs(err) > ALIGNED_RAD:
            self._t_phase = t_s                    # the settle time counts from when the heading is right
        elif t_s - self._t_phase >= self.config.settle_s:
            self.progress = (f"identification segment {self.index + 1}/{len(self.segments)}: "
                             f"{self.segments[self.index].name}")
            self._to(t_s, "excite")
            return self.update(t_s, nav)
        return ModeOutput(setpoint=GuidanceSetpoint(heading_rad=heading, speed_mps=0.0))
