"""`python -m drivers.esc_neutral`: set every configured ESC GPIO to its neutral pulse (systemd ExecStopPost).

    ExecStopPost=/opt/autopilot/venv/bin/python -m drivers.esc_neutral --vessel /etc/autopilot/boat.yaml

Neutral is pulse_neutral_us + trim_us of each thruster with a GPIO (as the ESC output sends it). Exit status 0
when every channel was set, 1 when pigpiod cannot be reached (the message says how to start it) or a channel
failed, 2 for a bad vessel config.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


def set_neutral(channels, pi) -> list:
    """Neutral on each channel; returns the (channel, error) pairs that failed."""
    failed = []
    for c in channels:
        try:
            pi.set_servo_pulsewidth(c.gpio, c.neutral_out_us)
        except Exception as e:    # noqa: BLE001 - report each channel, try all
            failed.append((c, e))
    return failed


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m drivers.esc_neutral",
                                     description="Set all configured ESC outputs to neutral through pigpiod.")
    parser.add_argument("--vessel", default="foka", help="vessel preset name or YAML path (default: foka)")
    parser.add_argument("--host", default="localhost", help="pigpiod host (default: localhost)")
    parser.add_argument("--port", type=int, default=8888, help="pigpiod port (default: 8888)")
    args = parser.parse_args(argv)
    from autopilot.config import ConfigError, load_vessel
    from drivers.esc import EscError, channels_from_vessel, connect_pigpio
    try:
        channels = channels_from_vessel(load_vessel(args.vessel))
    except (ConfigError, EscError) as e:
        print(f"esc_neutral: {e}", file=sys.stderr)
        return 2
    try:
        pi = connect_pigpio(args.host, args.port)
    except EscError as e:
        print(f"esc_neutral: {e}", file=sys.stderr)
        return 1
    failed = set_neutral(channels, pi)
    pi.stop()
    for c, e in failed:
        print(f"esc_neutral: GPIO{c.gpio} ({c.name}) not set: {e}", file=sys.stderr)
    done = ", ".join(f"GPIO{c.gpio}={c.neutral_out_us}us" for c in channels if all(c is not f for f, _ in failed))
    if done:
        print(f"esc_neutral: neutral {done}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
