# Sourced by the device-machine scripts (run from the repository root): the environment
# every process there starts with, the carried Release folder unpacked, and the carried
# Node runtime unpacked to $NODE.
# Carried: .device-carry (tools/gpu/afd-prepare.sh makes it: node.xz, release.tar.xz and
# build-dir, the native/<build> folder the release goes back into).
# NVLink multicast stays off everywhere (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# NCCL: the system library, else the one of the image's Python wheel.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2'; then
  AFD_NCCL_WHEEL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  if [ -n "$AFD_NCCL_WHEEL" ]; then export LD_LIBRARY_PATH=$AFD_NCCL_WHEEL:$LD_LIBRARY_PATH; fi
fi
# xz, or Python's lzma where the image has no xz.
afd_unxz() { xz -dc "$1" 2>/dev/null || python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; }
if [ -f .device-carry/release.tar.xz ]; then
  AFD_GPU_BUILD=${AFD_GPU_BUILD:-$(cat .device-carry/build-dir 2>/dev/null || echo build-afd-gpu)}
  export AFD_GPU_BUILD
  if [ ! -f "native/$AFD_GPU_BUILD/Release/afd_native.node" ]; then
    mkdir -p "native/$AFD_GPU_BUILD" && afd_unxz .device-carry/release.tar.xz | tar -C "native/$AFD_GPU_BUILD" -xf -
  fi
fi
NODE=${NODE:-/tmp/afd-node}
if [ ! -x "$NODE" ]; then
  afd_unxz .device-carry/node.xz > "$NODE"
  chmod +x "$NODE"
fi
