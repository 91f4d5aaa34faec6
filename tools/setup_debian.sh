#!/usr/bin/env bash
# Debian packages genome_lab needs outside Python, each given as COMMAND:PACKAGE (installed when COMMAND is not on
# PATH): bwrap:bubblewrap for the program sandbox (genome_lab.programs.sandbox), chromium:chromium for the page tests.
# apt-get needs root (as on the CI machine) or sudo. Idempotent: exits at once when every command is there.
set -euo pipefail
missing=()
for spec in "$@"; do
  command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
fail() { echo "setup_debian: $*" >&2; exit 1; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || fail "${missing[*]} missing and installing needs root: apt-get install ${missing[*]}"
  SUDO=sudo
fi
echo "setup_debian: installing Debian's ${missing[*]} (once)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || fail "apt-get update failed"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]} failed"
for spec in "$@"; do
  command -v "${spec%%:*}" >/dev/null 2>&1 || fail "${spec%%:*} is still not on PATH after apt-get install ${spec#*:}"
done
