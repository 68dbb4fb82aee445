"""`autopilot --version`: the package's version, exit 0, from an installed package or a bare source tree."""
import re
import subprocess
import sys
from importlib import metadata

import pytest

from autopilot.cli import main as cli_main
from tests.support.paths import REPO


def _pyproject_version() -> str:
    text = (REPO / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


@pytest.mark.slow
def test_version_prints_the_package_version_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "autopilot.cli", "--version"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"autopilot {metadata.version('boat-autopilot')}"


def test_version_of_a_source_tree_never_installed_comes_from_pyproject(monkeypatch, capsys):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", not_installed)
    with pytest.raises(SystemExit) as e:
        cli_main.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"autopilot {_pyproject_version()}"
