"""`autopilot tune`: the file's gains are the first candidate, the best is never worse than them on the
ensemble, the search is repeatable, and its result loads as a parameter overlay."""
from __future__ import annotations

import json

import pytest

from autopilot.cli.main import main
from autopilot.files.tunables import load_with_overlay
from autopilot.vocab.config import load_mission, load_vessel

SPEC = """name: tune-test
missions: [straight_line]
mismatch: ["random=1.0"]
seeds: [1]
duration_s: 20
"""


@pytest.mark.slow
def test_tune_writes_gains_no_worse_than_the_file_and_repeats_itself(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    results = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        assert main(["tune", str(spec), "--vessel", "wamv", "--trials", "3", "--workers", "1",
                     "--out", str(out)]) == 0
        trials = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
        results.append(trials)
        assert len(trials) == 3
        wamv = load_vessel("wamv")
        assert trials[0]["params"]["HDG_OMEGA"] == wamv.control.heading.omega_n_rps     # the file's own first
        best = min(t["cost"] for t in trials)
        assert best <= trials[0]["cost"]
        store = load_with_overlay(wamv, _straight_line(), out / "tuned.params.yaml")
        chosen = min(trials, key=lambda t: t["cost"])["params"]
        assert store.value("HDG_OMEGA") == chosen["HDG_OMEGA"]
    assert results[0] == results[1]                                                 # seeded: the same search
    assert "cost with the file's gains" in capsys.readouterr().out


def _straight_line():
    from autopilot.vocab.config import CONFIG_DIR
    return load_mission(CONFIG_DIR / "missions" / "straight_line.yaml")
