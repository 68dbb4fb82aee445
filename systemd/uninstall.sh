#!/usr/bin/env bash
# uninstall.sh -- remove what install.sh installed (run as root).
#
#   sudo systemd/uninstall.sh [--dry-run] [--purge] [--prefix /opt/autopilot] [--user autopilot]
#
# Stops and disables autopilot.service (ExecStopPost puts the ESCs to neutral on the way), removes the unit and
# its drop-ins, the udev rule, the i2c-dev module file and the venv under PREFIX. The run logs (/var/lib/autopilot)
# and the configuration (/etc/autopilot) stay, and so does the user that owns the logs -- unless --purge, which
# deletes all three. Groups are left alone (dialout, i2c and gpio belong to the system). pigpiod stays enabled
# (other programs may use it), and so does a pigpiod built with --build-pigpio; the lines install.sh added to
# config.txt stay (its copy from before is config.txt.autopilot-backup). Running it again, or on a system where
# nothing is installed, is harmless.
# --dry-run prints every command and changes nothing (root not needed).
set -euo pipefail

PREFIX=/opt/autopilot
ETC=/etc/autopilot
STATE=/var/lib/autopilot
UNIT=/etc/systemd/system/autopilot.service
UDEV_RULE=/etc/udev/rules.d/60-autopilot.rules
MODULES_CONF=/etc/modules-load.d/autopilot.conf
USER_NAME=autopilot
PURGE=0
DRY_RUN=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --purge) PURGE=1 ;;
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift ;;
    --user) USER_NAME=${2:?--user needs a name}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "uninstall.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '==> %s\n' "$*"; }
run() {
  if [ "$DRY_RUN" = 1 ]; then printf '+'; printf ' %q' "$@"; printf '\n'; else "$@"; fi
}
remove() {   # remove a file or directory if it is there
  if [ "$DRY_RUN" = 1 ] || [ -e "$1" ] || [ -L "$1" ]; then run rm -rf -- "$1"; else say "$1 already gone"; fi
}

if [ "$DRY_RUN" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "uninstall.sh: run as root (sudo $0 $*), or with --dry-run" >&2
  exit 1
fi
case "$PREFIX" in
  ""|/|/usr|/usr/*|/etc|/var|/home) echo "uninstall.sh: refusing to delete --prefix $PREFIX" >&2; exit 2 ;;
esac

say "service"
if [ "$DRY_RUN" = 1 ] || [ -e "$UNIT" ]; then
  run systemctl disable --now autopilot.service || true
fi
remove "$UNIT"
remove "$UNIT.d"
run systemctl daemon-reload || true
run systemctl reset-failed autopilot.service 2>/dev/null || true

say "device rule and software"
if [ "$DRY_RUN" = 1 ] || [ -e "$UDEV_RULE" ]; then
  remove "$UDEV_RULE"
  run udevadm control --reload-rules || true
fi
remove "$MODULES_CONF"
remove "$PREFIX"

if [ "$PURGE" = 1 ]; then
  say "purge: logs, configuration and the $USER_NAME user"
  remove "$STATE"
  remove "$ETC"
  if [ "$DRY_RUN" = 1 ] || id "$USER_NAME" >/dev/null 2>&1; then run userdel "$USER_NAME"; fi
else
  say "kept $STATE (run logs) and $ETC (configuration) and the $USER_NAME user; --purge removes them"
fi
say "done"
