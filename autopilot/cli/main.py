"""The `autopilot` command: one sub-command per job, each living in its own module.

A sub-command module exposes `register(subparsers)`, which adds its parser and sets `func` to a callable
taking the parsed arguments and returning the process exit code. Modules are imported lazily so that
`autopilot --help` and the sim never import hardware or ROS libraries.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path

from autopilot.cli.stand_ins import register_all

# (module, what it adds). Add a line here to add a sub-command.
SUBCOMMAND_MODULES = (
    "autopilot.cli.sim",            # autopilot sim MISSION ...
    "autopilot.cli.check",          # autopilot check --config FILE [--mission FILE]
    "autopilot.cli.plot",           # autopilot plot LOG|LOG_FOLDER [-o PNG]
    "autopilot.cli.log",            # autopilot log recover|replay|play RUN|LOG_FOLDER
    "autopilot.bringup.gps",          # autopilot bench gps (--port DEV | --config FILE | --emulated) [--json]
    "autopilot.bringup.imu",          # autopilot bench imu [--bus N | --config FILE] [--emulated] [--json]
    "autopilot.bringup.esc",          # autopilot bench esc [--gpio L,R | --config FILE] [--emulated] [--test ...]
    "autopilot.cli.run",            # autopilot run --config FILE [--mission FILE]
    "autopilot.cli.command",        # autopilot command --config FILE mode RTL
    "autopilot.cli.status",         # autopilot status --config FILE [--json]
    "autopilot.cli.keys",           # autopilot keys token --config FILE
    "autopilot.cli.calibrate",      # autopilot calibrate mag (--bus N | --from-log LOG | --sim) ...
    "autopilot.cli.identify",       # autopilot identify thrust BENCH.csv / identify hull RUN_DIR... --vessel F
    "autopilot.cli.campaign",       # autopilot campaign SPEC.yaml [--ray auto] / campaign report DIR [DIR_B]
    "autopilot.cli.tune",           # autopilot tune SPEC.yaml --vessel FILE [--trials N]
    "autopilot.cli.hil",            # autopilot hil serve --config FILE / hil discovery --pc-ip A --pi-ip B
)


DISTRIBUTION = "boat-autopilot"          # the [project] name in pyproject.toml


def package_version() -> str:
    """The installed distribution's version (importlib.metadata); for a source tree that was never installed,
    the `version` in pyproject.toml beside the package; "unknown" when neither says."""
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    try:
        text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = re.search(r"^version\s*=\s*[\"']([^\"']+)[\"']", project.group(1), re.M) if project else None
    return found.group(1) if found else "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autopilot",
                                     description="Onboard autopilot for small Raspberry Pi boats.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}",
                        help="print the autopilot's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_all()
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    # SIGPIPE stays ignored (Python's default): with SIG_DFL a write to a socket whose peer died (pigpiod
    # restarting under `autopilot run`) would kill the process instead of raising an error the ESC output
    # handles. `autopilot ... | head` closing our stdout ends quietly here instead.
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")      # nothing more reaches the closed pipe, not even at exit
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
