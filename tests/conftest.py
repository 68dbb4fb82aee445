"""Shared test fixtures: paths to the repo, its config and the reference data kept in tests/data/."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE_DATA = REPO / "tests" / "data"      # gpsd captures and Blue Robotics' T200 tables (see their READMEs)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def reference_data() -> Path:
    """tests/data/; fails (never skips) when a folder the tests read is missing from the checkout."""
    for sub in ("gpsd", "t200"):
        assert (REFERENCE_DATA / sub).is_dir(), f"reference data missing: {REFERENCE_DATA / sub}"
    return REFERENCE_DATA
