#!/usr/bin/env bash
# The real browser the web page's tests drive: Debian's chromium and chromium-driver (/usr/bin/chromium,
# /usr/bin/chromedriver). Installed with apt-get when missing and this runs as root (CI); otherwise it says what
# to install and fails, so the browser tests never pass by being skipped.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    exit 0
fi
echo "error: the web page's tests need a real browser: sudo apt install chromium chromium-driver" >&2
exit 1
