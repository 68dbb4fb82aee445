"""`autopilot bench DEVICE ...`: tools that check one device on a real Pi (gps, imu, esc).

Each device is a module here with `register(subparsers)` listed in autopilot.cli.SUBCOMMAND_MODULES
("autopilot.bringup.gps", "autopilot.bringup.imu", ...). They share one `bench` parser:

    def register(subparsers):
        p = get_bench_subparsers(subparsers).add_parser("imu", help="...")
        p.add_argument(...)
        p.set_defaults(func=run)
"""
from __future__ import annotations

import argparse


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
