"""`autopilot bench DEVICE ...`: tools that check one device on a real Pi (gps, imu, esc).

Each device is a module here with `register(subparsers)` listed in autopilot.cli.SUBCOMMAND_MODULES
("autopilot.bringup.gps", "autopilot.bringup.imu", ...). They share one `bench` parser:

    def register(subparsers):
        p = get_bench_subparsers(subparsers).add_parser("imu", help="...")
        p.add_argument(...)
        p.set_defaults(func=run)

Every device tool takes `--config BOAT.yaml` (the boat's vessel, its ports, bus and GPIOs, and its ESC backend)
or `--vessel NAME|FILE` (add_vessel_arguments / bench_vessel), and `--emulated` to run against the project's
stand-ins instead of hardware (autopilot/bringup/stand_ins.py).
"""
from __future__ import annotations

import argparse
from typing import Any, Optional, Tuple

DEFAULT_VESSEL = "foka"


def get_bench_subparsers(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The sub-parsers of `autopilot bench`, creating the `bench` parser on first use."""
    bench = subparsers.choices.get("bench")
    if bench is None:
        bench = subparsers.add_parser(
            "bench", help="check one device on its own (gps, imu, esc)",
            description="Bench tools for HIL runs on a real Pi: each checks one device on its own.")
        devices = bench.add_subparsers(dest="bench_device", metavar="DEVICE")
        devices.required = True
        bench._bench_devices = devices
    return bench._bench_devices


def add_vessel_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """--config BOAT.yaml and --vessel NAME|FILE: where `what` (the device's port, bus or outputs) comes from."""
    p.add_argument("--config", metavar="BOAT.yaml", default=None,
                   help=f"boat config: {what} from the vessel it names (and its esc: section)")
    p.add_argument("--vessel", metavar="NAME|FILE", default=None,
                   help=f"vessel preset or YAML for {what} when there is no --config (default {DEFAULT_VESSEL})")


def bench_vessel(args: argparse.Namespace) -> Tuple[Optional[Any], Any]:
    """(boat config or None, vessel) of --config / --vessel (foka when neither is given). Raises ConfigError for
    a file that does not validate, ValueError when both are given."""
    from autopilot.vocab.config import load_vessel
    config, vessel = getattr(args, "config", None), getattr(args, "vessel", None)
    if config and vessel:
        raise ValueError(f"give --config {config} or --vessel {vessel}, not both (the boat config names its vessel)")
    if config:
        from autopilot.files.boat import load_boat_config
        cfg = load_boat_config(config)
        return cfg, load_vessel(cfg.vessel_path())
    return None, load_vessel(vessel or DEFAULT_VESSEL)
