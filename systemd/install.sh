#!/usr/bin/env bash
# install.sh -- install the boat autopilot as a systemd service on Raspberry Pi OS or Ubuntu (run as root).
#
#   sudo systemd/install.sh [--dry-run] [--config BOAT.yaml] [--prefix /opt/autopilot] [--ros-distro jazzy]
#                           [--pip-ros] [--no-apt] [--user autopilot]
#
# What it does (each step checks first, so running it again only repairs what is missing):
#   1. apt: python3-venv (and pip) if the system Python cannot make a venv (skip with --no-apt).
#   2. Groups dialout, i2c, gpio (created when missing) and a udev rule giving /dev/i2c-* and /dev/gpiomem to
#      them; the system user `autopilot` (home /var/lib/autopilot, no login shell) in those groups.
#   3. A venv at PREFIX/venv with --system-site-packages, so it sees the system's ROS 2 rclpy, and the project
#      pip-installed into it (with --pip-ros: rclpy and messages from PyPI instead of a system ROS).
#   4. /etc/autopilot/ros.env from /opt/ros/<distro>/setup.bash (the PYTHONPATH, LD_LIBRARY_PATH and
#      AMENT_PREFIX_PATH rclpy needs), regenerated on every run.
#   5. /etc/autopilot/: vessels/, missions/, boat.yaml and autopilot.env copied from the repository -- never over
#      a file already there (your edits stay). A vessel preset name in boat.yaml (`vessel: foka`) becomes the
#      installed file (`vessel: vessels/foka.yaml`), since presets are not part of the installed package.
#   6. autopilot.service into /etc/systemd/system, daemon-reload, enabled (with pigpiod.service); not started.
#   7. `autopilot check` on the installed config; a problem is reported, the install still completes.
# --dry-run prints every command and file it would write and changes nothing (root not needed).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(dirname "$SCRIPT_DIR")
PREFIX=/opt/autopilot
ETC=/etc/autopilot
STATE=/var/lib/autopilot
UNIT_DIR=/etc/systemd/system
UDEV_RULE=/etc/udev/rules.d/60-autopilot.rules
USER_NAME=autopilot
GROUPS_NEEDED=(dialout i2c gpio)
BOAT_CONFIG=""
ROS_DISTRO_WANTED=""
PIP_ROS=0
USE_APT=1
DRY_RUN=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --config) BOAT_CONFIG=${2:?--config needs a file}; shift ;;
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift ;;
    --ros-distro) ROS_DISTRO_WANTED=${2:?--ros-distro needs a name}; shift ;;
    --pip-ros) PIP_ROS=1 ;;
    --no-apt) USE_APT=0 ;;
    --user) USER_NAME=${2:?--user needs a name}; shift ;;
    --src) SRC=${2:?--src needs the repository directory}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
VENV=$PREFIX/venv

say() { printf '==> %s\n' "$*"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
# Run a command, or print it under --dry-run.
run() {
  if [ "$DRY_RUN" = 1 ]; then printf '+'; printf ' %q' "$@"; printf '\n'; else "$@"; fi
}
# Write stdin to a file (mode $2), or show what would be written under --dry-run.
write_file() {
  local dest=$1 mode=$2 tmp
  if [ "$DRY_RUN" = 1 ]; then
    printf '+ write %s (mode %s):\n' "$dest" "$mode"; sed 's/^/|   /'
  else
    mkdir -p "$(dirname "$dest")"
    tmp=$(mktemp "$dest.XXXXXX")
    cat >"$tmp"
    chmod "$mode" "$tmp"
    mv -f "$tmp" "$dest"
  fi
}
# Copy a file unless the destination exists (keeps the user's edits).
copy_new() {
  local src=$1 dest=$2
  if [ -e "$dest" ]; then say "kept $dest (exists)"; else run install -m 0644 "$src" "$dest"; fi
}

if [ ! -f "$SRC/pyproject.toml" ] || [ ! -f "$SRC/systemd/autopilot.service" ]; then
  die "$SRC is not the autopilot repository"
fi
if [ "$DRY_RUN" = 0 ] && [ "$(id -u)" != 0 ]; then die "run as root (sudo $0 $*), or with --dry-run"; fi
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  . /etc/os-release
  case "${ID:-}:${ID_LIKE:-}" in
    *debian*|*ubuntu*|raspbian*) ;;
    *) warn "untested distribution ${PRETTY_NAME:-unknown}; continuing" ;;
  esac
fi
[ -z "$BOAT_CONFIG" ] || [ -f "$BOAT_CONFIG" ] || die "--config $BOAT_CONFIG: no such file"

say "1/7 system packages"
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  say "python3 can create a venv"
elif [ "$USE_APT" = 1 ]; then
  run apt-get update
  run apt-get install -y python3-venv python3-pip
else
  die "python3 cannot create a venv: install python3-venv (or drop --no-apt)"
fi

say "2/7 groups, device access and the $USER_NAME user"
for g in "${GROUPS_NEEDED[@]}"; do
  if getent group "$g" >/dev/null; then say "group $g exists"; else run groupadd --system "$g"; fi
done
write_file "$UDEV_RULE" 0644 <<'EOF'
# Installed by the boat autopilot's install.sh: I2C and GPIO memory for their groups (as Raspberry Pi OS does).
SUBSYSTEM=="i2c-dev", GROUP="i2c", MODE="0660"
KERNEL=="gpiomem", GROUP="gpio", MODE="0660"
EOF
if [ "$DRY_RUN" = 1 ] || command -v udevadm >/dev/null; then
  run udevadm control --reload-rules || warn "udevadm reload failed (rules apply from the next boot)"
  run udevadm trigger --subsystem-match=i2c-dev || true
fi
if id "$USER_NAME" >/dev/null 2>&1; then
  say "user $USER_NAME exists"
else
  run useradd --system --user-group --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
fi
run usermod --append --groups "$(IFS=,; echo "${GROUPS_NEEDED[*]}")" "$USER_NAME"

say "3/7 virtual environment $VENV"
run install -d -m 0755 "$PREFIX"
if [ -x "$VENV/bin/python" ]; then
  say "venv exists"
else
  run python3 -m venv --system-site-packages "$VENV"
fi
if [ "$PIP_ROS" = 1 ]; then PKG="${SRC}[ros]"; else PKG=$SRC; fi
run "$VENV/bin/pip" install --upgrade --no-input "$PKG"

say "4/7 ROS 2 environment"
run install -d -m 0755 "$ETC"
ros_setup=""
if [ -n "$ROS_DISTRO_WANTED" ]; then
  ros_setup=/opt/ros/$ROS_DISTRO_WANTED/setup.bash
  [ -f "$ros_setup" ] || die "--ros-distro $ROS_DISTRO_WANTED: $ros_setup not found"
else
  for f in /opt/ros/*/setup.bash; do [ -f "$f" ] && ros_setup=$f; done
fi
if [ -n "$ros_setup" ]; then
  ros_env=$(env -i HOME=/nonexistent bash -c "set +u; source '$ros_setup' >/dev/null 2>&1; \
    for v in AMENT_PREFIX_PATH PYTHONPATH LD_LIBRARY_PATH ROS_DISTRO ROS_VERSION ROS_PYTHON_VERSION; do \
      [ -n \"\${!v:-}\" ] && printf '%s=%s\n' \"\$v\" \"\${!v}\"; done")
  { printf '# Generated by install.sh from %s -- rerun install.sh after changing ROS; do not edit.\n' "$ros_setup"
    printf '%s\n' "$ros_env"; } | write_file "$ETC/ros.env" 0644
elif [ "$PIP_ROS" = 0 ]; then
  warn "no /opt/ros/*/setup.bash: install ROS 2 (Humble/Jazzy) or rerun with --pip-ros; \`autopilot run\` needs rclpy"
fi

say "5/7 configuration in $ETC"
run install -d -m 0755 "$ETC/vessels" "$ETC/missions"
for f in "$SRC"/config/vessels/*.yaml; do copy_new "$f" "$ETC/vessels/$(basename "$f")"; done
for f in "$SRC"/config/missions/*.yaml; do copy_new "$f" "$ETC/missions/$(basename "$f")"; done
boat_src=${BOAT_CONFIG:-$SRC/config/boat.yaml}
if [ -e "$ETC/boat.yaml" ]; then
  say "kept $ETC/boat.yaml (exists)"
else
  # a preset name is resolved inside the source tree; the installed copy names the installed vessel file
  sed -E 's|^(vessel:[[:space:]]*)([A-Za-z0-9_-]+)([[:space:]]*(#.*)?)$|\1vessels/\2.yaml\3|' "$boat_src" \
    | write_file "$ETC/boat.yaml" 0644
fi
installed_boat=$boat_src
if [ -e "$ETC/boat.yaml" ]; then installed_boat=$ETC/boat.yaml; fi
vessel_line=$(sed -n -E 's/^vessel:[[:space:]]*([^[:space:]#]+).*/\1/p' "$installed_boat" | head -n 1)
case "$vessel_line" in
  */*|*.yaml|*.yml) vessel_file=$vessel_line ;;
  "") vessel_file=vessels/foka.yaml ;;
  *) vessel_file=vessels/$vessel_line.yaml ;;
esac
case "$vessel_file" in /*) ;; *) vessel_file=$ETC/$vessel_file ;; esac
token=$ETC/command.token
if [ -e "$token" ]; then
  say "kept $token (exists)"
else
  # the shared secret commands are signed with (autopilot/command_auth.py); readable by the service user only
  run "$VENV/bin/autopilot" keys token --config "$ETC/boat.yaml"
  run chown "$USER_NAME:$USER_NAME" "$token"
fi
if [ -e "$ETC/autopilot.env" ]; then
  say "kept $ETC/autopilot.env (exists)"
else
  sed "s|^AUTOPILOT_VESSEL=.*|AUTOPILOT_VESSEL=$vessel_file|" "$SRC/systemd/autopilot.env" \
    | write_file "$ETC/autopilot.env" 0644
fi

say "6/7 systemd unit"
sed "s|/opt/autopilot/venv|$VENV|g" "$SRC/systemd/autopilot.service" | write_file "$UNIT_DIR/autopilot.service" 0644
run systemctl daemon-reload
run systemctl enable autopilot.service
if [ "$DRY_RUN" = 1 ] || systemctl cat pigpiod.service >/dev/null 2>&1; then
  run systemctl enable pigpiod.service
else
  warn "pigpiod.service not found: install pigpio (sudo apt-get install pigpio) -- the ESC output needs pigpiod"
fi

say "7/7 checking the installed configuration"
if [ "$DRY_RUN" = 1 ]; then
  run "$VENV/bin/autopilot" check "$ETC/boat.yaml"
elif ! "$VENV/bin/autopilot" check "$ETC/boat.yaml"; then
  warn "fix the problems above in $ETC before starting the service"
fi

cat <<EOF
Installed. Next:
  edit $ETC/boat.yaml (vessel, mission) and $ETC/autopilot.env (ROS_DOMAIN_ID) as needed
  sudo systemctl start autopilot        # the unit is enabled, so it also starts at boot
  journalctl -u autopilot -f            # follow it; run logs are in $STATE/runs
EOF
