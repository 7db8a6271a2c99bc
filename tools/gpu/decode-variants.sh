#!/usr/bin/env bash
# A/B of kernel choices on the device machine: afd-bench decode (graphs on) once per variant,
# each a set of debugging overrides (docs/afd-runtime.md), in one call so that every
# figure comes from the same machine and lease. From the repository root, .device-carry
# carried (tools/gpu/afd-prepare.sh).
#   AFD_VARIANTS   variants separated by ';', each space-separated VAR=VALUE pairs or
#                  'default', e.g. "default;AFD_CUDA_WEIGHT_PREFETCH=0;AFD_STREAM_GEMM_WARPS=8"
#   AFD_DECODE_ARGS  afd-bench decode arguments (default: --batches 1,8,64 --modes graph --peer none)
# Writes $OUT/variant-<i>.json / .log and a table in $OUT/variants.txt.
set -uo pipefail
OUT=${OUT:-/tmp/afd-variants}
mkdir -p "$OUT"
source tools/gpu/device-env.sh
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-afd-gpu}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-home
ARGS=${AFD_DECODE_ARGS:---batches 1,8,64 --modes graph --peer none}
IFS=';' read -ra VARIANTS <<< "${AFD_VARIANTS:-default}"
: > "$OUT/variants.txt"
for i in "${!VARIANTS[@]}"; do
  V=${VARIANTS[$i]}
  ENVS=()
  [ "$V" != default ] && read -ra ENVS <<< "$V"
  env "${ENVS[@]}" timeout ${AFD_VARIANT_TIMEOUT:-240} "$NODE" "$RELEASE/afd-bench.cjs" decode $ARGS \
    --json-out "$OUT/variant-$i.json" > /dev/null 2> "$OUT/variant-$i.log"
  echo "== variant $i ($V): exit $?" | tee -a "$OUT/variants.txt"
  grep -E "ms/step" "$OUT/variant-$i.log" | sed 's/^afd-bench decode: //' | tee -a "$OUT/variants.txt"
done
