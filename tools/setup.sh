#!/usr/bin/env bash
# Install everything genome_lab needs into .venv/ (idempotent: a second call reuses what is installed).
# CPU torch 2.13.0, numpy<2, PufferLib 3.0.0 built and patched from its sdist with its trainer (tools/build_pufferlib.sh;
# an installed PufferLib without the patch's version label is replaced), then this package with its dev extras,
# editable; Debian's bubblewrap for the program sandbox (tools/setup_debian.sh). pip installs uv, and uv the rest: the
# same requirements, downloaded and unpacked in parallel, and compiled to bytecode as pip does, less those that
# tools/uv_excludes.txt leaves out.
# Set GENOME_LAB_PYTHON to choose the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${GENOME_LAB_PYTHON:-python3}
VENV=.venv
# the program sandbox runs player programs inside bubblewrap (Debian's package; apt-get as root or with sudo)
bash tools/setup_debian.sh bwrap:bubblewrap
stamp_src=$(cat pyproject.toml tools/setup.sh tools/uv_excludes.txt tools/build_pufferlib.sh tools/pufferlib_patch/* | sha256sum | cut -d' ' -f1)
if [ -f "$VENV/.genome_lab_installed" ] && [ "$(cat "$VENV/.genome_lab_installed")" = "$stamp_src" ]; then
  exit 0
fi
fail() { echo "setup: $*" >&2; exit 1; }
echo "setup: installing into $VENV (once; later calls reuse it)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV" || fail "cannot create a virtual environment with $PY"
[ -x "$VENV/bin/uv" ] || "$VENV/bin/python" -m pip --disable-pip-version-check -q install 'uv==0.13.10' 2> >(grep -v -E '^WARNING: Location .* is ignored' >&2) \
  || fail "pip could not install uv"
links=()   # the wheel folders pip is configured with (a machine's own torch file): uv reads no pip configuration
for l in $("$VENV/bin/python" -m pip config list 2>/dev/null | sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p" | sort -u); do links+=(--find-links "$l"); done
install() { "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" --excludes tools/uv_excludes.txt "${links[@]}" "$@"; }
# CPU torch first: a plain 'torch' requirement would pull the CUDA build.
"$VENV/bin/python" -c 'import torch' 2>/dev/null || install 'torch==2.13.0'
"$VENV/bin/python" -c 'import torch' 2>/dev/null || fail "torch did not install"
install 'numpy<2' setuptools wheel
puffer=$(bash tools/build_pufferlib.sh --version)
installed=$("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("pufferlib"))' 2>/dev/null || true)
if [ "$installed" != "$puffer" ] || ! "$VENV/bin/python" -c 'import torch, pufferlib._C, pufferlib.ocean.snake.binding, pufferlib.ocean.tetris.binding' 2>/dev/null; then
  [ -z "$installed" ] || echo "setup: replacing pufferlib $installed by the patched $puffer"
  # the build (the compiler, one core) runs beside the install of the other requirements
  bash tools/build_pufferlib.sh "$VENV/bin/python" .cache/wheels & build=$!
  reqs=$(mktemp)   # the other requirements, this package's and its dev extras', read from pyproject.toml
  "$VENV/bin/python" - "$reqs" <<'PY'
import sys
try: import tomllib
except ImportError: from pip._vendor import tomli as tomllib   # Python 3.10
p = tomllib.load(open('pyproject.toml', 'rb'))['project']
open(sys.argv[1], 'w').write('\n'.join(d for d in p['dependencies'] + p['optional-dependencies']['dev'] if not d.startswith('pufferlib')))
PY
  install -r "$reqs" || { kill $build 2>/dev/null; fail "the requirements in pyproject.toml did not install"; }
  rm -f "$reqs"
  wait $build || fail "the PufferLib build failed"
  install --no-deps --reinstall .cache/wheels/pufferlib-"$puffer"-*.whl
fi
install --find-links .cache/wheels -e '.[dev]'
"$VENV/bin/uv" pip uninstall -q --python "$VENV/bin/python" $(grep -v '^#' tools/uv_excludes.txt)   # from an older .venv
root=$(pwd)
mpl=$(mktemp -d)   # matplotlib's font cache kept apart: the install leaves the run's caches empty (run.json's `caches`)
(cd /tmp && MPLCONFIGDIR="$mpl" "$root/$VENV/bin/python" -c 'import genome_lab.registry.store, pufferlib.ocean.snake.binding, pufferlib._C') \
  || fail "genome_lab or pufferlib does not import after the install"
# each command's --help text, cached for this code (genome_lab.pipeline.command_help): later calls answer in under 1 s
(cd /tmp && MPLCONFIGDIR="$mpl" OMP_NUM_THREADS=1 "$root/$VENV/bin/python" -c 'from genome_lab.pipeline import commands, command_help; [command_help(c) for c in commands()]') \
  >/dev/null 2>&1 || echo "setup: could not cache the commands' help (genome-lab COMMAND --help still works, slower)" >&2
rm -rf "$mpl"
echo "$stamp_src" > "$VENV/.genome_lab_installed"
echo "setup: done"
