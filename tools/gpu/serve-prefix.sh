#!/usr/bin/env bash
# Prefix caching's served-path figures on one GPU (issue 36; colocated, qwen3-30b-a3b dummy
# weights), from a launch with prefix caching on (the default) and one with
# --no-enable-prefix-caching, the same runs against each:
#   mt-r<k>      afd-bench serve --dataset-name multi-turn: a 2,000-token system prompt shared
#                by 64 conversations of 8 turns (100-token user messages, 100 output tokens),
#                16 conversations in flight; TTFT of turn 1 and of turns >= 2 apart
#   random-r<k>  the random dataset, 256 prompts of 1024 in / 128 out at c=64 (no reuse)
# each after a short warm-up of its dataset. Every run has its own --seed, so no run hits the
# prompts of an earlier one in the same launch. Targets (tools/gpu/serve-prefix-summary.mjs
# prints them): turns >= 2 TTFT on <= 0.2 x off, multi-turn output tok/s on >= 1.5 x off,
# random on <= 2% slower than off.
# AFD_PREFIX_LAUNCH_FLAGS: extra afd-agent launch flags of both launches (e.g. --tokenizer-workers 8).
# AFD_PREFIX_MODES (default on,off) picks the launches, e.g. one per device call if both do
# not fit in one (10 minutes); AFD_PREFIX_REPEATS (default 1 multi-turn, 2 random runs:
# "MT RANDOM"). Writes serve-<mode>-<run>.json/txt, launch-<mode>.log, metrics-<mode>.txt,
# metrics-<mode>-mt.txt (pre-processing stages and TTFT parts after the multi-turn runs),
# summary.txt and 0results.tgz (everything) under $OUT. Run from the repository root with
# .device-carry carried (tools/gpu/afd-prepare.sh).
set -uo pipefail
OUT=${OUT:-/tmp/afd-serve-prefix}
mkdir -p "$OUT"
source tools/gpu/device-env.sh
RELEASE=$PWD/native/$AFD_GPU_BUILD/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-home
AGENT="$NODE $RELEASE/afd-agent.cjs"; BENCH="$NODE $RELEASE/afd-bench.cjs"; MODEL=/tmp/afd-qwen3-30b-a3b
[ -f $MODEL/config.json ] || $AGENT make-model --arch qwen3_moe --preset qwen3-30b-a3b --out $MODEL --config-only > /dev/null
read -r MT_REPEATS RANDOM_REPEATS <<< "${AFD_PREFIX_REPEATS:-1 2}"
say() { echo "$*" | tee -a $OUT/summary.txt; }
run() { # mode name timeout seed afd-bench-serve-args...
  local mode=$1 name=$2 limit=$3 seed=$4; shift 4
  timeout $limit $BENCH serve --base-url http://127.0.0.1:18000 --seed $seed --ignore-eos --no-progress \
    --json-out $OUT/serve-$mode-$name.json "$@" > $OUT/serve-$mode-$name.txt 2>&1
  say "$mode $name: exit $? $(grep -E '^(Successful requests|Failed requests|Output token throughput)' $OUT/serve-$mode-$name.txt | tr -s ' ' | tr '\n' ';')"
}
MT=(--dataset-name multi-turn --shared-prefix-len 2000 --num-conversations 64 --turns 8 --turn-input-len 100 --turn-output-len 100 --max-concurrency 16)
RANDOM_SET=(--num-prompts 256 --max-concurrency 64 --random-input-len 1024 --random-output-len 128)
for MODE in $(echo "${AFD_PREFIX_MODES:-on,off}" | tr ',' ' '); do
  FLAGS=(${AFD_PREFIX_LAUNCH_FLAGS:-}); [ $MODE = off ] && FLAGS+=(--no-enable-prefix-caching)
  $AGENT launch --topology colocated --backend cuda --load-format dummy --seed 1 --model $MODEL --api-port 18000 "${FLAGS[@]}" \
    > $OUT/launch-$MODE.log 2>&1 &
  LP=$!; t=0
  until grep -q "Ctrl-C stops every rank" $OUT/launch-$MODE.log || [ $t -ge 150 ]; do sleep 1; t=$((t+1)); done
  run $MODE warm-mt 120 900 --dataset-name multi-turn --shared-prefix-len 2000 --num-conversations 16 --turns 2 --turn-output-len 16 --max-concurrency 16
  for R in $(seq 1 $MT_REPEATS); do run $MODE mt-r$R 300 $R "${MT[@]}"; done
  # Where the multi-turn requests' time went before the scheduler (warm-up included).
  curl -s http://127.0.0.1:18000/metrics | grep -E "^(afd:request_preprocess_seconds|vllm:(time_to_first_token|request_queue_time|request_prefill_time)_seconds)_(sum|count)" > $OUT/metrics-$MODE-mt.txt
  run $MODE warm-random 120 901 --num-prompts 64 --max-concurrency 64 --random-input-len 1024 --random-output-len 8
  for R in $(seq 1 $RANDOM_REPEATS); do run $MODE random-r$R 180 $((100 + R)) "${RANDOM_SET[@]}"; done
  curl -s http://127.0.0.1:18000/metrics | grep -E "^afd:request_preprocess_seconds_(sum|count)|^vllm:(kv_cache|prefix_cache|prompt_tokens_total|time_to_first_token_seconds_(sum|count)|request_(queue|prefill|decode)_time_seconds_(sum|count))" > $OUT/metrics-$MODE.txt
  kill -TERM $LP; wait $LP
done
"$NODE" tools/gpu/serve-prefix-summary.mjs $OUT | tee -a $OUT/summary.txt
# At most 8 files come back from a device call: everything also goes into one archive.
(cd "$OUT" && tar -czf /tmp/afd-serve-prefix.tgz --exclude=0results.tgz . && mv /tmp/afd-serve-prefix.tgz 0results.tgz)
