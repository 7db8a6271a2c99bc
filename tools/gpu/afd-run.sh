#!/usr/bin/env bash
# AFD on two GPUs, run on the device machine (nvidia-h200-x2) from the repository root.
# Needs, carried from the build machine: .node-runtime/node.xz (xz of a Node 20 binary)
# and native/$AFD_GPU_BUILD/Release/{afd_native.node,afd-bench.cjs} (tools/gpu/afd-prepare.sh).
# Writes $OUT/afd-gpu.json (the report), $OUT/afd-gpu.log and $OUT/env.txt.
# Extra arguments go to `afd-bench afd-gpu` (e.g. --batches 1,64,256,512).
set -euo pipefail
OUT=${OUT:-/tmp/afd-gpu-out}
mkdir -p "$OUT"
# NVLink multicast stays off everywhere (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NODE=/tmp/afd-node
xz -dc .node-runtime/node.xz > "$NODE" 2>/dev/null ||
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' .node-runtime/node.xz "$NODE"
chmod +x "$NODE"
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-nccl2}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node
# NCCL: the system library, else the one of the image's Python wheel.
if ! ldconfig -p | grep -q 'libnccl.so.2'; then
  WHEEL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  if [ -n "$WHEEL" ]; then export LD_LIBRARY_PATH=$WHEEL:$LD_LIBRARY_PATH; fi
fi
{
  nvidia-smi --query-gpu=index,name,memory.total,clocks.sm --format=csv || true
  nvidia-smi topo -m || true
  ldconfig -p | grep -i nccl || true
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
} > "$OUT/env.txt" 2>&1
timeout "${AFD_GPU_TIMEOUT:-420}" "$NODE" "$RELEASE/afd-bench.cjs" afd-gpu --json-out "$OUT/afd-gpu.json" "$@" 2>&1 | tee "$OUT/afd-gpu.log"
