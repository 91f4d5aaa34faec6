#!/usr/bin/env bash
# The tests: install what is missing, then every notebook (nbdev-test; cells flagged slow or cuda are skipped),
# then the pytest suite. Any failure, or pytest collecting no test (exit 5), fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
echo "== nbdev-test"
.venv/bin/nbdev-test --n-workers 2 --cell-timeout 1200   # a cell of a busy machine gets time; a hang still ends
echo "== pytest"
bash tools/setup_debian.sh chromium:chromium  # the leaderboard page is tested in headless chromium
.venv/bin/python -m pytest -q tests -n 2 --dist loadfile --no-loadscope-reorder -m "not timing" --durations=20   # the slowest named: the suite keeps under 20 minutes; the slow files first (tests/conftest.py)
.venv/bin/python -m pytest -q tests -m timing --durations=5   # the tests that time a command, alone on the machine
