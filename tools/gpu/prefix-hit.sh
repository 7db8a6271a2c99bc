#!/usr/bin/env bash
# What a prefix-cache hit costs Engine::step on one GPU (issue 36), per attention precision
# (AFD_ATTENTION_PRECISION, core/backend-options.h): afd-bench decode --prefix-hit on
# qwen3-30b-a3b dummy weights, a burst of $AFD_HIT_BATCHES sequences each adding
# $AFD_HIT_SUFFIX tokens over $AFD_HIT_CONTEXT cached ones, against the cold prefill of the
# same prompts; then the GPU suite groups $AFD_HIT_GROUPS under each precision.
# Writes hit-<precision>.json/.log, gpu-<precision>-<group>.json and summary.txt under $OUT.
# Run from the repository root with .device-carry carried (tools/gpu/afd-prepare.sh).
set -uo pipefail
OUT=${OUT:-/tmp/afd-prefix-hit}
mkdir -p "$OUT"
source tools/gpu/device-env.sh
RELEASE=$PWD/native/$AFD_GPU_BUILD/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-home
BENCH="$NODE $RELEASE/afd-bench.cjs"
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/machine.txt" 2>&1
for P in ${AFD_HIT_PRECISIONS:-split bf16}; do
  AFD_ATTENTION_PRECISION=$P timeout ${AFD_HIT_TIMEOUT:-180} $BENCH decode --batches ${AFD_HIT_DECODE_BATCHES:-16} \
    --context ${AFD_HIT_CONTEXT:-3000} --prefix-hit ${AFD_HIT_SUFFIX:-110} --prefix-hit-batches ${AFD_HIT_BATCHES:-1,4,16} \
    --steps 5 --warmup 2 --modes graph --peer none --json-out "$OUT/hit-$P.json" > /dev/null 2> "$OUT/hit-$P.log"
  say "$P: exit $?"; grep -E "prefix hit|ms/step" "$OUT/hit-$P.log" | tee -a "$OUT/summary.txt"
done
for P in ${AFD_HIT_SUITE_PRECISIONS:-bf16}; do
  for G in $(echo "${AFD_HIT_GROUPS:-conformance:attention,prefix,golden,logprobs,engine}" | tr ',' ' '); do
    AFD_ATTENTION_PRECISION=$P AFD_GPU_GROUPS=$G AFD_GOLDEN_DIR=$PWD/tools/golden/fixtures AFD_GPU_REPORT="$OUT/gpu-$P-${G//:/-}.json" \
      timeout ${AFD_GROUP_TIMEOUT:-100} "$NODE" "$RELEASE/gpu-tests.cjs" >> "$OUT/gpu-tests-$P.log" 2>&1
    say "suite $P $G: exit $? $(grep -c '"passed": true' "$OUT/gpu-$P-${G//:/-}.json" 2>/dev/null) passed, $(grep -c '"passed": false' "$OUT/gpu-$P-${G//:/-}.json" 2>/dev/null) failed"
  done
done
(cd "$OUT" && tar -czf /tmp/afd-prefix-hit.tgz . && mv /tmp/afd-prefix-hit.tgz 0results.tgz)
