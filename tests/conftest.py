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


@pytest.fixture
def ctx():
    """A fresh rclpy Context, initialised for the test and shut down after it (ROS tests only: rclpy is imported
    here, not at collection, so the rest of the suite never needs it)."""
    import rclpy
    c = rclpy.Context()
    rclpy.init(context=c)
    yield c
    rclpy.shutdown(context=c)


# Long real-time test files declare `WALL_TIME_S = N` (their measured wall time on the 2-core machine). They are
# scheduled first, longest first, so under `pytest -n 2 --dist loadfile` (scripts/test.sh) a 7-minute file starts
# with the run instead of extending its tail. xdist would otherwise order files by their number of tests
# (--loadscope-reorder, its default), so that is turned off here: the collection order is the schedule.
def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    # the tests compose the boat as the CLI does: a boat config with `backend: sim` gets the built-in plant
    from autopilot.cli.stand_ins import register_all
    register_all()


def pytest_collection_modifyitems(session, config, items):
    def wall_s(item):
        module = getattr(item, "module", None)
        return float(getattr(module, "WALL_TIME_S", 0.0) or 0.0)

    items.sort(key=lambda item: -wall_s(item))      # stable: files stay whole and in their order


# The quick tier (`-m "not slow"`, scripts/test.sh --quick) stays quick only while slow tests are marked: a quick
# run names every unmarked test that took longer than QUICK_TEST_LIMIT_S (setup included), to be marked
# `@pytest.mark.slow` (or the file `pytestmark = pytest.mark.slow`).
QUICK_TEST_LIMIT_S = 3.0


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if "not slow" not in (config.getoption("markexpr", "") or ""):
        return
    took: dict = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            if getattr(r, "nodeid", None) and isinstance(getattr(r, "duration", None), float):
                took[r.nodeid] = took.get(r.nodeid, 0.0) + r.duration
    slow = sorted(((s, n) for n, s in took.items() if s > QUICK_TEST_LIMIT_S), reverse=True)
    if slow:
        terminalreporter.section("tests to mark slow (the quick tier)")
        for s, n in slow:
            terminalreporter.write_line(f"{s:6.1f} s  {n}")
