"""`autopilot log recover RUN`: make the run.mcap of a crashed run readable by every MCAP tool.

A run killed by SIGKILL, the watchdog or a power cut leaves run.mcap without its summary and footer (see
autopilot.runlog.mcap_log). Our reader and mcap's NonSeekingReader read it as it is; Foxglove, `ros2 bag` and
`mcap.reader.make_reader` want the footer. This rewrites the readable part as a complete, indexed, compressed
file: the original is kept as run.mcap.partial and the repaired file takes its place.
"""
from __future__ import annotations

import os
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("log", help="run log tools (recover the MCAP of a crashed run)")
    sub = p.add_subparsers(dest="log_command", metavar="ACTION")
    sub.required = True
    r = sub.add_parser("recover", help="rewrite a crashed run's run.mcap complete and indexed",
                       description="Rewrite the readable part of a crashed run's run.mcap with a summary and "
                                   "footer; keeps the original as run.mcap.partial.")
    r.add_argument("run", metavar="RUN", help="run directory or its run.mcap")
    r.set_defaults(func=recover)


def recover(args) -> int:
    from autopilot.runlog.mcap_log import mcap_is_complete, recover_mcap

    p = Path(args.run)
    mcap = p / "run.mcap" if p.is_dir() else p
    if not mcap.is_file():
        print(f"{mcap}: not found")
        return 1
    if mcap_is_complete(mcap):
        print(f"{mcap}: already complete (closed cleanly); nothing to do")
        return 0
    partial = mcap.with_name(mcap.name + ".partial")
    tmp = mcap.with_name(mcap.name + ".recovering")
    try:
        n = recover_mcap(mcap, tmp)
    except (OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        print(f"{mcap}: cannot recover: {e}")
        return 1
    os.replace(mcap, partial)
    os.replace(tmp, mcap)
    print(f"{mcap}: recovered {n} messages (original kept as {partial.name})")
    return 0
