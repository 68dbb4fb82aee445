#!/usr/bin/env bash
# check_arm64_root.sh -- the autopilot installed and run on an arm64 Debian Bookworm, as on a student's Pi
# (Raspberry Pi OS 64-bit is Debian Bookworm for arm64), without a Pi: a debootstrapped arm64 root, run under
# qemu-user on this x86_64 machine. Run it as root (debootstrap, chroot, mounts).
#
#   sudo bash scripts/check_arm64_root.sh
#   AUTOPILOT_ARM64_ROOT=DIR   where the built root is cached (default /var/tmp/autopilot-arm64-root): the first
#                              run builds it (debootstrap, a few minutes), later runs reuse it
#   AUTOPILOT_ARM64_MIRROR=URL the Debian mirror (default: the first one this machine's apt sources name)
#   AUTOPILOT_ARM64_REBUILD=1  build the root again
#
# What it proves, step by step (each timed; a table at the end; exit 0 only if every step passed):
#   root     an arm64 Bookworm root (debootstrap --arch=arm64 --variant=minbase, plus python3-venv,
#            ca-certificates and systemd: what install.sh finds on Raspberry Pi OS). Built once into the cache,
#            checked to run aarch64 binaries (`uname -m` in it says aarch64).
#   install  systemd/install.sh --esc-backend kernel_pwm itself (what it picks for a Pi on Debian, which has no
#            pigpiod package), run in the root (chroot, every binary aarch64 under qemu-user): the
#            venv from the system Python 3.11, `pip install` of the repository with its dependencies from the
#            package index as aarch64 wheels -- no ROS (the install warns there is none), and pip is given
#            --only-binary=:all: (PIP_ONLY_BINARY), so a dependency without an aarch64 wheel fails the step
#            instead of compiling; groups, the autopilot user, /etc/autopilot, the unit enabled, and its own
#            `autopilot check` of the installed config. No systemd runs in a chroot: systemctl gets
#            SYSTEMD_OFFLINE=1 (its chroot detection needs /proc/1/root, which a container may hide), so
#            daemon-reload is skipped and enable writes the links, as in a package install into an image.
#   check    `autopilot check --config config/boat.yaml` from the repository copy (the hw boat config), with the
#            installed (not editable) package: its `vessel: foka` preset comes from the wheel's presets.
#   sim      `autopilot sim config/missions/demo.yaml --vessel /etc/autopilot/vessels/foka.yaml --devices
#            bytes` (the vessel file install.sh installed): the real drivers on emulated device bytes, the
#            whole mission, its summary.
#   run      `autopilot run --config BOAT` with backend: sim, a two-waypoint mission and a MAVLink link with a
#            signing key (written here, for 127.0.0.1 only), for up to 60 s from its first HEARTBEAT:
#            scripts/fly_two_waypoints.py, a pymavlink ground station in the root, sets AUTO, arms (signed),
#            follows the mission to complete, disarms and stops the boat: the boat runtime without ROS (the
#            root has none). A failing step says why ("run: FAILED: <reason>"); every step is reported.
# How: each run lays an overlay over the cached root (lower: the cache, upper: a temporary directory), so the
# cache stays as debootstrap left it and every run installs from scratch; the repository's files (tracked and
# untracked, not ignored) are copied in to /opt/autopilot-src. pip's download cache is kept beside the root
# (so a second run need not fetch the wheels again; pip still resolves against the index). The emulated
# aarch64 needs binfmt_misc: it is mounted if absent, and qemu-aarch64 enabled with the F (fix binary) flag
# -- the interpreter is opened when registered, so the root needs no qemu binary of its own. Missing tools
# (debootstrap, qemu-user-static, binfmt-support) are installed with apt-get.
# Everything runs in the chroot with a clean environment (env -i), the machine's CA bundle and resolv.conf.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
SRC=$(pwd)

CACHE=${AUTOPILOT_ARM64_ROOT:-/var/tmp/autopilot-arm64-root}
ROOTFS=$CACHE/rootfs
STAMP=$CACHE/rootfs.ok
PIP_CACHE=$CACHE/pip-cache
SUITE=bookworm
INCLUDE=python3-venv,ca-certificates,systemd
RUN_SECONDS=60

die() { printf 'check_arm64_root.sh: %s\n' "$*" >&2; exit 2; }
say() { printf '==> %s\n' "$*"; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mounts need it)"

STEPS=() SECS=() RESULTS=()
record() { STEPS+=("$1") SECS+=("$2") RESULTS+=("$3"); }
report() {
  local i ok=0
  printf '\n%-8s %8s  %s\n' step seconds result
  for i in "${!STEPS[@]}"; do
    printf '%-8s %8s  %s\n' "${STEPS[$i]}" "${SECS[$i]}" "${RESULTS[$i]}"
    case "${RESULTS[$i]}" in passed*) ;; *) ok=1 ;; esac
  done
  printf '%-8s %8s\n' total "$((SECONDS - START))"
  return "$ok"
}
START=$SECONDS

# ---------------------------------------------------------------- host tools and binfmt_misc
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
[ -x /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }; then
    die "apt-get install ${need[*]} failed"
  fi
fi
BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/register" ]; then
  mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc on $BINFMT"
fi
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
if ! grep -qs '^flags:.*F' "$BINFMT/qemu-aarch64"; then
  # absent, or registered without F (then the interpreter would have to be inside the root): register
  # qemu-aarch64-static by hand, with F (the kernel opens it now) and P (argv[0] kept), as Debian's file does
  if [ -e "$BINFMT/qemu-aarch64" ]; then echo -1 >"$BINFMT/qemu-aarch64"; fi
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:FP' \
    >"$BINFMT/register" || die "cannot register qemu-aarch64 with binfmt_misc"
fi
grep -qs '^enabled' "$BINFMT/qemu-aarch64" || die "qemu-aarch64 is registered but disabled in $BINFMT"

# ---------------------------------------------------------------- step root: build or reuse
mirror() {
  # the first Debian archive (not -security) the apt sources name, deb822 or one-line style
  local f uri
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    uri=$(awk '
      /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /debian\/?$/ && $i !~ /security/) { print $i; exit } }
      /^deb[[:space:]]/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /debian\/?$/ && $i !~ /security/) { print $i; exit } }
    ' "$f")
    if [ -n "$uri" ]; then echo "${uri%/}"; return; fi
  done
}
MIRROR=${AUTOPILOT_ARM64_MIRROR:-$(mirror)}
t=$SECONDS
if [ "${AUTOPILOT_ARM64_REBUILD:-0}" = 1 ] || [ ! -e "$STAMP" ]; then
  [ -n "$MIRROR" ] || die "no Debian mirror in /etc/apt/sources.list*: set AUTOPILOT_ARM64_MIRROR"
  say "building the arm64 $SUITE root in $ROOTFS from $MIRROR (debootstrap; a few minutes)"
  rm -rf "$ROOTFS" "$STAMP"
  mkdir -p "$CACHE"
  if debootstrap --arch=arm64 --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOTFS" "$MIRROR" \
      >"$CACHE/debootstrap.log" 2>&1 \
     && [ "$(chroot "$ROOTFS" /bin/uname -m)" = aarch64 ]; then
    printf 'suite=%s include=%s mirror=%s built=%s\n' "$SUITE" "$INCLUDE" "$MIRROR" "$(date -u +%FT%TZ)" >"$STAMP"
    record root "$((SECONDS - t))" "passed (built: $(du -sh "$ROOTFS" | cut -f1))"
  else
    tail -n 20 "$CACHE/debootstrap.log"
    record root "$((SECONDS - t))" "FAILED: debootstrap (log: $CACHE/debootstrap.log)"
    report
    exit 1
  fi
else
  if [ "$(chroot "$ROOTFS" /bin/uname -m 2>/dev/null)" = aarch64 ]; then
    record root "$((SECONDS - t))" "passed (cached: $(cut -d' ' -f4 "$STAMP"))"
  else
    record root "$((SECONDS - t))" "FAILED: the cached root in $ROOTFS does not run (AUTOPILOT_ARM64_REBUILD=1)"
    report
    exit 1
  fi
fi

# ---------------------------------------------------------------- this run's overlay
mkdir -p "$CACHE/runs" "$PIP_CACHE"
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX")
M=$RUN/merged
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null; done
  rm -rf "$RUN"
}
trap cleanup EXIT
mkdir -p "$RUN/upper" "$RUN/work" "$M"
mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$RUN/upper,workdir=$RUN/work" "$M" \
  || die "cannot mount an overlay over $ROOTFS"
MOUNTS+=("$M")
mount -t proc proc "$M/proc" && MOUNTS+=("$M/proc")
mount --rbind /sys "$M/sys" && MOUNTS+=("$M/sys")
mount --rbind /dev "$M/dev" && MOUNTS+=("$M/dev")
mkdir -p "$M/root/.cache/pip"
mount --bind "$PIP_CACHE" "$M/root/.cache/pip" && MOUNTS+=("$M/root/.cache/pip")
cp -L /etc/resolv.conf "$M/etc/resolv.conf" 2>/dev/null || true
# this machine's CA bundle (it may hold a proxy's CA the root's own bundle lacks)
if [ -r /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt "$M/etc/ssl/certs/"; fi
# the repository: tracked and untracked files, not the ignored ones (.venv, build output)
mkdir -p "$M/opt/autopilot-src"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$SRC" ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do if [ -e "$SRC/$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar -C "$SRC" --null -T - -cf - | tar -C "$M/opt/autopilot-src" -xf -
else
  tar -C "$SRC" --exclude=./.venv --exclude=./.git -cf - . | tar -C "$M/opt/autopilot-src" -xf -
fi

# a command in the root, in a clean environment; pip takes wheels only (nothing is compiled on a Pi)
in_root() {
  chroot "$M" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb PYTHONUNBUFFERED=1 SYSTEMD_OFFLINE=1 PIP_ONLY_BINARY=:all: PIP_NO_INPUT=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-60}" \
    ${PIP_INDEX_URL:+PIP_INDEX_URL="$PIP_INDEX_URL"} MPLBACKEND=Agg "$@"
}
# step NAME LOG COMMAND...: run it in the root, its output to LOG and the terminal; record the result
step() {
  local name=$1 log=$2 t=$SECONDS rc
  shift 2
  say "$name: $*"
  in_root "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then record "$name" "$((SECONDS - t))" passed
  else record "$name" "$((SECONDS - t))" "FAILED: exit $rc: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-160)"
  fi
  return "$rc"
}
APSRC=/opt/autopilot-src
AP=/opt/autopilot/venv/bin/autopilot

# ---------------------------------------------------------------- step install
installed=0
if step install "$RUN/install.log" bash "$APSRC/systemd/install.sh" --esc-backend kernel_pwm \
  && [ -x "$M$AP" ] && [ -L "$M/etc/systemd/system/multi-user.target.wants/autopilot.service" ]; then
  installed=1
elif [ "${RESULTS[-1]}" = passed ]; then
  RESULTS[-1]="FAILED: install.sh exited 0 but $AP or the enabled unit is missing"
fi
if [ "$installed" = 0 ]; then
  for s in check sim run; do record "$s" 0 "FAILED: not run (the install failed)"; done
  report
  exit 1
fi

# ---------------------------------------------------------------- steps check and sim
step check "$RUN/check.log" sh -c "cd $APSRC && $AP check --config config/boat.yaml"
# the vessel file install.sh put in /etc/autopilot: a preset name (--vessel foka) is looked up beside the
# installed package, where no vessel files are (the check step above shows it with config/boat.yaml)
step sim "$RUN/sim.log" sh -c \
  "cd $APSRC && $AP sim config/missions/demo.yaml --vessel /etc/autopilot/vessels/foka.yaml --devices bytes"

# ---------------------------------------------------------------- step run: a sim boat flown over MAVLink
T=/var/tmp/arm64-run
mkdir -p "$M$T"
cat >"$M$T/mission.yaml" <<'EOF'
# Two waypoints, 10 m north then 10 m east (FOKA at 1 m/s: about 25 s).
name: arm64-two-waypoints
description: launch point and two waypoints for scripts/check_arm64_root.sh
start:
  point: {lat_deg: 51.1099101, lon_deg: 17.0598572}
  heading_deg: 0
waypoints:
  - {lat_deg: 51.1100000, lon_deg: 17.0598572}
  - {lat_deg: 51.1100000, lon_deg: 17.0600000}
cruise_speed_mps: 1.0
acceptance_radius_m: 2.0
on_complete: hold
EOF
# a local test: MAVLink on 127.0.0.1 with a signing key (arming needs signed commands); the ROS command token
# off (no operator but the ground station here)
cat >"$M$T/boat.yaml" <<'EOF'
# The sim boat scripts/check_arm64_root.sh flies: backend sim, a ground station on 127.0.0.1.
vessel: /etc/autopilot/vessels/foka.yaml
mission: mission.yaml
backend: sim
ros: {namespace: /arm64check, nodes: [autopilot]}
logging: {enabled: false}
commands: {auth: "off"}
mavlink: {links: ['udpout:127.0.0.1:14561'], system_id: 1, signing_key_file: mavlink.key}
EOF
t=$SECONDS
say "run: $AP run --config $T/boat.yaml, flown by scripts/fly_two_waypoints.py (up to ${RUN_SECONDS} s)"
if ! in_root "$AP" keys mavlink --config "$T/boat.yaml" >"$RUN/run.log" 2>&1; then
  cat "$RUN/run.log"
  record run "$((SECONDS - t))" "FAILED: autopilot keys mavlink: $(tail -n 1 "$RUN/run.log" | cut -c1-160)"
else
  in_root /opt/autopilot/venv/bin/python "$APSRC/scripts/fly_two_waypoints.py" "$T/boat.yaml" \
    --seconds "$RUN_SECONDS" 2>&1 | tee "$RUN/run.log"
  rc=${PIPESTATUS[0]}
  last=$(grep -E '^(PASS|FAIL): ' "$RUN/run.log" | tail -n 1)
  if [ "$rc" = 0 ]; then record run "$((SECONDS - t))" "passed: ${last#PASS: }"
  else
    last=${last#FAIL: }
    record run "$((SECONDS - t))" "FAILED: ${last:-exit $rc}"
  fi
fi

report
