#!/usr/bin/env bash
# The main job: install what is missing, then `genome-lab run` (all notebooks, quick preset) into runs/<run_id>/.
# Arguments go to `genome-lab run` (e.g. --preset full, -p num_snakes=64, 13_registry).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # torch with 2 threads beside another busy process ran 33_clustering 116 s instead of 15 s
exec .venv/bin/genome-lab run "$@"
