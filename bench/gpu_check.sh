#!/usr/bin/env bash
# The GPU check (issues 31 and 35): one short prepared script that a GPU machine without internet runs in under 10
# minutes: PufferLib built there with CUDA, creature physics CPU-vs-CUDA parity and speed (bench/gpu_physics.py), and
# PuffeRL on CUDA training snakes on maps like the snake season tournament's (bench/gpu_snake.py: the package's
# `finetune_recipe`, read from the repository's root on PYTHONPATH), with agent-steps/s.
#
#   bash bench/gpu_check.sh prepare DIR          # here (PyPI reachable): everything the GPU machine needs, into DIR
#   bash DIR/gpu_check.sh run DIR OUT [SECONDS] [RUN ...]   # there, from the repository's root (reads genome_lab.core)
#   bash DIR/gpu_check.sh run DIR OUT 0                     # there: the build only; then, with
#     PYTHONPATH=DIR/site:$GPU_BUILD/pufferlib-3.0.0:. a bench such as bench/replicator_bar.py runs (issue 38)
#
# prepare: PufferLib's trimmed, patched source (tools/build_pufferlib.sh --source: each env its own random stream,
#   no -flto, no trained weights), the pure-Python packages PuffeRL imports that a bare CUDA image lacks (as wheels),
#   PufferSnake's weights under PufferLib's names (bench/gpu_weights.py), and copies of this script, gpu_snake.py and
#   gpu_physics.py. About 5 MB. DIR goes to the machine as it is (the device tool's `carry`).
# run: installs the wheels into DIR/site, builds PufferLib in place in $GPU_BUILD (default /tmp/gl-pufferlib; kept
#   while the machine is, so a second call skips the 1-minute build) with TORCH_CUDA_ARCH_LIST (default 9.0, Hopper),
#   runs the physics check unless SECONDS is 0 (into OUT/gpu_physics.json), then trains each RUN for SECONDS seconds,
#   all at once, sharing the GPU and the cores (each RUN is NAME:FLAGS, flags of gpu_snake.py separated by commas, e.g.
#   'finetune:--init=DIR/init_puffersnake.safetensors,--learning-rate=1e-4'); weights and logs land in OUT.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: gpu_check.sh prepare DIR | run DIR OUT [SECONDS] [RUN ...]}
DIR=${2:?the folder to prepare or run from}
# what PuffeRL and genome_lab.core import beyond the CUDA image (gym 0.23.0 has no wheel on PyPI: built here)
WHEELS="gymnasium==0.29.1 farama-notifications==0.0.4 gym-notices==0.1.0 pyro-ppl==1.9.2 pyro-api==0.1.2
        opt_einsum==3.4.0 rich_argparse==1.8.0 fastcore==2.2.41 openskill==6.2.0 zuko==1.6.0"

if [ "$mode" = prepare ]; then
  PY=${GENOME_LAB_PYTHON:-.venv/bin/python}
  mkdir -p "$DIR/wheels"
  bash "$HERE/../tools/build_pufferlib.sh" --source "$PY" "$DIR"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DIR/wheels" --implementation cp \
    --python-version "${GPU_PYTHON_VERSION:-3.12}" --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --platform any $WHEELS   # for the GPU machine's Python (3.12 in its image)
  "$PY" -m pip wheel -q --no-deps -w "$DIR/wheels" gym==0.23.0
  "$PY" "$HERE/gpu_weights.py" export "$DIR/init_puffersnake.safetensors"
  cp "$HERE/gpu_check.sh" "$HERE/gpu_snake.py" "$HERE/gpu_physics.py" "$HERE/kit.py" "$DIR/"   # kit.py: their command lines
  du -sh "$DIR"; exit 0
fi

[ "$mode" = run ] || { echo "gpu_check.sh: unknown mode $mode (prepare or run)" >&2; exit 2; }
OUT=${3:?the folder for weights and logs}; SECONDS_EACH=${4:-300}; shift 4 || shift $#
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd); DIR=$(cd "$DIR" && pwd)
PY=${GENOME_LAB_PYTHON:-python3}
BUILD=${GPU_BUILD:-/tmp/gl-pufferlib}
t0=$(date +%s)
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$DIR/site" \
  "$DIR"/wheels/*.whl
src="$BUILD/pufferlib-3.0.0"
if ! ls "$src"/pufferlib/_C*.so "$src"/pufferlib/ocean/snake/binding*.so >/dev/null 2>&1; then
  rm -rf "$BUILD"; mkdir -p "$BUILD"; tar xzf "$DIR"/pufferlib-*-src.tar.gz -C "$BUILD"
  (cd "$src" && TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=16 \
     "$PY" setup.py build_ext --inplace >"$OUT/build.log" 2>&1) \
    || { tail -30 "$OUT/build.log"; echo "gpu_check.sh: building PufferLib failed (log above)" >&2; exit 1; }
  echo "gpu_check.sh: PufferLib built in $(( $(date +%s) - t0 )) s (a CUDA _C where nvcc is on PATH)"
fi
# the version genome_lab checks (pufferlib_import.import_pufferlib_module), which a build in place does not install (the sdist's
# own egg-info says 3.0.0, without the local label, and importlib.metadata would find it first)
ver=$(basename "$DIR"/pufferlib-*-src.tar.gz -src.tar.gz); ver=${ver#pufferlib-}
rm -rf "$src"/*.egg-info; mkdir -p "$src/pufferlib-$ver.dist-info"
printf 'Metadata-Version: 2.1\nName: pufferlib\nVersion: %s\n' "$ver" > "$src/pufferlib-$ver.dist-info/METADATA"
export PYTHONPATH="$DIR/site:$src:$(pwd)${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
"$PY" -c 'import torch, pufferlib._C, pufferlib.pufferl, pufferlib.ocean.snake.binding
print("torch", torch.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name())'
if [ "$SECONDS_EACH" = 0 ]; then exit 0; fi
if [ "${GPU_PHYSICS:-1}" = 1 ]; then
  timeout 120 "$PY" "$DIR/gpu_physics.py" --out "$OUT/gpu_physics.json" || echo "gpu_check.sh: the physics check failed"
fi
pids=()
for spec in "$@"; do
  name=${spec%%:*}; flags=${spec#*:}
  "$PY" "$DIR/gpu_snake.py" --out "$OUT" --name "$name" --seconds "$SECONDS_EACH" ${flags//,/ } \
    > "$OUT/$name.log" 2>&1 &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
for spec in "$@"; do name=${spec%%:*}; echo "== $name"; tail -4 "$OUT/$name.log"; done
echo "gpu_check.sh: done in $(( $(date +%s) - t0 )) s"
exit $rc
