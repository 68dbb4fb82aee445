"""`autopilot plot LOG` and `autopilot log recover RUN` on finished and crashed runs."""
from __future__ import annotations

import math
import os

import matplotlib.image as mpimg
import pytest
from mcap.reader import make_reader

from autopilot.cli.main import main
from autopilot.files.mission_files import load_mission_file
from autopilot.guidance.path_following import mission_frame, point_to_ned
from autopilot.runlog import RunLogger, state_columns
from autopilot.runlog.mcap_log import mcap_is_complete, read_mcap
from tests.support.paths import REPO

DEMO = REPO / "config" / "missions" / "demo.yaml"
FOKA = REPO / "config" / "vessels" / "foka.yaml"


def survey_run(base, seconds=120.0):
    """A run that drives the demo survey's first legs (a kinematic boat, enough to draw)."""
    m = load_mission_file(DEMO)
    frame = mission_frame(m)
    wps = [point_to_ned(p, frame) for p in m.waypoints]
    n, e = point_to_ned(m.start.point, frame)
    hdg, wp = 45.0, 0
    log = RunLogger(base, FOKA, DEMO, rate_hz=10, realtime=False)
    for k in range(int(seconds * 10)):
        t = 0.1 * k
        tn, te = wps[wp]
        if math.hypot(tn - n, te - e) < 2.0 and wp + 1 < len(wps):
            wp += 1
            log.event(t, "waypoint", f"reached waypoint {wp - 1}")
        ref = math.degrees(math.atan2(te - e, tn - n)) % 360
        hdg += max(-3.0, min(3.0, (ref - hdg + 180) % 360 - 180))
        n += 0.08 * math.cos(math.radians(hdg))
        e += 0.08 * math.sin(math.radians(hdg))
        r = {c: 0.0 for c in state_columns(2, simulation=True)}
        r.update(time_s=t, mode="AUTO" if t > 5 else "HOLD", armed=True, north_m=n + 0.2, east_m=e,
                 heading_deg=hdg % 360, surge_mps=0.8, heading_ref_deg=ref, speed_ref_mps=0.8,
                 xte_m=0.3 * math.sin(t / 5), waypoint_index=wp, thrust_n_0=10 + math.sin(t),
                 thrust_n_1=10 - math.sin(t), truth_north_m=n, truth_east_m=e, truth_heading_deg=hdg % 360)
        log.log_cycle(t, r)
    log.event(60.0, "failsafe", "gps loss: dead reckoning")
    log.close()
    return log.run_dir


def test_plot_draws_a_run_to_png(tmp_path, capsys):
    run_dir = survey_run(tmp_path / "runs")
    assert main(["plot", str(run_dir)]) == 0
    out = run_dir / "plot.png"
    assert f"{out}: 1200 rows, 119.9 s" in capsys.readouterr().out
    img = mpimg.imread(out)
    assert img.shape[0] > 800 and img.shape[1] > 1200
    # not a blank canvas: plenty of non-white pixels (tracks, grid, text)
    assert (img[..., :3].min(axis=2) < 0.9).mean() > 0.05


def test_plot_of_a_crashed_run_and_of_a_state_csv_path(tmp_path, capsys):
    run_dir = survey_run(tmp_path / "runs", seconds=30.0)
    (run_dir / "meta.json").write_text((run_dir / "meta.json").read_text().replace('"closed_utc"', '"x"'))
    with open(run_dir / "state.csv", "a") as f:
        f.write("30.0,AUTO,1,3")                         # a cut last line
    out = tmp_path / "crash.png"
    assert main(["plot", str(run_dir / "state.csv"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "300 rows" in text and "did not close cleanly" in text and out.stat().st_size > 10_000


def test_plot_without_rows_or_directory_fails_clearly(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nope")]) == 1
    assert "not found" in capsys.readouterr().out
    log = RunLogger(tmp_path / "runs")
    log.close()
    assert main(["plot", str(log.run_dir)]) == 1
    assert "has no rows to plot" in capsys.readouterr().out


@pytest.mark.slow
def test_plot_draws_further_runs_over_the_first(tmp_path, capsys):
    first = survey_run(tmp_path / "a", seconds=40.0)
    second = survey_run(tmp_path / "b", seconds=40.0)
    alone, pair = tmp_path / "alone.png", tmp_path / "pair.png"
    assert main(["plot", str(first), "-o", str(alone)]) == 0
    assert main(["plot", str(first), str(second), "-o", str(pair)]) == 0
    a, b = mpimg.imread(alone), mpimg.imread(pair)
    assert a.shape == b.shape and (abs(a - b).max(axis=2) > 0.1).mean() > 0.002     # the second run is drawn
    capsys.readouterr()
    assert main(["plot", str(first), str(tmp_path / "nope"), "-o", str(pair)]) == 1
    assert "nope: not found" in capsys.readouterr().out


def test_log_recover_completes_a_cut_mcap(tmp_path, capsys):
    run_dir = survey_run(tmp_path / "runs", seconds=20.0)
    mcap = run_dir / "run.mcap"
    whole = read_mcap(mcap)
    size = mcap.stat().st_size
    os.truncate(mcap, int(size * 0.7))                    # what a power cut leaves
    cut = read_mcap(mcap)
    assert cut.cut_tail and 0 < len(cut.messages) < len(whole.messages)
    with open(mcap, "rb") as f, pytest.raises(Exception):
        make_reader(f).get_summary()                      # the stock seeking reader wants a footer

    assert main(["log", "recover", str(run_dir)]) == 0
    assert f"recovered {len(cut.messages)} messages" in capsys.readouterr().out
    assert mcap_is_complete(mcap) and (run_dir / "run.mcap.partial").stat().st_size == int(size * 0.7)
    with open(mcap, "rb") as f:
        r = make_reader(f)
        topics = [ch.topic for _s, ch, _m in r.iter_messages()]
    assert len(topics) == len(cut.messages) and "/odometry/filtered" in topics
    from rosbags.rosbag2 import Reader  # metadata.yaml rewritten for what survived
    with Reader(run_dir) as bag:
        assert bag.message_count == len(cut.messages)
        assert sum(1 for _ in bag.messages()) == len(cut.messages)
    assert main(["log", "recover", str(run_dir)]) == 0
    assert "already complete" in capsys.readouterr().out


def test_log_recover_gives_a_complete_run_without_metadata_its_metadata(tmp_path, capsys):
    run_dir = survey_run(tmp_path / "runs", seconds=5.0)
    meta = run_dir / "metadata.yaml"
    written_at_close = meta.read_text()
    meta.unlink()                                        # as a run logged before bags has none
    assert main(["log", "recover", str(run_dir)]) == 0
    assert "wrote metadata.yaml" in capsys.readouterr().out
    assert meta.read_text() == written_at_close
