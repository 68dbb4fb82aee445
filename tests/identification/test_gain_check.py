"""The gain check behind `identify hull --out`: the derived gains and the vessel file's flown on the identified
model, the better kept per group (heading, speed, lookahead), and the written file says which and why."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from autopilot.files.check import check_config
from autopilot.identification.gain_check import check_gains, file_gains
from autopilot.identification.hull import derived_gains
from autopilot.vocab.config import CONFIG_DIR, load_vessel
from estimation.identification.hull_least_squares import zeta_of_hull
from hil.sim import gain_flights

FOKA_FILE = CONFIG_DIR / "vessels" / "foka.yaml"
# a user's first guess: a slow, underdamped heading loop, a sluggish speed loop
POOR = {"heading_omega_n_rps": 0.5, "heading_zeta": 0.5, "speed_kp_per_s": 0.2, "speed_ki_per_s2": 0.01,
        "lookahead_hull_lengths": 3.0}
# derived gains gone wrong: fast and hardly damped (a model whose yaw inertia came out far too small)
AGGRESSIVE = {"heading_omega_n_rps": 1.5, "heading_zeta": 0.3, "speed_kp_per_s": 1.0, "speed_ki_per_s2": 0.1,
              "lookahead_hull_lengths": 3.0}


@pytest.fixture(scope="module")
def foka():
    return load_vessel(str(FOKA_FILE))


def test_derived_gains_that_fly_better_than_a_poor_guess_are_kept(foka):
    derived = derived_gains(zeta_of_hull(foka.hull), foka)
    gc = check_gains(foka, derived, POOR, flights=gain_flights)
    assert gc.kept["heading"] == "derived" and gc.kept["speed"] == "derived", gc.why
    assert gc.gains["heading_omega_n_rps"] == derived["heading_omega_n_rps"]
    assert gc.gains["speed_kp_per_s"] == derived["speed_kp_per_s"]
    d, f = gc.figures["heading derived"], gc.figures["heading file"]
    assert d["score"] < f["score"] and d["pm_rest_deg"] >= 45.0
    assert gc.figures["speed derived"]["speed_err_rms_mps"] < gc.figures["speed file"]["speed_err_rms_mps"]
    assert "it flies no worse" in gc.why["heading"] and f"{d['overshoot_deg']:.2f} deg" in gc.why["heading"]
    assert gc.kept["lookahead"] in ("derived", "file") and gc.cpu_s < 10.0


def test_aggressive_derived_heading_gains_are_refused_for_the_files(foka):
    gc = check_gains(foka, AGGRESSIVE, flights=gain_flights)               # filed: FOKA's own control section
    assert gc.kept["heading"] == "file", gc.why
    assert gc.gains["heading_omega_n_rps"] == foka.control.heading.omega_n_rps
    assert gc.gains["heading_zeta"] == foka.control.heading.zeta
    d, f = gc.figures["heading derived"], gc.figures["heading file"]
    assert d["overshoot_deg"] > f["overshoot_deg"] + 3.0          # the case is real: it flies worse
    assert d["pm_rest_deg"] < 45.0 and "phase margin" in gc.why["heading"]
    assert gc.kept["speed"] == gc.kept["lookahead"] == "same"


# ---------------------------------------------------------------------------------------------- the writer
@pytest.fixture(scope="module")
def foka_report(foka):
    """An identification of FOKA's own hull (noiseless runs, least squares)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_constrained_fit import _ident_run

    from autopilot.identification.hull import identify
    return identify([_ident_run(foka, 1, "fit")], [_ident_run(foka, 2, "validate")], foka, method="ls")


def _with_poor_gains(text: str) -> str:
    text = re.sub(r"(?m)^(\s+heading:\s*\{)omega_n_rps:\s*[^,]+,\s*zeta:\s*[^,}]+",
                  rf"\g<1>omega_n_rps: {POOR['heading_omega_n_rps']}, zeta: {POOR['heading_zeta']}", text)
    return re.sub(r"(?m)^(\s+speed:\s*\{)kp_per_s:\s*[^,]+,\s*ki_per_s2:\s*[^,}]+",
                  rf"\g<1>kp_per_s: {POOR['speed_kp_per_s']}, ki_per_s2: {POOR['speed_ki_per_s2']}", text)


@pytest.mark.slow
def test_the_file_written_holds_the_derived_gains_when_they_fly_better(foka_report, tmp_path):
    from autopilot.identification.hull import check_report_gains, write_vessel
    text = _with_poor_gains(FOKA_FILE.read_text())
    guess_path = tmp_path / "guess.yaml"
    guess_path.write_text(text)
    guess = load_vessel(str(guess_path))
    assert guess.control.heading.zeta == POOR["heading_zeta"]       # the edit took
    check_report_gains(guess, foka_report, gain_flights)
    assert foka_report.gain_check.kept["heading"] == "derived"
    out = write_vessel(tmp_path / "identified.yaml", text, foka_report)
    new = load_vessel(str(out))
    assert new.control.heading.omega_n_rps == foka_report.gains["heading_omega_n_rps"]
    assert new.control.heading.zeta == foka_report.gains["heading_zeta"]
    heading_line = next(ln for ln in out.read_text().splitlines() if ln.strip().startswith("heading:"))
    assert "the gain check kept it" in heading_line and "overshoot" in heading_line
    assert foka_report.as_dict()["gains"]["heading_zeta"] == new.control.heading.zeta
    checked = check_config(out)
    assert checked.ok, checked.problems


@pytest.mark.slow
def test_the_file_written_holds_the_guess_gains_and_says_why_when_the_derived_fly_worse(foka, foka_report,
                                                                                       tmp_path, monkeypatch):
    from autopilot.identification.hull import check_report_gains, write_vessel
    monkeypatch.setattr(foka_report, "gains", dict(foka_report.gains, heading_omega_n_rps=1.5, heading_zeta=0.3))
    check_report_gains(foka, foka_report, gain_flights)
    gc = foka_report.gain_check
    assert gc.kept["heading"] == "file"
    out = write_vessel(tmp_path / "identified.yaml", FOKA_FILE.read_text(), foka_report)
    new = load_vessel(str(out))
    assert new.control.heading.omega_n_rps == foka.control.heading.omega_n_rps
    assert new.control.heading.zeta == foka.control.heading.zeta
    written = out.read_text()
    heading_line = next(ln for ln in written.splitlines() if ln.strip().startswith("heading:"))
    assert "kept from the file, not the derived omega_n 1.5, zeta 0.3" in heading_line
    overshoot = gc.figures["heading derived"]["overshoot_deg"]
    assert "phase margin" in heading_line and f"{overshoot:.2f} deg" in heading_line
    assert "heading the file's" in written                           # the header says it too
    d = foka_report.as_dict()
    assert d["gains"]["heading_zeta"] == foka.control.heading.zeta and d["derived_gains"]["heading_zeta"] == 0.3
    checked = check_config(out)
    assert checked.ok, checked.problems


@pytest.mark.slow
def test_without_the_check_the_derived_gains_are_written_and_the_report_says_it_was_not_run(foka_report, tmp_path):
    from autopilot.cli.identify_hull import format_report
    from autopilot.identification.hull import write_vessel
    foka_report.gain_check = None
    out = write_vessel(tmp_path / "identified.yaml", FOKA_FILE.read_text(), foka_report)
    assert load_vessel(str(out)).control.heading.omega_n_rps == foka_report.gains["heading_omega_n_rps"]
    assert "no gain check" in out.read_text()
    assert "gain check: not run (--no-gain-check)" in format_report(foka_report)
    assert file_gains(load_vessel(str(out)))["heading_zeta"] == foka_report.gains["heading_zeta"]
