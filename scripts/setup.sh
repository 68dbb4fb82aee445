#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv and install the autopilot into it.
# Usage: scripts/setup.sh [--ros]   (--ros also installs rclpy and the standard messages from PyPI, MAVProxy and
# Ray: laptops/CI)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] < (3, 13) else 1)'; then
    echo "error: Python 3.10-3.12 is needed; $("$PY" --version 2>&1) found. Set PYTHON=/path/to/python3.x" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv || { echo "error: cannot create a venv; on Debian/Ubuntu: sudo apt install python3-venv" >&2; exit 1; }
fi
extras="test,pca9685"
[ "${1:-}" = "--ros" ] && extras="test,ros,gcs,campaign,pca9685"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[${extras}]"
# tf2_msgs (TFMessage for /tf) has no wheel: build it from the message definition with the ROS build tools
if [ "${1:-}" = "--ros" ]; then
    scripts/build_tf2_msgs.sh
fi
