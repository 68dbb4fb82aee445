"""`autopilot plot` and `autopilot log ...` take the log folder (what `sim --log DIR` fills with
`<time>_<mission>/` runs) as well as a run folder: the newest run, and a note saying which."""
from __future__ import annotations

import pytest

from autopilot.cli.main import main
from tests.support.paths import REPO

OLD_RUN = "20200101T000000Z_old-run"


@pytest.fixture(scope="module")
def log_folder(tmp_path_factory):
    """A log folder holding a short simulated run and, older by its name, a run whose state.csv has no rows."""
    base = tmp_path_factory.mktemp("demo") / "demo-log"
    assert main(["sim", str(REPO / "config/missions/demo.yaml"), "--duration", "8", "--devices", "typed",
                 "--log", str(base)]) == 0
    (newest,) = list(base.iterdir())
    old = base / OLD_RUN
    old.mkdir()
    (old / "state.csv").write_text((newest / "state.csv").read_text().splitlines()[0] + "\n")
    return base, newest


def test_plot_of_the_log_folder_draws_its_newest_run_and_says_which(log_folder, tmp_path, capsys):
    base, newest = log_folder
    png = tmp_path / "p.png"
    assert main(["plot", str(base), "-o", str(png)]) == 0
    out = capsys.readouterr().out
    assert f"note: {base} is a log folder: using the newest of its 2 runs, {newest.name}" in out
    assert "has no rows" not in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_plot_of_a_run_folder_takes_it_as_given(log_folder, tmp_path, capsys):
    base, newest = log_folder
    assert main(["plot", str(newest), "-o", str(tmp_path / "p.png")]) == 0
    assert "log folder" not in capsys.readouterr().out
    assert main(["plot", str(base / OLD_RUN), "-o", str(tmp_path / "q.png")]) == 1
    assert "state.csv has no rows to plot" in capsys.readouterr().out


def test_plot_compares_against_a_log_folder_too(log_folder, tmp_path, capsys):
    base, newest = log_folder
    assert main(["plot", str(newest), str(base), "-o", str(tmp_path / "p.png")]) == 0
    assert f"using the newest of its 2 runs, {newest.name}" in capsys.readouterr().out


def test_log_recover_and_replay_take_the_log_folder(log_folder, tmp_path, capsys):
    base, newest = log_folder
    assert main(["log", "recover", str(base)]) == 0
    out = capsys.readouterr().out
    assert f"using the newest of its 2 runs, {newest.name}" in out and "already complete" in out
    assert main(["log", "replay", str(base), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert newest.name in out


@pytest.mark.parametrize("argv", [["plot"], ["log", "recover"], ["log", "replay"], ["log", "play"]])
def test_a_folder_with_no_run_says_so_without_a_traceback(tmp_path, capsys, argv):
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    assert main([*argv, str(empty)]) == 1
    said = capsys.readouterr()
    text = said.out + said.err
    assert "neither a run folder" in text and "Traceback" not in text
