"""A clone of the repository is all a user has: nothing in it may read from beside it."""
import re
import subprocess
from pathlib import Path

from tests.support.paths import REPO

# a path into a sibling folder: ../shared, or a shared/data path built from the repository's parent
OUTSIDE = re.compile(r"\.\./shared\b|parent\s*/\s*[\"']shared[\"']|[\"']shared[\"']\s*/\s*[\"']data[\"']")


def tracked_text_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
        paths = [REPO / p for p in out.splitlines()]
    except (OSError, subprocess.CalledProcessError):        # an export without git: walk the tree
        paths = [p for p in REPO.rglob("*") if p.is_file()
                 and not {".git", ".venv", "__pycache__"} & set(p.relative_to(REPO).parts)]
    for p in paths:
        if p.is_file() and "tests/data" not in p.relative_to(REPO).as_posix():
            try:
                yield p, p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def test_no_file_reads_or_names_a_folder_beside_the_repository():
    offenders = [f"{p.relative_to(REPO)}:{n}" for p, text in tracked_text_files()
                 for n, line in enumerate(text.splitlines(), 1)
                 if OUTSIDE.search(line) and p.name != Path(__file__).name]
    assert offenders == []


def test_the_pattern_catches_the_ways_a_path_outside_was_written():
    for line in ('DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gpsd"',
                 "test -d ../shared/data || exit 1", "SRC = REPO.parent / 'shared' / 'data'"):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("the machines are shared and noisy; DDS on shared networks")


def test_the_reference_data_is_in_the_repository_with_its_licence(reference_data):
    assert len(list((reference_data / "gpsd").glob("*.log"))) == 5
    assert len(list((reference_data / "gpsd").glob("*.log.chk"))) == 5
    assert len(list((reference_data / "t200").glob("T200-*V.csv"))) == 6
    for sub in ("gpsd", "t200"):
        assert "Licence" in (reference_data / sub / "README.md").read_text()
    assert "BSD 2-Clause" in (reference_data / "gpsd" / "COPYING").read_text()
