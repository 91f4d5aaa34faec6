#!/usr/bin/env bash
# Debian's chromium, for the headless leaderboard-page test (tests/test_server.py). Installs it when missing
# (apt-get; needs root, as on the CI machine). Idempotent: exits at once when `chromium` is on PATH.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
fail() { echo "setup_chromium: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || command -v sudo >/dev/null || fail "chromium is missing and installing it needs root (apt-get install chromium)"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "setup_chromium: installing Debian's chromium (once)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || fail "apt-get update failed"
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null || fail "apt-get install chromium failed"
command -v chromium >/dev/null 2>&1 || fail "chromium is still not on PATH after apt-get install"
echo "setup_chromium: $(chromium --version 2>/dev/null || echo installed)"
