#!/usr/bin/env bash
# Debian's chromium, for the headless leaderboard-page test (tests/test_server.py): tools/setup_debian.sh chromium:chromium.
exec bash "$(dirname "$0")/setup_debian.sh" chromium:chromium
