#!/usr/bin/env bash
# What stop 55 (2026-12-08) built without a GPU, in one device call (~8 min on one H100 or
# H200; carry .device-carry from afd-prepare.sh). Each part writes under $OUT/<part>:
#   t        the GPU suite groups the changes touch (linear-attention conformance with the
#            coalesced gated-delta-rule decode kernel, gdn, kvpeer with pulls beside the step,
#            golden under the reference-noise clause), then 1P1A1F by peer memory against
#            colocated at c=8 (issue 41: the fence and pull no longer wait for the step mutex)
#   g-columns / g-warps   Qwen3.5-35B-A3B decode steps with each gated-delta-rule kernel
#            (AFD_GDN_KERNEL), batches 1 and 64 (issue 40's step / floor targets)
#   hit      ncu kernel times of one prefix-hit step, 16 x 110 new tokens over 3,000 cached
#            (afd-bench decode --profile-range hit; issue 36's served hit TTFT)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
R=${OUT:-/tmp/afd-recheck}
mkdir -p "$R"
OUT=$R/t AFD_PHASES=tests,pd AFD_GPU_GROUP_LIST=conformance:linear,gdn,kvpeer,golden AFD_MODEL_ARCH=qwen3 \
  AFD_MODEL_PRESET=qwen3-8b AFD_PD_RUNS=colocated,1p1a1f AFD_PD_CONCURRENCY=8 AFD_PD_KV_MIB=16384 \
  timeout 380 bash tools/gpu/one-gpu-run.sh > "$R/t.log" 2>&1
pkill -f afd-agent.cjs
for k in columns warps; do
  OUT=$R/g-$k AFD_GDN_KERNEL=$k AFD_PHASES=decode AFD_DECODE_TIMEOUT=140 \
    AFD_DECODE_ARGS="--arch qwen3_5_moe --preset qwen3.5-35b-a3b --batches 1,64 --context 1024 --steps 20 --warmup 3 --modes graph --prefill-tokens 2048 --peer none" \
    bash tools/gpu/one-gpu-run.sh > "$R/g-$k.log" 2>&1
done
OUT=$R/hit AFD_PHASES=profile AFD_PROFILE_RANGE=hit AFD_PROFILE_BATCHES=16 AFD_PROFILE_TIMEOUT=150 \
  AFD_PROFILE_ARGS="--prefix-hit 110 --context 3000" bash tools/gpu/one-gpu-run.sh > "$R/hit.log" 2>&1
tail -n 40 "$R"/t/summary.txt "$R"/g-*/summary.txt "$R"/hit/summary.txt
(cd "$R" && tar -czf /tmp/afd-recheck.tgz --exclude=0results.tgz . && mv /tmp/afd-recheck.tgz 0results.tgz)
