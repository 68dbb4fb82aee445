#!/usr/bin/env bash
# Set up (with the ROS 2 extra from PyPI) and run the whole test suite. pytest's "no tests ran" is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --ros
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
