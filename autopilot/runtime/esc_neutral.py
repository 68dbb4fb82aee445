"""`python -m autopilot.runtime.esc_neutral`: set every configured ESC output to its neutral pulse (systemd
ExecStopPost).

    ExecStopPost=/opt/autopilot/venv/bin/python -m autopilot.runtime.esc_neutral --config /etc/autopilot/boat.yaml

With --config, the boat config names the vessel and the ESC backend (its `esc:` section: pigpio, kernel_pwm or
pca9685); with --vessel, pigpiod at --host/--port is used. Neutral is pulse_neutral_us + trim_us of each
thruster (as the ESC output sends it). Exit status 0 when every channel was set, 1 when the output stage cannot
be reached (the message says what to do) or a channel failed, 2 for a bad config.
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
    parser = argparse.ArgumentParser(prog="python -m autopilot.runtime.esc_neutral",
                                     description="Set all configured ESC outputs to neutral.")
    parser.add_argument("--config", default=None, help="boat config YAML: its vessel and its esc: backend")
    parser.add_argument("--vessel", default="foka", help="vessel preset name or YAML path, with pigpiod "
                                                         "(default: foka)")
    parser.add_argument("--host", default="localhost", help="pigpiod host (default: localhost)")
    parser.add_argument("--port", type=int, default=8888, help="pigpiod port (default: 8888)")
    args = parser.parse_args(argv)
    from autopilot.vocab.config import load_vessel
    from autopilot.vocab.schema import ConfigError
    from drivers.esc.contract import EscBackend, EscError
    from drivers.esc.output import channels_from_vessel
    from drivers.esc.ports import open_port
    try:
        if args.config:
            from autopilot.files.boat import load_boat_config
            cfg = load_boat_config(args.config)
            vessel, backend = load_vessel(cfg.vessel_path()), cfg.esc.backend_spec()
        else:
            vessel, backend = load_vessel(args.vessel), EscBackend(host=args.host, port=args.port)
        channels = channels_from_vessel(vessel, backend)
    except (ConfigError, EscError) as e:
        print(f"esc_neutral: {e}", file=sys.stderr)
        return 2
    try:
        pi = open_port(backend, [c.gpio for c in channels])
    except (EscError, OSError) as e:
        print(f"esc_neutral: {e}", file=sys.stderr)
        return 1
    failed = set_neutral(channels, pi)
    pi.stop()
    label = "ch" if backend.kind == "pca9685" else "GPIO"
    for c, err in failed:
        print(f"esc_neutral: {label}{c.gpio} ({c.name}) not set: {err}", file=sys.stderr)
    done = ", ".join(f"{label}{c.gpio}={c.neutral_out_us}us" for c in channels
                     if all(c is not f for f, _ in failed))
    if done:
        print(f"esc_neutral: neutral {done}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
