#!/usr/bin/env bash
# check_aarch64.sh -- proof, without a Raspberry Pi, that the autopilot installs on one: every runtime
# dependency (pyproject's [project].dependencies and the pca9685 extra; the kernel-PWM ESC backend needs no
# package) resolves for Linux aarch64 on CPython 3.10, 3.11 and 3.12 from wheels alone, so `pip install` on a
# Pi compiles nothing. ROS 2 is not here: a Pi takes rclpy from its system ROS 2 (no aarch64 wheels on PyPI).
#
#   bash scripts/check_aarch64.sh            exit 0: all resolve; 1: a dependency needs compiling (named);
#                                            2: the package index cannot be reached
#
# For each Python version it runs `pip download --only-binary=:all:` for the aarch64 manylinux platforms and
# prints, per distribution, the wheel's tags (py3-none-any: pure Python). Uses the pip and index that pip is
# configured with.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The requirements, one per line, from pyproject.toml (tomllib: Python >= 3.11; the CI's venv has it).
"$PY" - >"$TMP/requirements.txt" <<'EOF'
import sys
try:
    import tomllib
except ImportError:
    sys.exit("check_aarch64.sh: needs Python >= 3.11 to read pyproject.toml (set PYTHON=python3.11)")
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
for req in project["dependencies"] + project["optional-dependencies"]["pca9685"]:
    print(req)
EOF

PLATFORMS=(--platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64
           --platform linux_aarch64)
status=0
for ver in 3.10 3.11 3.12; do
  dest="$TMP/cp${ver/./}"
  mkdir -p "$dest"
  if "$PY" -m pip download --quiet --disable-pip-version-check --only-binary=:all: "${PLATFORMS[@]}" \
       --implementation cp --python-version "$ver" --dest "$dest" -r "$TMP/requirements.txt" \
       >"$dest.log" 2>&1; then
    echo "Python $ver, linux aarch64: every dependency has a wheel"
    for whl in "$dest"/*.whl; do
      name=$(basename "$whl" .whl)
      dist=${name%%-*}
      rest=${name#*-}
      version=${rest%%-*}
      tags=${rest#*-}
      printf '  %-36s %-12s %s\n' "$dist" "$version" "$tags"
    done
  else
    missing=$(grep -o 'No matching distribution found for [^ ]*' "$dest.log" | sed 's/.* for //' | sort -u || true)
    if [ -n "$missing" ]; then
      echo "Python $ver, linux aarch64: FAIL: no aarch64 wheel (a Pi would have to compile): $missing"
      status=1
    elif grep -qiE 'connection|resolve host|timed out|network is unreachable' "$dest.log"; then
      echo "check_aarch64.sh: the package index cannot be reached:" >&2
      tail -n 3 "$dest.log" >&2
      exit 2
    else
      echo "Python $ver, linux aarch64: FAIL: pip could not resolve the dependencies:"
      grep -v '^WARNING' "$dest.log" | tail -n 5
      status=1
    fi
  fi
done
if [ "$status" = 0 ]; then
  echo "PASS: the runtime dependencies install from wheels on Linux aarch64, CPython 3.10-3.12"
else
  echo "FAIL: see above"
fi
exit "$status"
