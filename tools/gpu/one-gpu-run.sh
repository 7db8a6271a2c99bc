#!/usr/bin/env bash
# The product on one H200, in one or two calls on the device machine (from the repository
# root; carried: .device-carry from afd-prepare.sh, which device-env.sh unpacks).
# Phases (AFD_PHASES, comma-separated):
#   tests   the GPU suite (conformance, engine on CUDA, graphs, AFD bit-equality, dummy
#           weights, golden fixtures under the bf16 rule)          -> gpu-tests.json / .log
#   decode  afd-bench decode: Engine::step, qwen3-30b-a3b dummy weights, graphs on/off,
#           the HF transformers peer in the same call               -> decode.json / .log
#   deepseek  afd-bench decode --arch deepseek_v2 --preset deepseek-v2-lite (MLA, grouped
#           routing, shared experts), with its HF peer             -> decode-deepseek.json / .log
#   serve   afd-agent launch --topology colocated --load-format dummy ($AFD_MODEL_PRESET; more
#           launch flags in $AFD_LAUNCH_ARGS, e.g. --max-num-seqs 16) and
#           afd-bench serve at concurrency $AFD_SERVE_CONCURRENCY (1,8,64), 1024 in / 256
#           out, --ignore-eos; greedy texts of 8 prompts             -> serve-c*.json, texts-colocated.json
#   afd     1A1F with both roles on GPU 0 over connector peer and tcp (role processes),
#           the same 8 prompts must give the colocated texts        -> texts-1a1f-*.json
#   experts expert parallelism, 2A2F on GPU 0 (role processes, connector peer): the
#           greedy texts over --ep-transport peer and tcp against colocated, and
#           afd-bench serve on qwen3-30b-a3b dummy weights per transport, and fault cases
#           (AFD_EP_PARTS=texts,bench,faults; tools/gpu/ep-one-gpu.sh, which also spreads the
#           ranks over two GPUs for the NCCL exchange)     -> texts-ep-*.json, ep-serve-*.json
#   mps     the agent managing CUDA MPS for ranks on GPU 0 (issue 37): colocated vs 1A1F
#           (and SM splits, DBO, 2A2F EP, time-sliced) through afd-agent launch --gpus 0, with
#           afd-bench serve; AFD_MPS_PARTS etc. in tools/gpu/mps-one-gpu.sh  -> mps-*.json
#   pd      prefill/decode disaggregation (issue 41): colocated vs 1P1A1F on GPU 0 under MPS,
#           4096-token prompts at c=8 and 64, the transfers' rate against loopback TCP
#           (tools/gpu/pd-one-gpu.sh)                               -> pd-*.json, tcp-bw.json
#   planner the planner's cost profiles on CUDA (full GPU and MPS shares) and its CPU
#           validation on the host's cores (tools/gpu/planner-one-gpu.sh)  -> planner/*
#   profile ncu kernel times of decode steps at $AFD_PROFILE_BATCHES (afd-bench decode
#           arguments $AFD_PROFILE_ARGS, e.g. --arch deepseek_v2 --preset deepseek-v2-lite)
#                                                                   -> profile-b*.txt
#   golden  regenerate the fixtures $AFD_GOLDEN_ONLY (make_golden.py --only) with the
#           installed transformers into the tree before the tests run; the new files and
#           whether each model.safetensors kept its bytes      -> golden-regen.tgz / .log
set -uo pipefail
OUT=${OUT:-/tmp/afd-one-gpu}
mkdir -p "$OUT"
PHASES=${AFD_PHASES:-tests,decode}
source tools/gpu/device-env.sh
RELEASE=$PWD/native/${AFD_GPU_BUILD:-build-afd-gpu}/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-home
AGENT="$NODE $RELEASE/afd-agent.cjs"
BENCH="$NODE $RELEASE/afd-bench.cjs"
SUMMARY=$OUT/summary.txt
say() { echo "$*" | tee -a "$SUMMARY"; }
{ nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.mem --format=csv; "$NODE" --version; } > "$OUT/machine.txt" 2>&1
# The model of the serve and afd phases: a config-only preset served with dummy weights
# (AFD_MODEL_ARCH / AFD_MODEL_PRESET, e.g. deepseek_v2 / deepseek-v2-lite).
MODEL_ARCH=${AFD_MODEL_ARCH:-qwen3_moe}
MODEL_PRESET=${AFD_MODEL_PRESET:-qwen3-30b-a3b}
MODEL=/tmp/afd-$MODEL_PRESET
[ -f $MODEL/config.json ] || $AGENT make-model --arch $MODEL_ARCH --preset $MODEL_PRESET --out $MODEL --config-only > /dev/null

# Waits for a launch's summary line (or its exit); prints the API URL.
wait_launch() {
  local log=$1 pid=$2 t=0
  while ! grep -q "Ctrl-C stops every rank" "$log" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || [ $t -ge 300 ]; then return 1; fi
    sleep 1; t=$((t + 1))
  done
  grep -o 'OpenAI API: http://[0-9.:]*' "$log" | head -1 | sed 's/OpenAI API: //'
}
# Waits until a role's /health answers 200.
wait_health() {
  local url=$1 t=0
  until curl -sf "$url/health" > /dev/null; do [ $t -ge 300 ] && return 1; sleep 1; t=$((t + 1)); done
}

if [[ $PHASES == *golden* ]]; then
  G=tools/golden/fixtures
  (cd $G && sha256sum */model.safetensors) > "$OUT/golden-before.sha"
  timeout ${AFD_GOLDEN_TIMEOUT:-400} python3 tools/golden/make_golden.py --only "${AFD_GOLDEN_ONLY:-*}" --out /tmp/afd-golden \
    --install $G > "$OUT/golden-regen.log" 2>&1
  say "golden: make_golden exit $?; $(cd $G && sha256sum -c --quiet "$OUT/golden-before.sha" 2>&1 | wc -l) weight files changed"
  tail -4 "$OUT/golden-regen.log" | tee -a "$SUMMARY"
  tar -czf "$OUT/golden-regen.tgz" -C $G .
fi
if [[ $PHASES == *tests* ]]; then
  # One process per group (AFD_GPU_GROUPS), so a crash in one group cannot hide the others.
  GROUPS_ALL=${AFD_GPU_GROUP_LIST:-conformance:norm,conformance:attention,conformance:matmul,conformance:activations,conformance:deepseek,conformance:linear,engine,graphs,kv,afd,dummy,golden,expert-gemm,expert-parallel,logprobs,prefix}
  : > "$OUT/gpu-tests.log"
  for G in $(echo "$GROUPS_ALL" | tr ',' ' '); do
    N=${G//:/-}
    AFD_GPU_GROUPS=$G AFD_GOLDEN_DIR=$PWD/tools/golden/fixtures AFD_GPU_REPORT="$OUT/gpu-$N.json" timeout ${AFD_GROUP_TIMEOUT:-150} \
      "$NODE" "$RELEASE/gpu-tests.cjs" >> "$OUT/gpu-tests.log" 2>&1
    echo "gpu group $G: exit $?" >> "$OUT/gpu-tests.log"
  done
  say "tests: $(grep -c '^PASS' "$OUT/gpu-tests.log") passed, $(grep -c '^FAIL' "$OUT/gpu-tests.log") failed"
  grep -E "^FAIL|exit [1-9]|terminate|Abort" "$OUT/gpu-tests.log" | head -40 | tee -a "$SUMMARY"
fi
if [[ $PHASES == *decode* ]]; then
  timeout ${AFD_DECODE_TIMEOUT:-360} $BENCH decode ${AFD_DECODE_ARGS:-} --json-out "$OUT/decode.json" > /dev/null 2> "$OUT/decode.log"
  say "decode: exit $?"; grep -vE "^\s*$|^\[hf-peer\]" "$OUT/decode.log" | tail -14 | tee -a "$SUMMARY"
fi
if [[ $PHASES == *deepseek* ]]; then
  timeout ${AFD_DEEPSEEK_TIMEOUT:-420} $BENCH decode --arch deepseek_v2 --preset deepseek-v2-lite ${AFD_DEEPSEEK_DECODE_ARGS:-} \
    --json-out "$OUT/decode-deepseek.json" > /dev/null 2> "$OUT/decode-deepseek.log"
  say "deepseek decode: exit $?"; grep -vE "^\s*$|^\[hf-peer\]" "$OUT/decode-deepseek.log" | tail -14 | tee -a "$SUMMARY"
fi
if [[ $PHASES == *serve* ]]; then
  $AGENT launch --topology colocated --backend cuda --load-format dummy --seed 1 --model $MODEL --api-port 18000 ${AFD_LAUNCH_ARGS:-} \
    > "$OUT/launch-colocated.log" 2>&1 &
  LP=$!
  API=$(wait_launch "$OUT/launch-colocated.log" $LP)
  if [ -z "$API" ]; then say "serve: the launch did not come up"; tail -20 "$OUT/launch-colocated.log" | tee -a "$SUMMARY"; else
    "$NODE" tools/gpu/greedy-texts.mjs --url "$API" --out "$OUT/texts-colocated.json" >> "$SUMMARY" 2>&1
    for C in $(echo "${AFD_SERVE_CONCURRENCY:-1,8,64}" | tr ',' ' '); do
      N=$((C * 4)); [ $N -lt 10 ] && N=10
      timeout 240 $BENCH serve --base-url "$API" --num-prompts $N --max-concurrency $C --random-input-len 1024 \
        --random-output-len 256 --ignore-eos --no-progress --json-out "$OUT/serve-c$C.json" > "$OUT/serve-c$C.txt" 2>&1
      say "serve c=$C: exit $?"; grep -iE "TPOT|ITL|TTFT|throughput" "$OUT/serve-c$C.txt" | head -8 | tee -a "$SUMMARY"
    done
    curl -s "${API%/v1}/metrics" > "$OUT/metrics-colocated.txt" || true
  fi
  kill -TERM $LP 2>/dev/null; wait $LP 2>/dev/null; say "serve: launch stopped (exit $?)"
fi
if [[ $PHASES == *afd* ]]; then
  for CONN in ${AFD_ONE_GPU_CONNECTORS:-peer tcp}; do
    PORT=$((29600 + RANDOM % 1000))
    ROLE=(--model $MODEL --load-format dummy --seed 1 --topology 1A1F --connector $CONN --afd-port $PORT --backend cuda --device 0)
    CUDA_VISIBLE_DEVICES=0 $AGENT role ffn "${ROLE[@]}" --api-port 18011 > "$OUT/ffn-$CONN.log" 2>&1 &
    FP=$!
    CUDA_VISIBLE_DEVICES=0 $AGENT role attention "${ROLE[@]}" --api-port 18010 --kv-cache-mib 16384 > "$OUT/attention-$CONN.log" 2>&1 &
    AP=$!
    if wait_health http://127.0.0.1:18010; then
      "$NODE" tools/gpu/greedy-texts.mjs --url http://127.0.0.1:18010 --out "$OUT/texts-1a1f-$CONN.json" \
        --compare "$OUT/texts-colocated.json" --stats http://127.0.0.1:18010/afd/stats > "$OUT/texts-1a1f-$CONN.txt" 2>&1
      say "1A1F one GPU ($CONN): $(cat "$OUT/texts-1a1f-$CONN.txt")"
      curl -s http://127.0.0.1:18011/afd/stats > "$OUT/ffn-stats-$CONN.json" || true
    else
      say "1A1F one GPU ($CONN): not healthy"; tail -5 "$OUT/attention-$CONN.log" "$OUT/ffn-$CONN.log" | tee -a "$SUMMARY"
    fi
    kill -TERM $AP $FP 2>/dev/null; wait $AP $FP 2>/dev/null
  done
fi
if [[ $PHASES == *experts* ]]; then
  source tools/gpu/ep-one-gpu.sh
fi
if [[ $PHASES == *mps* ]]; then
  source tools/gpu/mps-one-gpu.sh
fi
if [[ $PHASES == *pd* ]]; then
  source tools/gpu/pd-one-gpu.sh
fi
if [[ $PHASES == *planner* ]]; then
  source tools/gpu/planner-one-gpu.sh
fi
if [[ $PHASES == *profile* ]] && command -v ncu > /dev/null; then
  # The weight fill kernels are filtered out; the skip passes the one prefill step (context
  # 16) and two warm-up decode steps (~485 kernels each), so the window is about one step.
  # AFD_PROFILE_RANGE=decode|hit instead profiles exactly one step per batch (afd-bench decode
  # --profile-range: the CUDA profiler's capture range), e.g. AFD_PROFILE_RANGE=hit
  # AFD_PROFILE_ARGS="--prefix-hit 110 --context 3000" for a prefix-cache hit. AFD_PROFILE_ARGS
  # come last, so they override the defaults here.
  if [ -n "${AFD_PROFILE_RANGE:-}" ]; then
    NCU_WINDOW=(--profile-from-start off)
    RANGE_ARGS=(--profile-range "$AFD_PROFILE_RANGE" --prefix-hit-batches)
  else
    NCU_WINDOW=(--launch-skip ${AFD_PROFILE_SKIP:-1600} --launch-count ${AFD_PROFILE_COUNT:-485})
    RANGE_ARGS=()
  fi
  for b in ${AFD_PROFILE_BATCHES:-1}; do
    [ ${#RANGE_ARGS[@]} -gt 0 ] && RANGE_ARGS[3]=$b
    timeout ${AFD_PROFILE_TIMEOUT:-150} ncu --clock-control none -k 'regex:^(?!fillDummy)' "${NCU_WINDOW[@]}" \
      --metrics gpu__time_duration.sum --csv \
      $BENCH decode --batches $b --modes eager --context 16 --steps 3 --warmup 2 --peer none "${RANGE_ARGS[@]}" ${AFD_PROFILE_ARGS:-} \
      > "$OUT/ncu-b$b.csv" 2> "$OUT/ncu-b$b.log"
    python3 tools/gpu/summarize_ncu.py "$OUT/ncu-b$b.csv" > "$OUT/profile-b$b.txt" 2>&1
    say "== profile batch $b"; head -16 "$OUT/profile-b$b.txt" | tee -a "$SUMMARY"
  done
fi
# Files come back 8 at most: everything also goes into one archive.
(cd "$OUT" && tar -czf /tmp/afd-one-gpu-results.tgz --exclude=0results.tgz . && mv /tmp/afd-one-gpu-results.tgz 0results.tgz)
say "results under $OUT (all of them in 0results.tgz, which sorts first: at most 8 files come back)"
