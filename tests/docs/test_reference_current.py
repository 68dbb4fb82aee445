"""The reference pages (docs/reference/*.md) are what scripts/gen_reference.py writes from the code today: a key,
an option or a topic added without regenerating them fails here."""
import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO

UPDATE = "run `python scripts/gen_reference.py` to update"


@pytest.mark.slow
def test_the_committed_reference_is_what_the_code_generates(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, str(REPO / "scripts" / "gen_reference.py"), "--out", str(tmp_path)],
                   check=True, env=env, cwd=tmp_path, capture_output=True, timeout=120)
    committed_dir = REPO / "docs" / "reference"
    generated = sorted(p.name for p in tmp_path.glob("*.md"))
    committed = sorted(p.name for p in committed_dir.glob("*.md"))
    assert generated == committed, f"docs/reference/ holds {committed}, the code makes {generated}: {UPDATE}"
    stale = [name for name in generated
             if (tmp_path / name).read_text(encoding="utf-8") != (committed_dir / name).read_text(encoding="utf-8")]
    assert not stale, f"docs/reference/{', '.join(stale)} differ from the code: {UPDATE}"


def test_the_pages_reach_nested_keys_every_command_and_every_parameter():
    from autopilot.files.tunables import TUNABLES
    ref = REPO / "docs" / "reference"
    vessel = (ref / "vessel.md").read_text(encoding="utf-8")
    boat = (ref / "boat.md").read_text(encoding="utf-8")
    cli = (ref / "cli.md").read_text(encoding="utf-8")
    params = (ref / "parameters.md").read_text(encoding="utf-8")
    assert "`sensors.mag.calibration_file`" in vessel and "`thrusters[].gpio`" in vessel
    assert "`failsafe.gnss.loss_timeout_s`" in vessel
    assert "`esc.backend`" in boat and "`mavlink.links`" in boat
    for command in ("autopilot sim", "autopilot check", "autopilot bench imu", "autopilot bench esc",
                    "autopilot calibrate mag", "autopilot identify hull", "autopilot log replay"):
        assert f"`{command}`" in cli, command
    assert "`--emulated`" in cli
    assert all(f"`{t.name}`" in params for t in TUNABLES)
