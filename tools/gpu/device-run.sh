#!/usr/bin/env bash
# One call on the GPU host (run from the repository root with $OUT set): unpack the
# carried Node, run the GPU test suite, the decode benchmark (ours + the HF peer) and an
# ncu kernel profile of batch-1 decode steps. Everything lands in $OUT.
# Set AFD_COMMIT (e.g. $(git rev-parse --short HEAD) computed before the call) to stamp the report.
# Carried: .device-carry/node.xz (device-env.sh), native/$AFD_ADDON_BUILD/Release/afd_native.node and
# afd_native_testing.node (the GPU suite's conformance; default build-cuda),
# agent/dist (afd-bench.cjs), tools/gpu/dist (gpu-tests.cjs), or AFD_BENCH_BUNDLE / AFD_TESTS_BUNDLE.
# Stages (AFD_STAGES): tests, bench, expert (afd-bench expert-gemm), tcattn (attention families), nopdl, profile.
set -u
source tools/gpu/device-env.sh
export AFD_NATIVE_ADDON=$PWD/native/${AFD_ADDON_BUILD:-build-cuda}/Release/afd_native.node
export AFD_NATIVE_TESTING_ADDON=$PWD/native/${AFD_ADDON_BUILD:-build-cuda}/Release/afd_native_testing.node
# Bundles: default the workspace dist folders; afd-prepare.sh also puts them beside the addon.
BENCH=${AFD_BENCH_BUNDLE:-agent/dist/afd-bench.cjs}
TESTS=${AFD_TESTS_BUNDLE:-tools/gpu/dist/gpu-tests.cjs}
OUT=${OUT:-/tmp/afd-out}
mkdir -p "$OUT"
STAGES=${AFD_STAGES:-tests,bench,profile}
{ nvidia-smi; nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.mem,power.draw --format=csv; $NODE --version; } > "$OUT/machine.txt" 2>&1
$NODE -e 'const a=require(process.env.AFD_NATIVE_ADDON); console.log(JSON.stringify(a.probe(), null, 1))' > "$OUT/probe.json" 2>&1

if [[ $STAGES == *tests* ]]; then
  AFD_GPU_REPORT="$OUT/gpu-tests.json" timeout ${AFD_TEST_TIMEOUT:-240} $NODE $TESTS > "$OUT/gpu-tests.log" 2>&1
  echo "gpu tests exit $?" >> "$OUT/gpu-tests.log"
  grep -E "^FAIL|gpu tests" "$OUT/gpu-tests.log" | head -40
fi
if [[ $STAGES == *bench* ]]; then
  timeout ${AFD_BENCH_TIMEOUT:-420} $NODE $BENCH decode ${AFD_BENCH_ARGS:-} --json-out "$OUT/bench.json" > /dev/null 2> "$OUT/bench.log"
  echo "bench exit $?" >> "$OUT/bench.log"
  grep -vE "^\s*$" "$OUT/bench.log" | tail -25
fi
if [[ $STAGES == *expert* ]]; then
  timeout ${AFD_EXPERT_TIMEOUT:-90} $NODE $BENCH expert-gemm ${AFD_EXPERT_ARGS:-} --json-out "$OUT/expert-gemm.json" > /dev/null 2> "$OUT/expert-gemm.log"
  echo "expert-gemm bench exit $?" >> "$OUT/expert-gemm.log"
  grep -vE "^\s*$" "$OUT/expert-gemm.log" | tail -14
fi
if [[ $STAGES == *tcattn* ]]; then
  # The attention family the default (auto) did not pick, at the batches where it did not
  # (the debugging override AFD_CUDA_ATTENTION, core/debug-env.h; the auto rule: cuda/attention.cuh).
  for fam in simt tc; do
    batches=${AFD_TCATTN_SIMT_BATCHES:-8,64}
    [ $fam = tc ] && batches=${AFD_TCATTN_TC_BATCHES:-1}
    AFD_CUDA_ATTENTION=$fam timeout ${AFD_TCATTN_TIMEOUT:-60} $NODE $BENCH decode --batches $batches --peer none \
      --steps 15 --warmup 3 --json-out "$OUT/bench-attn-$fam.json" > /dev/null 2> "$OUT/bench-attn-$fam.log"
    echo "bench (attention $fam) exit $?" >> "$OUT/bench-attn-$fam.log"
    grep -vE "^\s*$" "$OUT/bench-attn-$fam.log" | tail -6
  done
fi
if [[ $STAGES == *nopdl* ]]; then
  AFD_CUDA_PDL=0 timeout ${AFD_NOPDL_TIMEOUT:-90} $NODE $BENCH decode --batches 1,64 --peer none --steps 20 \
    --json-out "$OUT/bench-nopdl.json" > /dev/null 2> "$OUT/bench-nopdl.log"
  echo "bench (PDL off) exit $?" >> "$OUT/bench-nopdl.log"
  grep -vE "^\s*$" "$OUT/bench-nopdl.log" | tail -6
fi
if [[ $STAGES == *profile* ]] && command -v ncu > /dev/null; then
  for b in ${AFD_PROFILE_BATCHES:-1}; do
    timeout ${AFD_PROFILE_TIMEOUT:-150} ncu --clock-control none --launch-skip ${AFD_PROFILE_SKIP:-900} --launch-count 600 \
      --metrics gpu__time_duration.sum --csv $NODE $BENCH decode --batches $b \
      --steps 2 --warmup 2 --peer none > "$OUT/ncu-b$b.csv" 2> "$OUT/ncu-b$b.log"
    python3 tools/gpu/summarize_ncu.py "$OUT/ncu-b$b.csv" > "$OUT/profile-b$b.txt" 2>&1
    echo "== profile batch $b"; head -16 "$OUT/profile-b$b.txt"
  done
fi
