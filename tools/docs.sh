#!/usr/bin/env bash
# The docs site: install what is missing, then build _docs/ with Sphinx + myst-nb (tools/docs.py). With no arguments
# it first runs the quick pipeline into runs/<run_id>/ and shows its executed notebooks; `--from-run runs/<run_id>`
# builds from a finished run instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec .venv/bin/python tools/docs.py "$@"
