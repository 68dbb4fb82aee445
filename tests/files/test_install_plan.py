"""autopilot/files/install_plan.py: what install.sh puts in /etc/autopilot, found without install.sh."""
from __future__ import annotations

import pytest
import yaml

from autopilot.files.install_plan import InstallPlanError, plan_install, replace_scalars, stage
from tests.support.paths import REPO

LIBRARY = REPO / "config"


def vessel_naming(tmp_path, calibration: str):
    """foka's vessel file at tmp_path/boat/v.yaml with sensors.mag.calibration_file set, and a boat.yaml
    naming it."""
    boat = tmp_path / "boat"
    boat.mkdir()
    v = yaml.safe_load((LIBRARY / "vessels" / "foka.yaml").read_text())
    v["sensors"]["mag"]["calibration_file"] = calibration
    (boat / "v.yaml").write_text(yaml.safe_dump(v))
    (boat / "boat.yaml").write_text("vessel: v.yaml\n")
    return boat


def test_a_calibration_not_made_yet_is_named_inside_etc_autopilot(tmp_path):
    boat = vessel_naming(tmp_path, "/home/pi/cal/mag.yaml")
    plan = plan_install(boat / "boat.yaml", tmp_path / "nothing-installed", LIBRARY)
    cal = plan.get("calibration/mag.yaml")
    assert cal is not None and cal.action == "later" and "`autopilot calibrate mag` writes it there" in cal.what
    assert (yaml.safe_load(plan.text["vessels/v.yaml"])["sensors"]["mag"]["calibration_file"]
            == "../calibration/mag.yaml")
    stage(plan, tmp_path / "stage")
    assert not (tmp_path / "stage" / "calibration" / "mag.yaml").exists()
    assert (tmp_path / "stage" / "boat.yaml").read_text() == "vessel: vessels/v.yaml\n"


def test_a_named_file_wins_over_the_preset_of_its_name_and_an_installed_file_over_both(tmp_path):
    boat = tmp_path / "boat"
    boat.mkdir()
    (boat / "demo.yaml").write_text("name: mine\n")
    (boat / "boat.yaml").write_text("vessel: foka\nmission: demo.yaml\n")
    plan = plan_install(boat / "boat.yaml", tmp_path / "etc", LIBRARY)
    assert plan.get("missions/demo.yaml").source == boat / "demo.yaml"
    assert plan.get("vessels/foka.yaml").source == LIBRARY / "vessels" / "foka.yaml"
    (tmp_path / "etc" / "vessels").mkdir(parents=True)
    (tmp_path / "etc" / "vessels" / "foka.yaml").write_text("edited\n")
    kept = plan_install(boat / "boat.yaml", tmp_path / "etc", LIBRARY).get("vessels/foka.yaml")
    assert kept.action == "kept" and kept.source == tmp_path / "etc" / "vessels" / "foka.yaml"


def test_two_files_for_one_installed_name_are_refused(tmp_path):
    boat = vessel_naming(tmp_path, "mag.yaml")
    (boat / "secrets").mkdir()
    (boat / "secrets" / "boat.yaml").write_text("0123456789abcdef" * 2 + "\n")    # a token named like the config
    (boat / "boat.yaml").write_text("vessel: v.yaml\ncommands: {auth: token, token_file: secrets/boat.yaml}\n")
    with pytest.raises(InstallPlanError, match="would both be installed as boat.yaml"):
        plan_install(boat / "boat.yaml", tmp_path / "etc", LIBRARY)


@pytest.mark.parametrize("text, new, expect", [
    ("vessel: foka   # preset\n", "vessels/foka.yaml", "vessel: vessels/foka.yaml   # preset\n"),
    ("vessel: 'foka'\n", "vessels/foka.yaml", "vessel: vessels/foka.yaml\n"),
    ("vessel: foka\n", "my boat: 1.yaml", 'vessel: "my boat: 1.yaml"\n'),
    ("vessel: foka\n", "true", 'vessel: "true"\n'),
])
def test_a_rewrite_changes_the_value_only(text, new, expect):
    assert replace_scalars(text, {("vessel",): new}) == expect
    assert yaml.safe_load(replace_scalars(text, {("vessel",): new}))["vessel"] == new


def test_a_rewrite_reaches_flow_and_block_mappings_and_leaves_absent_keys_alone():
    text = "commands: {auth: token, token_file: a/t}\nmavlink:\n  links: [x]\n  # key\n  signing_key_file: k/m\n"
    out = replace_scalars(text, {("commands", "token_file"): "t", ("mavlink", "signing_key_file"): "m",
                                 ("mission",): "missions/x.yaml"})
    assert out == "commands: {auth: token, token_file: t}\nmavlink:\n  links: [x]\n  # key\n  signing_key_file: m\n"


def test_the_web_password_travels_with_the_boat_config_and_a_missing_one_says_how_to_set_it(tmp_path):
    boat = vessel_naming(tmp_path, "")
    (boat / "boat.yaml").write_text("vessel: v.yaml\nweb: {listen: '0.0.0.0:8080', password_file: secrets/pw}\n")
    plan = plan_install(boat / "boat.yaml", tmp_path / "nothing-installed", LIBRARY)
    pw = plan.get("pw")
    assert pw is not None and pw.action == "later" and not pw.secret and "autopilot keys web" in pw.what
    assert yaml.safe_load(plan.text["boat.yaml"])["web"]["password_file"] == "pw"
    (boat / "secrets").mkdir()
    (boat / "secrets" / "pw").write_text("scrypt$...\n")
    plan = plan_install(boat / "boat.yaml", tmp_path / "nothing-installed", LIBRARY)
    pw = plan.get("pw")
    assert pw.action == "copy" and pw.secret and pw.mode == "0600"
