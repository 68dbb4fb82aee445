"""Shared test fixtures: paths to the repo, its config and the shared reference data."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared_data() -> Path:
    assert SHARED_DATA.is_dir(), f"reference data missing: {SHARED_DATA} (../shared must sit beside the repo)"
    return SHARED_DATA
