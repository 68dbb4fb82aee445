"""`autopilot log recover RUN`, `autopilot log replay RUN` and `autopilot log play RUN`.

RUN is a run directory (or its run.mcap), or a log folder holding `<time>_<mission>/` runs: then its newest run,
and a note says which.

replay: re-run the run's navigation filter on its recorded inputs (estimator_inputs.bin), optionally with
another tuning (--ekf-tuning FILE, a YAML of EkfTuning fields), and write a new run directory that
`autopilot plot` draws beside the original (see autopilot/replay/navigation.py). Exit 0 when replayed, 1 when the run
cannot be replayed (no or unreadable inputs), 2 for a malformed --ekf-tuning or --vessel file.

recover: make the run.mcap of a crashed run readable by every MCAP tool, and its run directory a rosbag2 bag.

A run killed by SIGKILL, the watchdog or a power cut leaves run.mcap without its summary and footer (see
autopilot.runlog.mcap_log). Our reader and mcap's NonSeekingReader read it as it is; Foxglove, `ros2 bag` and
`mcap.reader.make_reader` want the footer. This rewrites the readable part as a complete, indexed, compressed
file: the original is kept as run.mcap.partial and the repaired file takes its place; metadata.yaml (topics,
types, QoS from the channels' metadata, counts) is written beside it, so rosbags and `ros2 bag` open the run
directory. A complete run.mcap without metadata.yaml (a run logged before bags) only gets its metadata.yaml.
"""
from __future__ import annotations

import os
from pathlib import Path

RUN_HELP = "run directory or its run.mcap, or a log folder (its newest run)"


def _run(given: str) -> Path:
    """The run `given` names (autopilot.runlog.rundir.find_run), saying which when it picked one; raises
    FileNotFoundError with the reason."""
    from autopilot.runlog.rundir import find_run
    path, note = find_run(given)
    if note:
        print(f"note: {note}")
    return path


def register(subparsers) -> None:
    p = subparsers.add_parser("log", help="run log tools (replay a run's estimator, recover a crashed MCAP)")
    sub = p.add_subparsers(dest="log_command", metavar="ACTION")
    sub.required = True
    r = sub.add_parser("recover", help="rewrite a crashed run's run.mcap complete and indexed",
                       description="Rewrite the readable part of a crashed run's run.mcap with a summary and "
                                   "footer; keeps the original as run.mcap.partial.")
    r.add_argument("run", metavar="RUN", help=RUN_HELP)
    r.set_defaults(func=recover)
    p2 = sub.add_parser("replay", help="re-run a run's estimator on its logged inputs (e.g. with another tuning)",
                        description="Re-run the navigation filter on a run's recorded sensor inputs, with the "
                                    "run's tuning or --ekf-tuning FILE, and write a new run directory (same "
                                    "state.csv, replayed estimate); prints how far the replay is from the "
                                    "original, and from the truth of a simulated run.")
    p2.add_argument("run", metavar="RUN_DIR", help="run directory with an estimator_inputs.bin, or a log folder "
                                                   "(its newest run)")
    p2.add_argument("--ekf-tuning", metavar="FILE",
                    help="YAML of EkfTuning fields to change (the others keep the run's values)")
    p2.add_argument("--vessel", metavar="FILE", help="vessel file (default: the copy kept in RUN_DIR)")
    p2.add_argument("--out", metavar="DIR",
                    help="folder to create the replay's run directory in (default: beside RUN_DIR)")
    p2.add_argument("--control", action="store_true",
                    help="also re-run guidance and control on the replayed estimate, open loop: the replay's rows "
                         "carry the setpoints and wrench it would have asked for in AUTO")
    p2.add_argument("--ros", action="store_true",
                    help="then play the replay's run directory onto the live ROS graph at recorded speed")
    p2.add_argument("--rate", type=float, default=1.0, help="with --ros: playback speed (2 = twice as fast)")
    p2.add_argument("--delay", type=float, default=1.0, help="with --ros: seconds for subscribers to find it")
    p2.set_defaults(func=replay)
    p3 = sub.add_parser("play", help="publish a run's bag on the live ROS graph at recorded speed",
                        description="Publish every message of a run directory's run.mcap on its recorded topic, "
                                    "with the recorded QoS and stamps, at recorded speed (like `ros2 bag play`, "
                                    "without a ROS install: rclpy from PyPI is enough).")
    p3.add_argument("run", metavar="RUN", help=RUN_HELP)
    p3.add_argument("--rate", type=float, default=1.0, help="playback speed (2 = twice as fast)")
    p3.add_argument("--clock", action="store_true", help="also publish /clock from the log time (use_sim_time)")
    p3.add_argument("--delay", type=float, default=1.0,
                    help="seconds between making the publishers and the first message, for subscribers to find them")
    p3.set_defaults(func=play)


def play(args) -> int:
    """Exit 0 when played to the end (or stopped by Ctrl-C or SIGTERM: a line says how far it got), 1 when there
    is nothing to play, 2 for a bad rate."""
    if not args.rate > 0.0:
        print(f"--rate must be > 0, got {args.rate}")
        return 2
    try:
        from autopilot.ros.bag_player import run_mcap
        mcap = run_mcap(_run(args.run))
    except FileNotFoundError as e:
        print(e)
        return 1
    from autopilot.ros.bag_player import play_in_own_node
    try:
        print(f"playing {mcap} at {args.rate:g}x (Ctrl-C stops)")
        stats = play_in_own_node(mcap, rate=args.rate, clock=args.clock, delay_s=args.delay)
    except KeyboardInterrupt:
        print("stopped")
        return 0
    except (OSError, ValueError) as e:
        print(f"{mcap}: cannot be played: {e}")
        return 1
    total = sum(stats.sent.values())
    if stats.stopped:
        print(f"stopped: played {total} messages on {len(stats.sent)} topics")
        return 0
    print(f"played {total} messages on {len(stats.sent)} topics over {stats.duration_s:.1f} s of log time "
          f"(worst lateness {stats.late_max_s * 1000:.0f} ms)")
    for topic, why in sorted(stats.skipped.items()):
        print(f"  skipped {topic}: message type not installed here ({why})")
    return 0 if total else 1


def recover(args) -> int:
    from autopilot.runlog.bag_metadata import FILE_NAME, BagStats, write_metadata
    from autopilot.runlog.mcap_log import mcap_is_complete, mcap_stats, recover_mcap

    try:
        p = _run(args.run)
    except FileNotFoundError as e:
        print(e)
        return 1
    mcap = p / "run.mcap" if p.is_dir() else p
    if not mcap.is_file():
        print(f"{mcap}: not found")
        return 1
    if mcap_is_complete(mcap):
        if (mcap.parent / FILE_NAME).is_file():
            print(f"{mcap}: already complete (closed cleanly); nothing to do")
            return 0
        try:
            write_metadata(mcap.parent, mcap.name, mcap_stats(mcap))
        except (OSError, ValueError) as e:
            print(f"{mcap}: complete, but {FILE_NAME} cannot be written: {e}")
            return 1
        print(f"{mcap}: complete; wrote {FILE_NAME} (the run directory is a rosbag2 bag)")
        return 0
    partial = mcap.with_name(mcap.name + ".partial")
    tmp = mcap.with_name(mcap.name + ".recovering")
    stats = BagStats()
    try:
        n = recover_mcap(mcap, tmp, stats)
    except (OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        print(f"{mcap}: cannot recover: {e}")
        return 1
    try:
        os.replace(mcap, partial)
        os.replace(tmp, mcap)
        write_metadata(mcap.parent, mcap.name, stats)
    except OSError as e:
        print(f"{mcap}: recovered into {tmp.name}, but cannot put it in place: {e}")
        return 1
    print(f"{mcap}: recovered {n} messages (original kept as {partial.name}); wrote {FILE_NAME} (the run "
          f"directory is a rosbag2 bag)")
    return 0


def replay(args) -> int:
    import sys

    from autopilot.replay.navigation import ReplayError, replay_run, summary_lines
    from autopilot.vocab.schema import ConfigError

    try:
        run_dir = _run(args.run)
    except FileNotFoundError as e:
        print(f"error: cannot replay: {e}", file=sys.stderr)
        return 1
    try:
        result = replay_run(run_dir, out_base=args.out, tuning_file=args.ekf_tuning, vessel_file=args.vessel,
                            control=getattr(args, "control", False))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ReplayError as e:
        print(f"error: cannot replay: {e}", file=sys.stderr)
        return 1
    print("\n".join(summary_lines(result)))
    if getattr(args, "ros", False):
        import argparse
        return play(argparse.Namespace(run=str(result.run_dir), rate=args.rate, clock=False, delay=args.delay))
    return 0
