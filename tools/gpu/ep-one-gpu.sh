#!/usr/bin/env bash
# Expert parallelism on one H200 with role processes (the `experts` phase of one-gpu-run.sh;
# needs $AGENT, $BENCH, $NODE, $OUT, say() from there). Two FFN ranks, each holding half of
# the routed experts, and two attention ranks, all on GPU 0, connector peer:
#   texts  $AFD_EP_TEXT_MODEL (default: the phase's dummy-weight preset; the committed demo
#          model does not fit the device's 64 MiB beside the carried Node runtime): greedy
#          completions of a colocated rank, then of 2A2F with the FFN group's exchange over
#          each --ep-transport (peer: the device exchange, the FFN step a CUDA graph; tcp:
#          the host mesh, eager), both attention ranks at once, compared with colocated's
#                                                       -> texts-ep-*.json, ffn*-stats-ep-*.json
#   bench  qwen3-30b-a3b dummy weights: afd-bench serve against both attention ranks at
#          once (concurrency $AFD_EP_CONCURRENCY each), per --ep-transport -> ep-serve-*.json
set -uo pipefail
TEXT_MODEL=${AFD_EP_TEXT_MODEL:-$MODEL}
# Dummy weights unless the text model is a checkpoint on disk.
TEXT_FLAGS=(--load-format dummy --seed 1)
[ -n "${AFD_EP_TEXT_MODEL:-}" ] && TEXT_FLAGS=()
EP_PORT_BASE=$((29700 + RANDOM % 500))

# Starts 2A2F role processes on GPU 0: start_2a2f NAME MODEL TRANSPORT [extra role flags...]
start_2a2f() {
  local name=$1 model=$2 transport=$3
  shift 3
  EP_PORT_BASE=$((EP_PORT_BASE + 8))
  local role=(--model "$model" --topology 2A2F --connector peer --enable-expert-parallel --ep-transport "$transport"
    --afd-port $EP_PORT_BASE --backend cuda --device 0 "$@")
  EP_PIDS=()
  for f in 0 1; do
    CUDA_VISIBLE_DEVICES=0 $AGENT role ffn "${role[@]}" --rank $f --api-port $((18031 + 2 * f)) > "$OUT/ep-$name-ffn$f.log" 2>&1 &
    EP_PIDS+=($!)
  done
  for a in 0 1; do
    CUDA_VISIBLE_DEVICES=0 $AGENT role attention "${role[@]}" --rank $a --api-port $((18030 + 2 * a)) --kv-cache-mib 8192 \
      > "$OUT/ep-$name-attention$a.log" 2>&1 &
    EP_PIDS+=($!)
  done
  wait_health http://127.0.0.1:18030 && wait_health http://127.0.0.1:18032
}
stop_2a2f() {
  kill -TERM "${EP_PIDS[@]}" 2>/dev/null
  wait "${EP_PIDS[@]}" 2>/dev/null
}
save_ffn_stats() {
  for f in 0 1; do curl -s http://127.0.0.1:$((18031 + 2 * f))/afd/stats > "$OUT/ffn$f-stats-ep-$1.json" || true; done
  "$NODE" -e '
    for (const f of process.argv.slice(1)) {
      try {
        const s = JSON.parse(require("fs").readFileSync(f, "utf8"));
        const e = s.experts ?? {};
        const pairs = (e.tokensPerExpert ?? []).flat().reduce((a, b) => a + b, 0);
        const g = s.graph ?? {};
        console.log(`${f.split("/").pop()}: experts [${e.expertStart}, ${e.expertEnd}) of ${e.numExperts}, routed pairs ${pairs}, group steps ${e.groupSteps}, graph ${JSON.stringify(g)}`);
      } catch (err) { console.log(`${f}: ${err.message}`); }
    }' "$OUT"/ffn*-stats-ep-$1.json | tee -a "$SUMMARY"
}

if [[ ${AFD_EP_PARTS:-texts,bench} == *texts* ]]; then
  CUDA_VISIBLE_DEVICES=0 $AGENT role colocated --model "$TEXT_MODEL" "${TEXT_FLAGS[@]}" --backend cuda --device 0 --api-port 18040 --kv-cache-mib 8192 > "$OUT/ep-colocated.log" 2>&1 &
  CP=$!
  if wait_health http://127.0.0.1:18040; then
    "$NODE" tools/gpu/greedy-texts.mjs --url http://127.0.0.1:18040 --out "$OUT/texts-ep-colocated.json" > "$OUT/texts-ep-colocated.txt" 2>&1
    say "ep colocated: $(head -c 300 "$OUT/texts-ep-colocated.txt")"
  else
    say "ep colocated: not healthy"; tail -5 "$OUT/ep-colocated.log" | tee -a "$SUMMARY"
  fi
  kill -TERM $CP 2>/dev/null; wait $CP 2>/dev/null
  for T in ${AFD_EP_TRANSPORTS:-peer tcp}; do
    if start_2a2f "texts-$T" "$TEXT_MODEL" "$T" "${TEXT_FLAGS[@]}"; then
      JOBS=()
      for a in 0 1; do
        "$NODE" tools/gpu/greedy-texts.mjs --url http://127.0.0.1:$((18030 + 2 * a)) --out "$OUT/texts-ep-$T-a$a.json" \
          --compare "$OUT/texts-ep-colocated.json" --stats http://127.0.0.1:$((18030 + 2 * a))/afd/stats > "$OUT/texts-ep-$T-a$a.txt" 2>&1 &
        JOBS+=($!)
      done
      wait "${JOBS[@]}"
      for a in 0 1; do say "2A2F EP texts ($T) attention $a: $(head -c 400 "$OUT/texts-ep-$T-a$a.txt")"; done
      save_ffn_stats "texts-$T"
    else
      say "2A2F EP texts ($T): not healthy"; tail -4 "$OUT"/ep-texts-$T-*.log | tee -a "$SUMMARY"
    fi
    stop_2a2f
  done
fi
if [[ ${AFD_EP_PARTS:-texts,bench} == *bench* ]]; then
  for T in ${AFD_EP_TRANSPORTS:-peer tcp}; do
    if start_2a2f "bench-$T" "$MODEL" "$T" --load-format dummy --seed 1; then
      for C in $(echo "${AFD_EP_CONCURRENCY:-8,32}" | tr ',' ' '); do
        JOBS=()
        for a in 0 1; do
          timeout 200 $BENCH serve --base-url http://127.0.0.1:$((18030 + 2 * a)) --num-prompts $((C * 3)) --max-concurrency $C \
            --random-input-len ${AFD_EP_INPUT_LEN:-512} --random-output-len ${AFD_EP_OUTPUT_LEN:-128} --ignore-eos --no-progress \
            --json-out "$OUT/ep-serve-$T-c$C-a$a.json" > "$OUT/ep-serve-$T-c$C-a$a.txt" 2>&1 &
          JOBS+=($!)
        done
        wait "${JOBS[@]}"
        for a in 0 1; do say "EP bench ($T) c=$C attention $a: $(grep -iE "output token throughput|TPOT" "$OUT/ep-serve-$T-c$C-a$a.txt" | head -3 | tr '\n' ';')"; done
      done
      save_ffn_stats "bench-$T"
    else
      say "EP bench ($T): not healthy"; tail -4 "$OUT"/ep-bench-$T-*.log | tee -a "$SUMMARY"
    fi
    stop_2a2f
  done
fi
