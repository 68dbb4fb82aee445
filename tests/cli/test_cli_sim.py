"""`autopilot sim` from the command line: the summary, the JSON report, the plot and a run log a spreadsheet opens."""
import csv
import json

import pytest

from autopilot.cli.main import main


@pytest.mark.slow
def test_sim_writes_summary_report_plot_and_a_csv_log(tmp_path, repo_root, capsys):
    report, plot, log = tmp_path / "r.json", tmp_path / "p.png", tmp_path / "log"
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--vessel", "foka", "--gps-noise", "white",
               "--duration", "40", "--report", str(report), "--plot", str(plot), "--log", str(log)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "cross-track error (true position)" in out and "x real time" in out
    assert "distance from the path, corners included" in out
    r = json.loads(report.read_text())
    for key in ("mission_complete", "waypoints_reached", "waypoints_total", "sim_time_s", "wall_time_s",
                "realtime_factor", "xte_rms_m", "xte_max_m", "pos_err_rms_m", "pos_err_mae_m", "gps_err_rms_m",
                "gps_err_mae_m", "heading_err_rms_deg", "path_rms_m", "path_max_m"):
        assert key in r, key
    assert r["sim_time_s"] == pytest.approx(40.0)
    assert plot.stat().st_size > 20_000 and plot.read_bytes()[:4] == b"\x89PNG"
    (run,) = list(log.iterdir())
    with (run / "state.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert 380 <= len(rows) <= 401                    # 10 Hz for 40 s
    assert {"time_s", "north_m", "truth_north_m", "thrust_n_0", "pulse_us_1"} <= set(rows[0])
    assert rows[-1]["mode"] == "AUTO"
    assert main(["plot", str(run), "-o", str(tmp_path / "again.png")]) == 0


@pytest.mark.parametrize("argv, message", [
    (["--wind", "3"], "--wind"),
    (["--waves", "0.2,3"], "--waves"),
    (["--gps-noise", "pink"], "--gps-noise"),
])
def test_bad_options_are_refused_with_the_option_named(repo_root, capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        main(["sim", str(repo_root / "config/missions/demo.yaml"), *argv])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_mission_file_names_file_key_and_reason(tmp_path, capsys):
    bad = tmp_path / "m.yaml"
    bad.write_text("name: x\nwaypoints: [{lat_deg: 51, lon_deg: 17}]\ncruise_speed_mps: fast\n"
                   "acceptance_radius_m: 2\n")
    assert main(["sim", str(bad)]) == 2
    assert f"{bad}: cruise_speed_mps: must be a number" in capsys.readouterr().err


def test_sim_of_a_mission_check_refuses_exits_1_and_prints_why(tmp_path, capsys):
    """It used to exit 0 with "never armed" (issue 11, item 9)."""
    m = tmp_path / "too_fast.yaml"
    m.write_text("name: too-fast\nanchor: {lat_deg: 51.11, lon_deg: 17.06}\n"
                 "waypoints: [{north_m: 0, east_m: 0}, {north_m: 50, east_m: 0}]\n"
                 "cruise_speed_mps: 5.0\nacceptance_radius_m: 2\n")
    rc = main(["sim", str(m), "--vessel", "foka", "--duration", "20", "--devices", "typed"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "never armed" in err and "cruise_speed_mps: 5 m/s is faster than the vessel's hull.max_speed_mps" in err


def test_the_cli_leaves_sigpipe_ignored(repo_root):
    """With SIGPIPE at its default, a write to a socket whose peer died (pigpiod restarting under `autopilot
    run`) killed the process instead of raising the error the ESC output handles (and killed this test run)."""
    import signal
    before = signal.getsignal(signal.SIGPIPE)
    main(["check", str(repo_root / "config/vessels/foka.yaml")])
    assert signal.getsignal(signal.SIGPIPE) == before == signal.SIG_IGN


def test_model_following_a_hull_with_azimuth_pods_is_refused_not_a_traceback(repo_root, capsys):
    rc = main(["sim", str(repo_root / "config/missions/demo.yaml"), "--vessel", "wamv_pods", "--plant-vessel",
               "wamv_pods", "--follow-model", "--duration", "20"])
    assert rc == 2 and "azimuth pods" in capsys.readouterr().err
