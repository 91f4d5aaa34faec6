#!/usr/bin/env bash
# Build a PufferLib 3.0.0 wheel from its PyPI sdist, offline apart from the package index.
# The sdist's setup.py downloads raylib/box2d from GitHub; this script does what it needs without that:
# fetch the sdist from the index's simple page (sha256 checked; curl retries a failed lookup), drop impulse_wars
# (box2d), create the empty folders setup.py looks for, keep only the Ocean envs genome_lab uses and their trained
# weights, patch it (below), build the trainer's torch extension `pufferlib._C` for the CPU (the 'trainer' step below).
# The wheel's version carries a local label, LOCAL_VERSION, so setup.sh can tell a patched install with the trainer.
# Usage: tools/build_pufferlib.sh PYTHON OUTDIR   (PYTHON must already have torch, numpy<2, setuptools)
#        tools/build_pufferlib.sh --version     (prints LOCAL_VERSION)
#        tools/build_pufferlib.sh --source PYTHON OUTDIR   (no build: the trimmed, patched source as
#            OUTDIR/pufferlib-LOCAL_VERSION-src.tar.gz, about 4 MB, for a CUDA build on a GPU machine without internet;
#            bench/gpu_check.sh builds it there)
set -euo pipefail
VERSION=3.0.0
LOCAL_VERSION=$VERSION+genomelab.3   # raise the number whenever the patch or the build changes (2: the trainer extension;
# 3: the trained weights of the kept envs only)
[ "${1:-}" = "--version" ] && { echo "$LOCAL_VERSION"; exit 0; }
MODE=wheel; [ "${1:-}" = "--source" ] && { MODE=source; shift; }
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$(command -v "${1:?usage: build_pufferlib.sh PYTHON OUTDIR}") || { echo "build_pufferlib: no python at $1" >&2; exit 1; }
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
OUT=${2:?usage: build_pufferlib.sh PYTHON OUTDIR}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
SHA256=7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9
KEEP_ENVS="snake tetris"   # Ocean envs whose C extension is compiled

fail() { echo "build_pufferlib: $*" >&2; exit 1; }
mkdir -p "$OUT"
[ "$MODE" = wheel ] && ls "$OUT"/pufferlib-"$LOCAL_VERSION"-*.whl >/dev/null 2>&1 && exit 0
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

index=${PIP_INDEX_URL:-$("$PY" -c 'from pip._internal.models.index import PyPI; print(PyPI.simple_url)')}
index=${index%/}
echo "build_pufferlib: looking up pufferlib $VERSION on $index"
page=$(curl -fsSL --retry 5 --retry-all-errors "$index/pufferlib/") || fail "cannot read $index/pufferlib/ (is the package index reachable?)"
url=$(printf '%s' "$page" | grep -o "href=\"[^\"]*pufferlib-$VERSION\.tar\.gz[^\"]*\"" | head -1 | sed 's/^href="//; s/"$//; s/&amp;/\&/g')
[ -n "$url" ] || fail "no pufferlib-$VERSION.tar.gz link on $index/pufferlib/"
case "$url" in http*) ;; /*) url="${index%%/simple*}$url" ;; *) url="$index/pufferlib/$url" ;; esac
curl -fsSL --retry 5 --retry-all-errors -o "$work/sdist.tar.gz" "${url%%#*}" || fail "download of ${url%%#*} failed"
got=$(sha256sum "$work/sdist.tar.gz" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || fail "sha256 mismatch for the sdist: expected $SHA256, got $got"

tar xzf "$work/sdist.tar.gz" -C "$work" || fail "cannot unpack the sdist"
src="$work/pufferlib-$VERSION"
rm -rf "$src/pufferlib/ocean/impulse_wars"
mkdir -p "$src/raylib-5.5_webassembly" "$src/box2d-web" "$src/box2d-linux-amd64"
[ -f "$src/raylib-5.5_linux_amd64/lib/libraylib.a" ] || fail "the sdist has no raylib-5.5_linux_amd64/lib/libraylib.a"
for b in "$src"/pufferlib/ocean/*/binding.c; do
  env=$(basename "$(dirname "$b")")
  case " $KEEP_ENVS " in *" $env "*) ;; *) rm -f "$b" ;; esac
done
# the trained weights of the kept envs only (genome_lab.arenas.policies reads resources/ENV/ENV_weights.bin): the other
# envs' weights only made the wheel larger and the build slower
for r in "$src"/pufferlib/resources/*/; do
  case " $KEEP_ENVS " in *" $(basename "$r") "*) ;; *) rm -rf "$r" ;; esac
done

# Patch: every Snake and Tetris env owns its random stream instead of libc's process-global rand()
# (tools/pufferlib_patch/apply.py says what it edits), and the version gets the local label.
"$PY" "$HERE/pufferlib_patch/apply.py" "$src" "$LOCAL_VERSION" || fail "patching the sdist failed"

if [ "$MODE" = source ]; then
  # For the GPU machine: setup.py's CUDA branch stays (it builds pufferlib._C as a CUDAExtension where nvcc is found);
  # -flto goes (there the snake binding failed to link: "could not run lto-wrapper"); the trained weights in
  # pufferlib/resources (72 MB) go (training does not read them; the folder stays, empty).
  grep -q "^        '-flto',\$" "$src/setup.py" \
    || fail "setup.py of pufferlib $VERSION no longer lists -flto as this script expects"
  sed -i "/^        '-flto',\$/d" "$src/setup.py"
  rm -rf "$src/pufferlib/resources"; mkdir "$src/pufferlib/resources"
  tar czf "$OUT/pufferlib-$LOCAL_VERSION-src.tar.gz" -C "$work" "pufferlib-$VERSION"
  echo "build_pufferlib: wrote $OUT/pufferlib-$LOCAL_VERSION-src.tar.gz"; exit 0
fi
# --- trainer (genome_lab issue 23): build the torch extension pufferlib._C (PuffeRL's advantage kernel) for the CPU ---
# setup.py builds a CUDAExtension whenever an `nvcc` is on PATH, even where there is no CUDA; force its CppExtension
# branch (the CPU kernel in pufferlib/extensions/pufferlib.cpp; pufferl.py falls back to it without CUDA).
sed -i 's/^    if shutil.which("nvcc"):$/    if False:  # genome_lab: CPU CppExtension/' "$src/setup.py"
grep -q '^    if False:  # genome_lab: CPU CppExtension$' "$src/setup.py" \
  || fail "setup.py of pufferlib $VERSION no longer has the nvcc check this script patches"
# Of the trainer's requirements keep those `import pufferlib.pufferl` needs (torch, psutil, rich, rich_argparse, pyro-ppl;
# pyproject.toml lists them too): drop the loggers (neptune, wandb), the GPU monitor, imageio and heavyball (whose
# current release lacks the ForeachMuon that optimizer = muon imports; genome_lab trains with adam).
for dep in pynvml imageio heavyball neptune wandb; do
  grep -q "^        '$dep',\$" "$src/setup.py" || fail "setup.py of pufferlib $VERSION does not list $dep as this script expects"
  sed -i "/^        '$dep',\$/d" "$src/setup.py"
done
# --- end trainer ---
echo "build_pufferlib: compiling Ocean envs ($KEEP_ENVS) and the trainer extension pufferlib._C"
(cd "$src" && "$PY" -m pip wheel --no-build-isolation --no-deps -w "$OUT" . >"$work/build.log" 2>&1) \
  || { tail -40 "$work/build.log" >&2; fail "pip wheel failed (log tail above)"; }
ls "$OUT"/pufferlib-"$LOCAL_VERSION"-*.whl >/dev/null 2>&1 || fail "no wheel was written to $OUT"
echo "build_pufferlib: built $(ls "$OUT"/pufferlib-"$LOCAL_VERSION"-*.whl)"
