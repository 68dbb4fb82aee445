"""VELOCITY: the operator commands a surge speed and a yaw rate (cruise control and turn rate), flown by the
velocity controller; neutral when the commands stop coming.

Commands come as speeds (`command`: a ROS cmd_vel, MAVLink SET_POSITION_TARGET_LOCAL_NED, `autopilot command
velocity`) or as sticks (`sticks`: a gamepad or MANUAL_CONTROL while in this mode): throttle in [-1, 1] scales
the hull's max_speed_mps, steering in [-1, 1] the largest commanded yaw rate (control.velocity.max_yaw_rate_dps);
the same stick movement that turns the boat in MANUAL asks for a turn rate here. It is ArduPilot Rover's ACRO.
The mode needs a valid estimate (the controller feeds back the estimated surge speed).
"""
from __future__ import annotations

import math

from autopilot.modes.base import NEUTRAL, Mode, ModeOutput
from autopilot.modes.operator_command import OperatorCommand
from autopilot.vocab.modes import ModeName
from autopilot.vocab.types import VelocitySetpoint


class VelocityMode(Mode):
    """`max_speed_mps` > 0, `max_yaw_rate_rps` > 0 scale the sticks; a command older than `timeout_s` (or none
    yet) gives neutral, so a dead joystick or link cannot leave the boat running."""

    name = ModeName.VELOCITY

    def __init__(self, max_speed_mps: float, max_yaw_rate_rps: float, timeout_s: float):
        self.max_speed_mps = max_speed_mps
        self.max_yaw_rate_rps = max_yaw_rate_rps
        self.timeout_s = timeout_s
        self._cmd = OperatorCommand(timeout_s, "velocity")    # (surge_mps, yaw_rate_rps)

    def command(self, t_s: float, surge_mps: float, yaw_rate_rps: float) -> None:
        """Store a commanded surge speed [m/s] and yaw rate [rad/s, + starboard]; clamped to the mode's limits.
        ValueError for a non-finite value."""
        if not (math.isfinite(t_s) and math.isfinite(surge_mps) and math.isfinite(yaw_rate_rps)):
            raise ValueError(f"velocity command must be finite numbers, got surge={surge_mps!r} m/s, "
                             f"yaw rate={yaw_rate_rps!r} rad/s")
        v, r = self.max_speed_mps, self.max_yaw_rate_rps
        self._cmd.store(t_s, max(-v, min(v, surge_mps)), max(-r, min(r, yaw_rate_rps)))

    def sticks(self, t_s: float, throttle: float, steering: float) -> None:
        """Throttle and steering in [-1, 1] (clamped) as a speed and a turn rate."""
        if not (math.isfinite(throttle) and math.isfinite(steering)):
            raise ValueError(f"stick values must be finite numbers, got throttle={throttle!r}, "
                             f"steering={steering!r}")
        self.command(t_s, max(-1.0, min(1.0, throttle)) * self.max_speed_mps,
                     max(-1.0, min(1.0, steering)) * self.max_yaw_rate_rps)

    def enter(self, t_s, nav) -> None:
        self._cmd.clear()                 # a command given before entering does not carry over

    def update(self, t_s, nav) -> ModeOutput:
        cmd = self._cmd.current(t_s)
        if cmd is None:
            self.notice = self._cmd.take_notice() or self.notice
            return NEUTRAL
        surge_mps, yaw_rate_rps = cmd     # as stored by command()
        return ModeOutput(velocity=VelocitySetpoint(surge_mps, yaw_rate_rps))
