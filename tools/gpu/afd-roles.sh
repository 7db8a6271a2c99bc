#!/usr/bin/env bash
# AFD role processes with the NCCL connector on two GPUs (nvidia-h200-x2), from the
# repository root: colocated vs 1A1F and 2A1F greedy completions, the FFN-kill fault
# test, 1A1F with DBO (tools/gpu/afd-roles.mjs). Needs, carried from the build machine
# (tools/gpu/afd-prepare.sh): .node-runtime/node.xz and
# native/$AFD_GPU_BUILD/Release/{afd_native.node,afd-agent.cjs}.
# Writes $OUT/afd-roles.json, one log per process and $OUT/env.txt.
set -euo pipefail
OUT=${OUT:-/tmp/afd-roles-out}
mkdir -p "$OUT"
# NVLink multicast stays off everywhere (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NODE=/tmp/afd-node
[ -x "$NODE" ] || { xz -dc .node-runtime/node.xz > "$NODE" 2>/dev/null ||
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' .node-runtime/node.xz "$NODE"; }
chmod +x "$NODE"
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-afd-gpu}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-roles-home
if ! ldconfig -p | grep -q 'libnccl.so.2'; then
  WHEEL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  if [ -n "$WHEEL" ]; then export LD_LIBRARY_PATH=$WHEEL:$LD_LIBRARY_PATH; fi
fi
{ nvidia-smi --query-gpu=index,name,memory.total --format=csv || true; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } > "$OUT/env.txt" 2>&1
timeout "${AFD_ROLES_TIMEOUT:-320}" "$NODE" tools/gpu/afd-roles.mjs --agent "$RELEASE/afd-agent.cjs" --out "$OUT" "$@"
