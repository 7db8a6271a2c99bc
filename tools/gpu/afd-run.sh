#!/usr/bin/env bash
# AFD on two GPUs, everything in one call on the device machine (nvidia-h200-x2), from
# the repository root. Carried from the build machine (tools/gpu/afd-prepare.sh):
# .device-carry (unpacked by device-env.sh into native/$AFD_GPU_BUILD/Release: afd_native.node, afd_native_testing.node,
# afd-bench.cjs, afd-agent.cjs, afd-split-check.cjs, tokenizer-qwen3/).
# Phases (AFD_PHASES, comma-separated; default all; at most 90 + 170 + 210 s plus setup, under 8 min):
#   check  the carried addons load (product and testing), are CUDA builds, see 2 GPUs, export what we call
#   split  AFD / DBO split exactness on GPU 0 (64 and 256 rows vs unsplit)   -> split.json
#   roles  role processes over device connectors (AFD_ROLES_CONNECTOR=nccl (default), peer or nccl,peer; AFD_ROLES_ONLY=a,b picks cases): 1A1F (graphs on / off, gate on attention, DBO),
#          2A1F vs colocated texts, FFN-kill fault at batch 1 and 8           -> roles/afd-roles.json
#   bench  `afd-bench afd-gpu` at batches 1,64,256,512 with the fault case   -> afd-gpu.json
# Extra arguments go to afd-bench afd-gpu (default: --batches 1,64,256,512 --steps 8
# --warmup 2 --ping-iters 50). Writes everything under $OUT and prints a summary.
set -uo pipefail
OUT=${OUT:-/tmp/afd-gpu-out}
mkdir -p "$OUT"
PHASES=${AFD_PHASES:-check,split,roles,bench}
source tools/gpu/device-env.sh
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-afd-gpu}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_NATIVE_TESTING_ADDON=$RELEASE/afd_native_testing.node
{
  nvidia-smi --query-gpu=index,name,memory.total,clocks.sm --format=csv || true
  nvidia-smi topo -m || true
  ldconfig -p | grep -i nccl || true
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
} > "$OUT/env.txt" 2>&1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

if [[ $PHASES == *check* ]]; then
  timeout 60 "$NODE" -e '
    const a = require(process.env.AFD_NATIVE_ADDON);
    const t = require(process.env.AFD_NATIVE_TESTING_ADDON);
    const p = a.probe();
    const missing = ["FfnServer", "AttentionLink"].filter((n) => typeof a[n] !== "function")
      .concat(["cudaConformance"].filter((n) => typeof t[n] !== "function").map((n) => "testing addon " + n));
    const ok = p.variant === "cuda" && p.devices.length >= 2 && missing.length === 0;
    console.log(JSON.stringify({ ok, variant: p.variant, devices: p.devices.map((d) => d.name), missing }));
    process.exit(ok ? 0 : 1);' > "$OUT/check.json" 2>&1
  say "check: exit $? $(head -c 300 "$OUT/check.json")"
fi
if [[ $PHASES == *split* ]]; then
  CUDA_VISIBLE_DEVICES=0 timeout "${AFD_SPLIT_TIMEOUT:-90}" "$NODE" "$RELEASE/afd-split-check.cjs" "$OUT/split.json" > "$OUT/split.log" 2>&1
  say "split: exit $?"; grep -E "^(PASS|FAIL)|split check" "$OUT/split.log" | tee -a "$SUMMARY"
fi
if [[ $PHASES == *roles* ]]; then
  # One run per connector (AFD_ROLES_CONNECTOR=nccl,peer runs both: about 170 s each);
  # nccl writes to roles/, any other connector to roles-<connector>/.
  for CONN in $(echo "${AFD_ROLES_CONNECTOR:-nccl}" | tr ',' ' '); do
    DIR=$OUT/roles; [ "$CONN" = nccl ] || DIR=$OUT/roles-$CONN
    mkdir -p "$DIR"
    AFD_HOME=/tmp/afd-roles-home timeout "${AFD_ROLES_TIMEOUT:-170}" "$NODE" tools/gpu/afd-roles.mjs \
      --agent "$RELEASE/afd-agent.cjs" --out "$DIR" --timeout-ms 160000 --connector "$CONN" \
      ${AFD_ROLES_ONLY:+--only "$AFD_ROLES_ONLY"} > "$DIR.log" 2>&1
    say "roles (connector $CONN): exit $?"
    "$NODE" -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      console.log("  passed", r.passed, JSON.stringify(r.summary));
      for (const [k, f] of Object.entries(r.faults || {})) console.log("  ", k, "failedAfterKillMs", JSON.stringify(f.failedAfterKillMs), "health", f.attentionHealth && f.attentionHealth.status, "landed", JSON.stringify(f.landed), "stop", f.attentionStop);
      for (const [k, c] of Object.entries(r.checks || {})) if (c.ffnGraph) console.log("  ", k, "FFN graph", JSON.stringify(c.ffnGraph));
      for (const e of r.errors || []) console.log("  error:", String(e).slice(0, 300));' "$DIR/afd-roles.json" 2>&1 | tee -a "$SUMMARY"
  done
fi
if [[ $PHASES == *bench* ]]; then
  BENCH_ARGS=("$@")
  [ ${#BENCH_ARGS[@]} -gt 0 ] || BENCH_ARGS=(--batches 1,64,256,512 --steps 8 --warmup 2 --ping-iters 50)
  timeout "${AFD_GPU_TIMEOUT:-210}" "$NODE" "$RELEASE/afd-bench.cjs" afd-gpu --json-out "$OUT/afd-gpu.json" "${BENCH_ARGS[@]}" \
    > "$OUT/afd-gpu.stdout" 2> "$OUT/afd-gpu.log"
  say "bench: exit $? (a report cut short is in afd-gpu.json.partial)"
  REPORT=$OUT/afd-gpu.json
  [ -s "$REPORT" ] || REPORT=$OUT/afd-gpu.json.partial
  "$NODE" -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    for (const p of r.pingPong || []) console.log("  ping", p.transport, p.bytes, "host", p.hostRoundTripUs, "graph", p.graphRoundTripUs);
    for (const c of r.colocated || []) console.log("  colocated batch", c.batch, "ms", c.msPerStep.toFixed(2));
    for (const a of r.afd || []) if (a.batch !== undefined) console.log("  afd", a.transport, "gate", a.gate, "batch", a.batch, a.graph ? "graph" : "eager", a.dbo ? "dbo" : "", "ms", a.msPerStep.toFixed(2), "ratio", a.ratioToColocated.toFixed(3), "mismatchedSteps", a.mismatchedSteps, "of", a.steps);
    for (const a of r.afd || []) if (a.batch === undefined) console.log("  counters", JSON.stringify(a));
    console.log("  fault", JSON.stringify(r.fault));
    console.log("  stageExactGemm", r.stageExactGemm, "targets", JSON.stringify(r.targets));' "$REPORT" 2>&1 | tee -a "$SUMMARY"
fi
echo "all results under $OUT (summary.txt, check.json, split.json, roles/, afd-gpu.json)"
