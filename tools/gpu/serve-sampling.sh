#!/usr/bin/env bash
# Sampling features' served-path figures on one GPU (colocated, qwen3-30b-a3b dummy weights):
# TPOT of plain vs top_logprobs 5 at c=1 and c=64, penalties + a 16-entry logit_bias at c=64,
# TTFT of n=1 vs n=4 on 1024-token prompts (issue 34), and TPOT of a json_schema request vs
# the same request unconstrained at c=1 and c=32 (issue 35: 256 in / 128 out, a schema of 100
# enum words the output cannot finish in 128 tokens, so every request runs 128 tokens), and
# afd-bench grammar (compile and mask times on this host's CPU); writes serve-*.json/txt,
# grammar.json/txt, summary.txt and metrics-x.txt under $OUT. Run from the repository root with .device-carry carried (tools/gpu/afd-prepare.sh).
# AFD_SERVE_ONLY="c64-plain c64-pen" runs only those runs (names without -rN); every run sends prompts of its own seed.
source tools/gpu/device-env.sh
RELEASE=$PWD/native/$AFD_GPU_BUILD/Release
export AFD_NATIVE_ADDON=$RELEASE/afd_native.node AFD_HOME=/tmp/afd-home
AGENT="$NODE $RELEASE/afd-agent.cjs"; BENCH="$NODE $RELEASE/afd-bench.cjs"; MODEL=/tmp/afd-qwen3-30b-a3b
[ -f $MODEL/config.json ] || $AGENT make-model --arch qwen3_moe --preset qwen3-30b-a3b --out $MODEL --config-only > /dev/null
$AGENT launch --topology colocated --backend cuda --load-format dummy --seed 1 --model $MODEL --api-port 18000 > $OUT/launch-x.log 2>&1 &
LP=$!; t=0
until grep -q "Ctrl-C stops every rank" $OUT/launch-x.log || [ $t -ge 150 ]; do sleep 1; t=$((t+1)); done
say() { echo "$*" | tee -a $OUT/summary.txt; }
SEED=100
want() { [ -z "${AFD_SERVE_ONLY:-}" ] || [[ " $AFD_SERVE_ONLY " == *" ${1%-r[0-9]} "* ]]; }
run() { # name concurrency prompts in out body; each run its own prompts (a new seed), so the prefix cache never serves one run's prompts to another
  want $1 || return 0
  SEED=$((SEED+1))
  timeout 90 $BENCH serve --base-url http://127.0.0.1:18000 --num-prompts $3 --max-concurrency $2 --random-input-len $4 --random-output-len $5 \
    --seed $SEED --ignore-eos --no-progress --extra-body "$6" --json-out $OUT/serve-$1.json > $OUT/serve-$1.txt 2>&1
  say "$1: exit $? $(grep -E 'Mean TTFT|Mean TPOT|Successful|Failed' $OUT/serve-$1.txt | tr -s ' ' | tr '\n' ';')"
}
PEN='{"presence_penalty":0.5,"frequency_penalty":0.5,"repetition_penalty":1.1,"logit_bias":{"1000": 5.0, "1037": -5.0, "1074": 5.0, "1111": -5.0, "1148": 5.0, "1185": -5.0, "1222": 5.0, "1259": -5.0, "1296": 5.0, "1333": -5.0, "1370": 5.0, "1407": -5.0, "1444": 5.0, "1481": -5.0, "1518": 5.0, "1555": -5.0}}'
JSON='{"response_format":{"type":"json_schema","json_schema":{"name":"words","strict":true,"schema":{"type":"object","properties":{"words":{"type":"array","items":{"type":"string","enum":["alpha","beta","gamma","delta"]},"minItems":100,"maxItems":100}},"required":["words"],"additionalProperties":false}}}}'
run warm 8 8 1024 8 '{}'
run warm-json 8 8 256 8 "$JSON"
for R in 1 2; do
  run c1-plain-r$R 1 8 1024 64 '{}'
  run c1-lp5-r$R 1 8 1024 64 '{"logprobs":5}'
  run c64-plain-r$R 64 128 1024 64 '{}'
  run c64-lp5-r$R 64 128 1024 64 '{"logprobs":5}'
  run c64-pen-r$R 64 128 1024 64 "$PEN"
  run n1-r$R 1 8 1024 8 '{"n":1}'
  run n4-r$R 1 8 1024 8 '{"n":4}'
  run c1-plain128-r$R 1 8 256 128 '{}'
  run c1-json-r$R 1 8 256 128 "$JSON"
  run c32-plain128-r$R 32 64 256 128 '{}'
  run c32-json-r$R 32 64 256 128 "$JSON"
done
[ -n "${AFD_SERVE_ONLY:-}" ] && { kill -TERM $LP; wait $LP; exit 0; }
curl -s http://127.0.0.1:18000/metrics | grep -E "^vllm:(kv_cache|prefix_cache|prompt_tokens_total)" > $OUT/metrics-x.txt
kill -TERM $LP; wait $LP
timeout 120 $BENCH grammar --json-out $OUT/grammar.json > $OUT/grammar.txt 2>&1; say "grammar bench: exit $? $(tail -12 $OUT/grammar.txt | tr -s ' ' | tr '\n' ';')"
