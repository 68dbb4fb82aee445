#!/usr/bin/env bash
# install.sh -- install the boat autopilot as a systemd service on Raspberry Pi OS or Ubuntu (run as root).
#
#   sudo systemd/install.sh [--dry-run] [--config BOAT.yaml] [--prefix /opt/autopilot] [--ros-distro jazzy]
#                           [--pip-ros] [--no-apt] [--user autopilot]
#                           [--esc-backend pigpio|kernel_pwm|pca9685] [--build-pigpio] [--edit-config-txt]
#
# First it reads the board (device tree model) and the OS (/etc/os-release) and picks the ESC backend, saying
# which and why: a Pi 5 -> kernel_pwm (pigpio cannot reach its GPIO); a Pi 4 or older on Raspberry Pi OS
# Bullseye or Bookworm -> pigpio (packaged there); a Pi on Ubuntu, Debian or Raspberry Pi OS Trixie ->
# kernel_pwm (no pigpiod package); not a Raspberry Pi -> the boat config's. --esc-backend overrides; pigpio
# where it is not packaged needs --build-pigpio (built from the upstream tarball) and is refused on a Pi 5.
#
# What it does (each step checks first, so running it again only repairs what is missing):
#   1. apt: python3-venv (and pip) if the system Python cannot make a venv, and pigpio for the pigpio backend
#      (skip with --no-apt).
#   2. Groups dialout, i2c, gpio (created when missing) and a udev rule giving /dev/i2c-*, /dev/gpiomem and the
#      PWM class (/sys/class/pwm: export, unexport and each exported channel) to them; the system user
#      `autopilot` (home /var/lib/autopilot, no login shell) in those groups. The boot config line each part
#      needs (I2C for the IMU and pca9685, the pwm-2chan overlay for kernel_pwm): present, appended with
#      --edit-config-txt, or printed as the one line to add (then reboot).
#   3. A venv at PREFIX/venv with --system-site-packages, so it sees the system's ROS 2 rclpy, and the project
#      pip-installed into it (with --pip-ros: rclpy and messages from PyPI instead of a system ROS).
#   4. /etc/autopilot/ros.env from /opt/ros/<distro>/setup.bash (the PYTHONPATH, LD_LIBRARY_PATH and
#      AMENT_PREFIX_PATH rclpy needs), regenerated on every run.
#   5. /etc/autopilot/: vessels/, missions/, boat.yaml and autopilot.env copied from the repository -- never over
#      a file already there (your edits stay). A vessel preset name in boat.yaml (`vessel: foka`) becomes the
#      installed file (`vessel: vessels/foka.yaml`), since presets are not part of the installed package.
#   6. autopilot.service into /etc/systemd/system, daemon-reload, enabled; not started. A drop-in ties it to
#      pigpiod.service for pigpio, or keeps the PWM chips' files writable for kernel_pwm.
#   7. `autopilot check` on the installed config; a problem is reported, the install still completes.
# --dry-run prints every command and file it would write and changes nothing (root not needed). --root DIR
# reads the board and OS files under DIR instead of / (tests).
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
ROOT=""
ESC_BACKEND=""
BUILD_PIGPIO=0
EDIT_CONFIG_TXT=0
PWM_OVERLAY="dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4"
I2C_PARAM="dtparam=i2c_arm=on"
PIGPIO_TARBALL=https://github.com/joan2937/pigpio/archive/master.zip
DROPIN_DIR=/etc/systemd/system/autopilot.service.d

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
    --root) ROOT=${2:?--root needs a directory}; shift ;;
    --esc-backend) ESC_BACKEND=${2:?--esc-backend needs pigpio, kernel_pwm or pca9685}; shift ;;
    --build-pigpio) BUILD_PIGPIO=1 ;;
    --edit-config-txt) EDIT_CONFIG_TXT=1 ;;
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
case "$ESC_BACKEND" in
  ""|pigpio|kernel_pwm|pca9685) ;;
  *) die "--esc-backend $ESC_BACKEND: choose pigpio, kernel_pwm or pca9685" ;;
esac
# os-release's value of one key, unquoted ("" when absent)
os_value() { sed -n -E "s/^$1=\"?([^\"]*)\"?\$/\\1/p" "$ROOT/etc/os-release" 2>/dev/null | head -n 1; }
OS_ID=$(os_value ID)
OS_CODENAME=$(os_value VERSION_CODENAME)
OS_NAME=$(os_value PRETTY_NAME)
OS_NAME=${OS_NAME:-unknown OS}
case "$OS_ID:$(os_value ID_LIKE)" in
  *debian*|*ubuntu*|raspbian*) ;;
  *) warn "untested distribution $OS_NAME; continuing" ;;
esac
# Raspberry Pi OS (64-bit) calls itself debian: its own files tell it apart.
RASPIOS=0
if [ "$OS_ID" = raspbian ] || [ -e "$ROOT/etc/rpi-issue" ] || [ -e "$ROOT/etc/apt/sources.list.d/raspi.list" ]; then
  RASPIOS=1
fi
MODEL=""
if [ -r "$ROOT/proc/device-tree/model" ]; then MODEL=$(tr -d '\000' <"$ROOT/proc/device-tree/model"); fi
case "$MODEL" in
  "Raspberry Pi 5"*|"Raspberry Pi Compute Module 5"*) BOARD=pi5 ;;
  "Raspberry Pi"*) BOARD=pi4 ;;
  *) BOARD=other ;;
esac
[ -z "$BOAT_CONFIG" ] || [ -f "$BOAT_CONFIG" ] || die "--config $BOAT_CONFIG: no such file"
boat_src=${BOAT_CONFIG:-$SRC/config/boat.yaml}
# the backend in a boat config's esc: section ("" when it names none: pigpio, the default)
esc_backend_of() {
  sed -n '/^esc:/,/^[^[:space:]#]/s/^[[:space:]]\{1,\}backend:[[:space:]]*\([a-z_0-9]*\).*/\1/p' "$1" | head -n 1
}

# pigpiod is packaged on Raspberry Pi OS up to Bookworm; not on Debian, Ubuntu or Raspberry Pi OS Trixie
PIGPIO_PACKAGED=0
if [ "$RASPIOS" = 1 ]; then
  case "$OS_CODENAME" in buster|bullseye|bookworm) PIGPIO_PACKAGED=1 ;; esac
fi
if [ -n "$ESC_BACKEND" ]; then
  ESC_WHY="chosen with --esc-backend"
elif [ "$BOARD" = pi5 ]; then
  ESC_BACKEND=kernel_pwm ESC_WHY="a Raspberry Pi 5: pigpio cannot reach its GPIO, behind the RP1 chip"
elif [ "$BOARD" = pi4 ] && [ "$PIGPIO_PACKAGED" = 1 ]; then
  ESC_BACKEND=pigpio ESC_WHY="Raspberry Pi OS $OS_CODENAME packages pigpiod"
elif [ "$BOARD" = pi4 ]; then
  ESC_BACKEND=kernel_pwm ESC_WHY="$OS_NAME has no pigpiod package"
else
  ESC_BACKEND=$(esc_backend_of "$boat_src")
  ESC_BACKEND=${ESC_BACKEND:-pigpio}
  ESC_WHY="not a Raspberry Pi, so the boat config's"
fi
if [ "$ESC_BACKEND" = pigpio ] && [ "$BOARD" = pi5 ]; then
  die "pigpio does not run on a Raspberry Pi 5 (its GPIO is behind the RP1 chip): use --esc-backend kernel_pwm (ESCs on GPIO12/13) or pca9685"
fi
BUILD_PIGPIO_NOW=0
if [ "$ESC_BACKEND" = pigpio ] && [ "$BOARD" != other ] && [ "$PIGPIO_PACKAGED" = 0 ]; then
  if [ "$BUILD_PIGPIO" = 1 ]; then
    BUILD_PIGPIO_NOW=1
  else
    die "pigpio is not packaged on $OS_NAME: use --esc-backend kernel_pwm (ESCs on GPIO12/13, no daemon), or add --build-pigpio to build pigpiod from $PIGPIO_TARBALL"
  fi
fi
CONFIG_TXT=$ROOT/boot/firmware/config.txt
if [ ! -e "$CONFIG_TXT" ] && [ -e "$ROOT/boot/config.txt" ]; then CONFIG_TXT=$ROOT/boot/config.txt; fi
say "board: ${MODEL:-not a Raspberry Pi (no device tree model)}; OS: $OS_NAME"
say "ESC backend: $ESC_BACKEND ($ESC_WHY)"

say "1/7 system packages"
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  say "python3 can create a venv"
elif [ "$USE_APT" = 1 ]; then
  run apt-get update
  run apt-get install -y python3-venv python3-pip
else
  die "python3 cannot create a venv: install python3-venv (or drop --no-apt)"
fi
if [ "$BUILD_PIGPIO_NOW" = 1 ]; then
  say "building pigpiod from $PIGPIO_TARBALL (not packaged on $OS_NAME)"
  if [ "$USE_APT" = 1 ]; then run apt-get install -y build-essential unzip wget; fi
  run wget -q -O /tmp/pigpio.zip "$PIGPIO_TARBALL"
  run unzip -q -o /tmp/pigpio.zip -d /tmp
  run make -C /tmp/pigpio-master
  run make -C /tmp/pigpio-master install
  write_file "$UNIT_DIR/pigpiod.service" 0644 <<'EOF'
# Installed by the boat autopilot's install.sh for a pigpiod built from source: listens on localhost only.
[Unit]
Description=pigpio daemon (built from source)

[Service]
Type=forking
ExecStart=/usr/local/bin/pigpiod -l

[Install]
WantedBy=multi-user.target
EOF
elif [ "$ESC_BACKEND" = pigpio ] && [ "$BOARD" != other ] && [ "$USE_APT" = 1 ]; then
  run apt-get install -y pigpio
fi

say "2/7 groups, device access and the $USER_NAME user"
for g in "${GROUPS_NEEDED[@]}"; do
  if getent group "$g" >/dev/null; then say "group $g exists"; else run groupadd --system "$g"; fi
done
write_file "$UDEV_RULE" 0644 <<'EOF'
# Installed by the boat autopilot's install.sh: I2C and GPIO memory for their groups (as Raspberry Pi OS does).
SUBSYSTEM=="i2c-dev", GROUP="i2c", MODE="0660"
KERNEL=="gpiomem", GROUP="gpio", MODE="0660"
# The PWM class for the gpio group: a PWM chip appearing (its export and unexport) and each channel exported
# from it (period, duty_cycle, enable) get group gpio with group write; %p is the device's path under /sys.
SUBSYSTEM=="pwm", ACTION=="add|change", RUN+="/bin/sh -c 'chgrp -R gpio /sys%p && chmod -R g+rwX /sys%p'"
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
# A line the boot config needs: present, appended (--edit-config-txt) or shown for the user to add.
REBOOT=0
boot_line() {
  local line=$1 why=$2
  if [ -e "$CONFIG_TXT" ] && grep -qxF "$line" "$CONFIG_TXT"; then
    say "${CONFIG_TXT#"$ROOT"} has $line"
  elif [ "$BOARD" = other ]; then
    say "not a Raspberry Pi: no boot config line set for $why"
  elif [ "$EDIT_CONFIG_TXT" = 1 ]; then
    if [ "$DRY_RUN" = 1 ]; then
      printf '+ append to %s: %s\n' "${CONFIG_TXT#"$ROOT"}" "$line"
    else
      printf '%s\n' "$line" >>"$CONFIG_TXT"
    fi
    REBOOT=1
  else
    say "ACTION: add this line to ${CONFIG_TXT#"$ROOT"} ($why), then reboot: $line"
    REBOOT=1
  fi
}
boot_line "$I2C_PARAM" "I2C for the IMU"
if [ "$ESC_BACKEND" = kernel_pwm ]; then boot_line "$PWM_OVERLAY" "hardware PWM for the ESCs on GPIO12 and 13"; fi

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
if [ -e "$ETC/boat.yaml" ]; then
  say "kept $ETC/boat.yaml (exists)"
  have=$(esc_backend_of "$ETC/boat.yaml")
  if [ "${have:-pigpio}" != "$ESC_BACKEND" ]; then
    warn "$ETC/boat.yaml has esc backend ${have:-pigpio (the default)} but this install set up $ESC_BACKEND: set esc: {backend: $ESC_BACKEND} there, or rerun with --esc-backend ${have:-pigpio}"
  fi
else
  # a preset name is resolved inside the source tree, so the installed copy names the installed vessel file;
  # its esc: section gets the backend chosen above
  channels=""
  if [ "$ESC_BACKEND" = pca9685 ] && ! grep -q '^[[:space:]]*pca9685_channels:' "$boat_src"; then
    channels="pca9685_channels: [0, 1]           # board output of each thruster, vessel order: check it"
  fi
  {
    sed -E 's|^(vessel:[[:space:]]*)([A-Za-z0-9_-]+)([[:space:]]*(#.*)?)$|\1vessels/\2.yaml\3|' "$boat_src" \
      | sed "/^esc:/,/^[^[:space:]#]/s/^\\([[:space:]]\\{1,\\}backend:[[:space:]]*\\)[a-z_0-9]*/\\1$ESC_BACKEND/" \
      | if [ -n "$channels" ]; then
          sed "/^esc:/,/^[^[:space:]#]/s/^\\([[:space:]]\\{1,\\}\\)\\(backend:.*\\)$/\\1\\2\\n\\1$channels/"
        else
          cat
        fi
    if ! grep -q '^esc:' "$boat_src"; then
      printf 'esc:\n  backend: %s\n' "$ESC_BACKEND"
      if [ -n "$channels" ]; then printf '  %s\n' "$channels"; fi
    fi
  } | write_file "$ETC/boat.yaml" 0644
fi
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
  write_file "$ETC/autopilot.env" 0644 <"$SRC/systemd/autopilot.env"
fi

say "6/7 systemd unit"
sed "s|/opt/autopilot/venv|$VENV|g" "$SRC/systemd/autopilot.service" | write_file "$UNIT_DIR/autopilot.service" 0644
case "$ESC_BACKEND" in
  pigpio)
    write_file "$DROPIN_DIR/esc.conf" 0644 <<'EOF'
# Installed by install.sh for the pigpio ESC backend: the ESC output talks to pigpiod on localhost:8888.
[Unit]
After=pigpiod.service
Wants=pigpiod.service
EOF
    ;;
  kernel_pwm)
    write_file "$DROPIN_DIR/esc.conf" 0644 <<'EOF'
# Installed by install.sh for the kernel_pwm ESC backend: ProtectKernelTunables makes /sys read-only, and the
# PWM chips' files (/sys/class/pwm links into /sys/devices/platform) must stay writable.
[Service]
ReadWritePaths=-/sys/devices/platform
EOF
    ;;
  pca9685)
    if [ "$DRY_RUN" = 1 ] || [ -e "$DROPIN_DIR/esc.conf" ]; then run rm -f "$DROPIN_DIR/esc.conf"; fi
    ;;
esac
run systemctl daemon-reload
run systemctl enable autopilot.service
if [ "$ESC_BACKEND" = pigpio ]; then
  if [ "$DRY_RUN" = 1 ] || systemctl cat pigpiod.service >/dev/null 2>&1; then
    run systemctl enable pigpiod.service
  else
    warn "pigpiod.service not found: install pigpio (sudo apt-get install pigpio) -- the ESC output needs pigpiod"
  fi
fi

say "7/7 checking the installed configuration"
if [ "$DRY_RUN" = 1 ]; then
  run "$VENV/bin/autopilot" check "$ETC/boat.yaml"
elif ! "$VENV/bin/autopilot" check "$ETC/boat.yaml"; then
  warn "fix the problems above in $ETC before starting the service"
fi

if [ "$REBOOT" = 1 ]; then say "reboot once the boot config lines above are in place (sudo reboot)"; fi
cat <<EOF
Installed (ESC backend $ESC_BACKEND). Next:
  edit $ETC/boat.yaml (vessel, mission) and $ETC/autopilot.env (ROS_DOMAIN_ID) as needed
  sudo systemctl start autopilot        # the unit is enabled, so it also starts at boot
  journalctl -u autopilot -f            # follow it; run logs are in $STATE/runs
EOF
