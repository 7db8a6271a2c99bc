#!/usr/bin/env bash
# AFD role processes with the NCCL connector on two GPUs (nvidia-h200-x2), from the
# repository root: colocated vs 1A1F and 2A1F greedy completions, the FFN-kill fault
# test, 1A1F with DBO (tools/gpu/afd-roles.mjs). Needs, carried from the build machine
# (tools/gpu/afd-prepare.sh): .device-carry, unpacked by device-env.sh into
# native/$AFD_GPU_BUILD/Release/{afd_native.node,afd-agent.cjs}.
# Writes $OUT/afd-roles.json, one log per process and $OUT/env.txt.
set -euo pipefail
OUT=${OUT:-/tmp/afd-roles-out}
mkdir -p "$OUT"
source tools/gpu/device-env.sh
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-afd-gpu}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-roles-home
{ nvidia-smi --query-gpu=index,name,memory.total --format=csv || true; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } > "$OUT/env.txt" 2>&1
timeout "${AFD_ROLES_TIMEOUT:-320}" "$NODE" tools/gpu/afd-roles.mjs --agent "$RELEASE/afd-agent.cjs" --out "$OUT" "$@"
