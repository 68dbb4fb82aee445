"""MANUAL: the operator's throttle and steering, straight to a force and moment; neutral when they stop coming."""
from __future__ import annotations

import math

from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.modes.operator_command import OperatorCommand
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import Wrench


class ManualMode(Mode):
    """throttle in [-1, 1] (+ forward) scales the surge force to the allocator's forward or reverse limit,
    steering in [-1, 1] (+ turn to starboard) the yaw moment to its limit. A command older than `timeout_s`
    (or none yet) gives neutral, so a dead joystick or link cannot leave the thrusters driven."""

    name = ModeName.MANUAL

    def __init__(self, max_surge_n: float, min_surge_n: float, max_yaw_nm: float, timeout_s: float):
        self.max_surge_n = max_surge_n
        self.min_surge_n = min_surge_n
        self.max_yaw_nm = max_yaw_nm
        self.timeout_s = timeout_s
        self._cmd = OperatorCommand(timeout_s, "operator")    # (throttle, steering)

    def command(self, t_s: float, throttle: float, steering: float) -> None:
        """Store an operator command. ValueError for a non-finite value; values beyond +-1 are clamped."""
        if not (math.isfinite(t_s) and math.isfinite(throttle) and math.isfinite(steering)):
            raise ValueError(f"manual command must be finite numbers, got throttle={throttle!r}, "
                             f"steering={steering!r} at t={t_s!r}")
        self._cmd.store(t_s, max(-1.0, min(1.0, throttle)), max(-1.0, min(1.0, steering)))

    def enter(self, t_s, nav) -> None:
        self._cmd.restart()

    def update(self, t_s, nav) -> ModeOutput:
        cmd = self._cmd.current(t_s)
        if cmd is None:
            self.notice = self._cmd.take_notice() or self.notice
            return NEUTRAL
        throttle, steering = cmd
        surge = throttle * (self.max_surge_n if throttle >= 0.0 else -self.min_surge_n)
        return ModeOutput(wrench=Wrench(surge, steering * self.max_yaw_nm))
