#!/usr/bin/env bash
# Set up (first time) and fly the demo survey mission in the built-in simulator; prints the summary and
# writes demo.png (plot), demo.json (report) and demo-log/ (CSV of the run).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/autopilot ] || scripts/setup.sh
exec .venv/bin/autopilot sim config/missions/demo.yaml --vessel foka --wind 3,90 --current 0.2,0 \
    --waves 0.2,3,90 --plot demo.png --report demo.json --log demo-log "$@"
