# Sourced by the device-machine scripts (run from the repository root): the environment
# every process there starts with, and the carried Node runtime unpacked to $NODE.
# Carried: .node-runtime/node.xz (tools/gpu/afd-prepare.sh makes it).
# NVLink multicast stays off everywhere (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# NCCL: the system library, else the one of the image's Python wheel.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2'; then
  AFD_NCCL_WHEEL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  if [ -n "$AFD_NCCL_WHEEL" ]; then export LD_LIBRARY_PATH=$AFD_NCCL_WHEEL:$LD_LIBRARY_PATH; fi
fi
NODE=${NODE:-/tmp/afd-node}
if [ ! -x "$NODE" ]; then
  xz -dc .node-runtime/node.xz > "$NODE" 2>/dev/null ||
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' .node-runtime/node.xz "$NODE"
  chmod +x "$NODE"
fi
