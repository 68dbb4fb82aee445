#!/usr/bin/env bash
# The static checks CI runs before the tests: ruff (lint and import order) and mypy (types; the vocabulary layer
# with mypy's strict checks). Their settings are in pyproject.toml. Any finding fails.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/ruff ] || scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
