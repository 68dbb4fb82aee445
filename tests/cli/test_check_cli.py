"""`autopilot check --config FILE`: the file is an option (the bare positional still works, with a note), every
schema mistake of every file is listed in one go, and the phase-margin note never contradicts itself."""
from __future__ import annotations

import pytest
import yaml

from autopilot.cli.main import main
from autopilot.vocab.config import load_vessel
from autopilot.vocab.schema import ConfigError
from tests.support.paths import REPO

FOKA = REPO / "config" / "vessels" / "foka.yaml"
DEMO = REPO / "config" / "missions" / "demo.yaml"


def vessel_file(tmp_path, edit=None, name="vessel.yaml"):
    data = yaml.safe_load(FOKA.read_text())
    if edit:
        edit(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def three_mistakes(data):
    data["hull"]["mass_kg"] = "heavy"
    data["hull"]["colour"] = "red"
    data["thrusters"][1]["gpio"] = 99


def test_check_takes_the_file_as_config_option(tmp_path, capsys):
    assert main(["check", "--config", str(vessel_file(tmp_path)), "--mission", str(DEMO)]) == 0
    out, err = capsys.readouterr()
    assert "check: OK: vessel foka" in out
    assert "deprecated" not in err


def test_the_bare_file_still_works_with_one_note_to_use_config(tmp_path, capsys):
    v = vessel_file(tmp_path)
    assert main(["check", str(v), "--mission", str(DEMO)]) == 0
    out, err = capsys.readouterr()
    assert "check: OK: vessel foka" in out
    notes = [ln for ln in err.splitlines() if ln.strip()]
    assert len(notes) == 1 and "deprecated" in notes[0] and f"--config {v}" in notes[0]


@pytest.mark.parametrize("argv, says", [
    ([], "--config FILE"),
    (["a.yaml", "--config", "b.yaml"], "once"),
])
def test_no_file_or_two_files_is_a_usage_error(capsys, argv, says):
    assert main(["check", *argv]) == 2
    assert says in capsys.readouterr().err


def test_every_schema_mistake_of_a_vessel_file_is_listed_in_one_run(tmp_path, capsys):
    v = vessel_file(tmp_path, three_mistakes)
    assert main(["check", "--config", str(v)]) == 1
    out = capsys.readouterr().out.splitlines()
    problems = [ln for ln in out if ln.startswith(str(v))]
    assert any(ln.startswith(f"{v}: hull.colour: unknown key") for ln in problems), out
    assert any(ln.startswith(f"{v}: hull.mass_kg: must be a number") for ln in problems), out
    assert any(ln.startswith(f"{v}: thrusters[1].gpio: must be at most 53") for ln in problems), out
    assert len(problems) == 3
    assert "check: 3 problems found; nothing started" in out


def test_a_boat_config_and_its_vessel_have_all_their_mistakes_listed_together(tmp_path, capsys):
    v = vessel_file(tmp_path, three_mistakes)
    boat = tmp_path / "boat.yaml"
    boat.write_text(f"vessel: {v}\nbackend: hw\nros: off\nesc: {{backend: pigpio, pigpio_port: 0}}\n"
                    f"logging: {{rate_hz: fast}}\n")
    assert main(["check", "--config", str(boat)]) == 1
    out = capsys.readouterr().out
    assert f"{boat}: esc.pigpio_port: must be at least 1" in out
    assert f"{boat}: logging.rate_hz: must be a number" in out
    assert f"{v}: hull.mass_kg: must be a number" in out and f"{v}: thrusters[1].gpio:" in out
    assert "check: 5 problems found" in out


def test_every_mistake_of_a_mission_file_is_listed(tmp_path, capsys):
    data = yaml.safe_load(DEMO.read_text())
    data["cruise_speed_mps"] = "fast"
    data["acceptance_radius_m"] = -1
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump(data))
    assert main(["check", "--config", str(vessel_file(tmp_path)), "--mission", str(m)]) == 1
    out = capsys.readouterr().out
    assert f"{m}: cruise_speed_mps: must be a number" in out and f"{m}: acceptance_radius_m:" in out


def test_loaders_used_elsewhere_still_raise_the_first_mistake_only(tmp_path):
    v = vessel_file(tmp_path, three_mistakes)
    with pytest.raises(ConfigError) as e:
        load_vessel(v)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{v}: hull.colour: unknown key")
    with pytest.raises(ConfigError) as e:
        load_vessel(v, all_errors=True)
    assert e.value.key == "hull.colour" and len(str(e.value).splitlines()) == 3


def test_a_phase_margin_just_short_of_45_deg_is_not_printed_as_45(tmp_path, capsys):
    """zeta 1.115 gives foka 44.75 deg at its top speed of 1.8 m/s: it printed "phase margin 45 deg ... below
    45 deg; 45 deg is kept up to 1.8 m/s"."""
    v = vessel_file(tmp_path, lambda d: d["control"]["heading"].update(zeta=1.115))
    main(["check", "--config", str(v)])
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "under way" in ln]
    assert "phase margin 44.8 deg at 1.8 m/s" in line and "warning: below 45 deg" in line
    assert "45 deg is kept up to 1.77 m/s" in line


def test_the_margin_text_never_rounds_up_onto_the_limit():
    from autopilot.files.check import _margin_text
    assert _margin_text(44.96) == "44.9 deg"
    assert _margin_text(45.0) == "45.0 deg" and _margin_text(57.26) == "57.3 deg"
