#!/usr/bin/env bash
# The deployment from nothing (chapter 84_deploy, genome_lab.web.deploy): runs the blocks of docs/runbooks/deploy.md in order
# (install Podman, write the settings, up, check, status, backup, restore, down) with a settings file of its own (free
# loopback ports, a fresh token, names of its own), checks the restored registry against the lab's manifest, then
# removes what it made (pod, secret, volumes, images; with --fresh also the base image, which it then builds first).
#   bash tools/deploy_smoke.sh [--fresh]
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=${1:-}
bash tools/setup.sh
bash tools/setup_debian.sh podman:podman runc:runc mmdebstrap:mmdebstrap catatonit:catatonit
export CONTAINERS_CONF="$PWD/deploy/containers.conf" PATH="$PWD/.venv/bin:$PATH"
work=$(mktemp -d)
export ENV_FILE="$work/smoke.env" WORK="$work/deploy"
ports=($(python -c 'from genome_lab.web.server import free_port
a = b = free_port()
while b == a: b = free_port()
print(a, b)'))
sed -e "s/^GENOME_LAB_TOKEN=$/GENOME_LAB_TOKEN=smoke-$(python -c 'import secrets; print(secrets.token_urlsafe(18))')/" \
    -e "s/^GENOME_LAB_HTTPS_PORT=.*/GENOME_LAB_HTTPS_PORT=${ports[0]}/" -e "s/^GENOME_LAB_HTTP_PORT=.*/GENOME_LAB_HTTP_PORT=${ports[1]}/" \
    -e "s/^GENOME_LAB_NAME=.*/GENOME_LAB_NAME=genome-lab-smoke/" -e "s/^GENOME_LAB_VOLUME=.*/GENOME_LAB_VOLUME=genome-lab-smoke-registry/" \
    deploy/env.example > "$ENV_FILE"
cleanup() {   # what it made: the pod, the secret, the volumes, the images (the base image too with --fresh)
  genome-lab deploy down --purge --env-file "$ENV_FILE" --work "$WORK" >/dev/null 2>&1 || true
  if [ "$fresh" = "--fresh" ]; then podman rmi -f localhost/genome-lab-base:bookworm >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$fresh" = "--fresh" ]; then   # an empty image store: this smoke's images and the base image go first
  genome-lab deploy down --purge --env-file "$ENV_FILE" --work "$WORK" >/dev/null
  podman rmi -f localhost/genome-lab-base:bookworm >/dev/null 2>&1 || true
fi
# the page's blocks, in its order (its Settings block is replaced by the exports above)
python - docs/runbooks/deploy.md > "$work/blocks.tsv" <<'PY'
import re, sys
for caption, body in re.findall(r'^```\{code-block\} bash\n:caption: (.+?)\n(.*?)^```$', open(sys.argv[1]).read(), re.S | re.M):
    if caption != 'Settings': print(caption + '\t' + body.replace('\n', '\x1f'))
PY
while IFS=$'\t' read -r caption body; do
  t0=$(date +%s); echo "deploy_smoke: $caption"
  bash -euo pipefail -c "${body//$'\x1f'/$'\n'}"
  echo "deploy_smoke: $caption: $(( $(date +%s) - t0 )) s"
done < "$work/blocks.tsv"
python - "$WORK/restored" <<'PY'
import sys
from genome_lab.registry.store import Registry
with Registry(sys.argv[1], read_only=True) as reg: n = len(reg.ids())
assert n >= 5, n
print(f"deploy_smoke: the restored registry opens with {n} genomes")
PY
echo "deploy_smoke: passed"
