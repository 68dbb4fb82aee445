"""Every shell block of the manual marked as runnable without hardware runs, exactly as printed, from a clean copy
of the repository, and exits 0. The marker is an HTML comment on the line before the fence:

    <!-- ci-run -->
    ```bash
    .venv/bin/autopilot check config/boat.yaml
    ```

(CONTRIBUTING.md, "The manual"). `.venv` in the copy is the virtualenv running the tests."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow   # the quick tier leaves this file out (scripts/test.sh --quick)

MARKER = "<!-- ci-run -->"
TIMEOUT_S = 180
BLOCK = re.compile(r"^<!-- ci-run -->\n```bash\n(.*?)^```$", re.M | re.S)


def marked_blocks():
    out = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[:m.start()].count("\n") + 1
            out.append(pytest.param(m.group(1), id=f"{page.relative_to(REPO / 'docs')}:{line}"))
    return out


def _clean_copy(dest: Path) -> None:
    """The repository's files as git sees them (tracked, and new files not ignored), symlinks kept."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if name.split("/")[0] == ".venv":                      # a .venv symlink git does not ignore
            continue
        src, dst = REPO / name, dest / name
        if not src.exists() and not src.is_symlink():          # deleted in the work tree, not yet committed
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            dst.write_bytes(src.read_bytes())
            dst.chmod(src.stat().st_mode)
    (dest / ".venv").symlink_to(Path(sys.prefix))


def test_every_marker_stands_before_a_bash_block():
    for page in (REPO / "docs").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert text.count(MARKER) == len(BLOCK.findall(text)), (
            f"{page}: each {MARKER} must be on the line right before a ```bash fence")
    assert len(marked_blocks()) >= 8


@pytest.mark.parametrize("script", marked_blocks())
def test_the_marked_block_runs_as_printed(script, tmp_path):
    repo = tmp_path / "repo"
    _clean_copy(repo)
    env = dict(os.environ, PYTHONPATH=str(repo), MPLBACKEND="Agg",
               PATH=f"{repo / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"exit {done.returncode}:\n{script}\n--- stdout\n{done.stdout[-3000:]}\n" \
                                 f"--- stderr\n{done.stderr[-3000:]}"
