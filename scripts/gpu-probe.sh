#!/usr/bin/env bash
# scripts/gpu-probe.sh (issue 33): the agent's GPU code (discovery, offered hardware, telemetry idle and under load)
# against a real NVIDIA driver, on a GPU machine that cannot run containers: scripts/gpu-check.sh needs Docker and the
# NVIDIA Container Toolkit, which a GPU sandbox (the device machines lent to this project: gVisor or Firecracker, no
# Docker) does not have. It needs no node_modules: scripts/gpu-probe.sh --bundle, on a development machine, writes
# .gpu/gpu-probe.mjs (esbuild; one file) and .gpu/node.xz (this machine's node, when the GPU machine has none), and the
# GPU machine runs `bash scripts/gpu-probe.sh [OUTDIR]`.
# What comes back in OUTDIR: report.json (the probe's JSON) and every raw nvidia-smi output it parsed (query.csv,
# banner.txt, list.txt, telemetry-idle.txt, telemetry-load.txt), to be kept as test fixtures of a real driver.
# Load: PyTorch matrix products for up to 40 s when python3 has torch (GPU_PROBE_LOAD=0: none).
# Exit 0: all checks passed; 1: a check failed; 2: not a GPU machine.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

if [ "${1:-}" = "--bundle" ]; then
  mkdir -p .gpu
  npx esbuild scripts/gpu-probe.ts --bundle --platform=node --format=esm --target=node20 --outfile=.gpu/gpu-probe.mjs \
    --banner:js="import { createRequire } from 'module'; const require = createRequire(import.meta.url);" || exit 1
  [ -f .gpu/node.xz ] || xz -T0 -6 -c "$(command -v node)" >.gpu/node.xz || exit 1
  ls -la .gpu
  exit 0
fi

OUT_DIR="${1:-${OUT:-/tmp/gpu-probe}}"
mkdir -p "$OUT_DIR"
NODE="$(command -v node || true)"
if [ -z "$NODE" ] && [ -f .gpu/node.xz ]; then
  xz -dc .gpu/node.xz >/tmp/gpu-probe-node && chmod +x /tmp/gpu-probe-node && NODE=/tmp/gpu-probe-node
fi
[ -n "$NODE" ] || { echo "gpu-probe: no node, and no .gpu/node.xz (run scripts/gpu-probe.sh --bundle here first)"; exit 1; }
PROBE=.gpu/gpu-probe.mjs
[ -f "$PROBE" ] || { echo "gpu-probe: no $PROBE (run scripts/gpu-probe.sh --bundle first)"; exit 1; }

LOAD=()
if [ "${GPU_PROBE_LOAD:-1}" = "1" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  LOAD=(python3 -c 'import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 40
while time.time() < end:
    for _ in range(20): a @ a
    torch.cuda.synchronize()')
fi
echo "gpu-probe: node $("$NODE" --version), load: ${LOAD[0]:-none}"
timeout 120 "$NODE" "$PROBE" "$OUT_DIR" "${LOAD[@]}" >"$OUT_DIR/report.json"
rc=$?
cat "$OUT_DIR/report.json"
for f in "$OUT_DIR"/*.txt "$OUT_DIR"/*.csv; do [ -f "$f" ] && { echo "== $(basename "$f")"; cat "$f"; }; done
echo "gpu-probe: exit $rc"
exit $rc
