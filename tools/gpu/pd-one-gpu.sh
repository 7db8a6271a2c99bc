#!/usr/bin/env bash
# Prefill/decode disaggregation on one GPU under the agent's CUDA MPS (issue 41): the `pd`
# phase of one-gpu-run.sh (needs $AGENT, $BENCH, $NODE, $OUT, $MODEL, $AFD_HOME, say() and
# wait_launch() from there). Colocated, then 1P1A1F (prefill, attention and FFN ranks all on
# GPU 0, connector peer; the KV by peer memory, CUDA IPC: run 1p1a1f; over loopback TCP:
# run 1p1a1f-tcp), each launched with
# `afd-agent launch --gpus 0` and the same serving limits, then afd-bench serve at
# $AFD_PD_CONCURRENCY (8,64) with $AFD_PD_INPUT_LEN-token prompts (4096) and
# $AFD_PD_OUTPUT_LEN output tokens (128), --ignore-eos. Also: the greedy texts of 8 prompts
# with a long preamble (so each is prefilled on the prefill rank) against colocated's; the
# attention and prefill ranks' /afd/stats after the runs (the transfers: bytes, time, rate);
# the loopback TCP bandwidth of the host (tcp-bw.mjs), the link's floor.
#   Model: $MODEL (one-gpu-run.sh: AFD_MODEL_ARCH / AFD_MODEL_PRESET; a prefill rank holds
#   the whole model beside the attention and FFN halves, so pick one that fits twice, e.g.
#   qwen3 / qwen3-8b on an 80 GB card). KV per rank: $AFD_PD_KV_MIB (12288).
#   Runs: $AFD_PD_RUNS, a comma list of colocated, 1p1a1f, 1p1a1f-tcp (default: all three).
#                                                   -> pd-*-c*.json, pd-*-stats-*.json, pd-texts-*.json, tcp-bw.json
set -uo pipefail
PD_C=${AFD_PD_CONCURRENCY:-8,64}
PD_IN=${AFD_PD_INPUT_LEN:-4096}
PD_OUTLEN=${AFD_PD_OUTPUT_LEN:-128}
PD_KV=${AFD_PD_KV_MIB:-12288}
PD_PORT=18300
PD_RUNS=${AFD_PD_RUNS:-colocated,1p1a1f,1p1a1f-tcp}

"$NODE" tools/gpu/tcp-bw.mjs --out "$OUT/tcp-bw.json" 2>&1 | tee -a "$SUMMARY"

# Launches, benches at each concurrency, saves the ranks' stats, stops: pd_run NAME TOPOLOGY [launch flags...]
pd_run() {
  local name=$1 topology=$2
  shift 2
  PD_PORT=$((PD_PORT + 1))
  $AGENT launch --backend cuda --gpus 0 --topology "$topology" --load-format dummy --seed 1 --model "$MODEL" --api-port $PD_PORT \
    --restart never --kv-cache-mib "$PD_KV" --max-num-seqs 64 "$@" > "$OUT/pd-launch-$name.log" 2>&1 &
  local lp=$! api
  api=$(wait_launch "$OUT/pd-launch-$name.log" $lp)
  if [ -z "$api" ]; then
    say "pd $name: the launch did not come up"; tail -15 "$OUT/pd-launch-$name.log" | tee -a "$SUMMARY"
    kill -TERM $lp 2>/dev/null; wait $lp 2>/dev/null
    return 1
  fi
  grep -E "under CUDA MPS|prefill" "$OUT/pd-launch-$name.log" | head -6 | sed "s/^/pd $name: /" | tee -a "$SUMMARY"
  if [ "$name" != colocated ]; then
    "$NODE" tools/gpu/greedy-texts.mjs --long --url "$api" --out "$OUT/pd-texts-$name.json" --compare "$OUT/pd-texts-colocated.json" > "$OUT/pd-texts-$name.txt" 2>&1
    say "pd $name texts: $(head -c 300 "$OUT/pd-texts-$name.txt")"
  else
    "$NODE" tools/gpu/greedy-texts.mjs --long --url "$api" --out "$OUT/pd-texts-colocated.json" > /dev/null 2>&1
  fi
  for C in $(echo "$PD_C" | tr ',' ' '); do
    local n=$((C * 2))
    [ $n -lt 16 ] && n=16
    timeout ${AFD_PD_BENCH_TIMEOUT:-200} $BENCH serve --base-url "$api" --num-prompts $n --max-concurrency $C --random-input-len "$PD_IN" \
      --random-output-len "$PD_OUTLEN" --ignore-eos --no-progress --json-out "$OUT/pd-$name-c$C.json" > "$OUT/pd-$name-c$C.txt" 2>&1
    say "pd $name c=$C: exit $?; $(grep -iE 'Mean TPOT|Mean TTFT|Output token throughput' "$OUT/pd-$name-c$C.txt" | tr -s ' ' | tr '\n' ';')"
  done
  # Each rank's stats (the summary lists "  role rank: URL  pid N").
  grep -oE '^  (attention|prefill) [0-9]+: http://[0-9.:]+' "$OUT/pd-launch-$name.log" | while read -r role rank url; do
    curl -s "$url/afd/stats" > "$OUT/pd-$name-stats-$role${rank%:}.json"
  done
  curl -s "${api%/v1}/metrics" > "$OUT/pd-$name-metrics.txt" || true
  kill -TERM $lp 2>/dev/null; wait $lp 2>/dev/null
  say "pd $name: stopped"
}

[[ ,$PD_RUNS, == *,colocated,* ]] && pd_run colocated colocated
[[ ,$PD_RUNS, == *,1p1a1f,* ]] && pd_run 1p1a1f 1P1A1F --connector peer --pd-min-prompt-tokens 64
[[ ,$PD_RUNS, == *,1p1a1f-tcp,* ]] && pd_run 1p1a1f-tcp 1P1A1F --connector peer --pd-min-prompt-tokens 64 --pd-transport tcp
"$NODE" tools/gpu/pd-summary.mjs "$OUT" 2>&1 | tee -a "$SUMMARY"
