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
#   faults the tiny qwen3_moe preset (dummy weights) over --ep-transport $AFD_EP_FAULT_TRANSPORT
#          (default peer): a long request in flight on each attention rank, then SIGKILL
#          (and, in a second start, SIGSTOP) of FFN rank 1; both requests must end within
#          the step deadline (5 s) naming the rank; then FFN rank 1 is restarted (SIGCONT
#          after the stop) and both attention ranks must serve again -> fault-*.json
# On a machine with two GPUs (issue 22) the same parts run with the ranks spread and another
# connector: AFD_EP_CONNECTOR (default peer), AFD_EP_FFN_GPUS / AFD_EP_ATTN_GPUS (the GPU of
# FFN / attention rank 0 and 1; default "0 0"). E.g. the NCCL exchange, each FFN rank on a
# GPU of its own: AFD_EP_CONNECTOR=nccl AFD_EP_FFN_GPUS="1 0" AFD_EP_ATTN_GPUS="0 1"
# AFD_EP_TRANSPORTS=nccl (peer there also needs each FFN rank to see both GPUs).
set -uo pipefail
read -r -a FFN_GPUS <<< "${AFD_EP_FFN_GPUS:-0 0}"
read -r -a ATTN_GPUS <<< "${AFD_EP_ATTN_GPUS:-0 0}"
TEXT_MODEL=${AFD_EP_TEXT_MODEL:-$MODEL}
# Dummy weights unless the text model is a checkpoint on disk.
TEXT_FLAGS=(--load-format dummy --seed 1)
[ -n "${AFD_EP_TEXT_MODEL:-}" ] && TEXT_FLAGS=()
EP_PORT_BASE=$((29700 + RANDOM % 500))

# Starts 2A2F role processes (GPUs: FFN_GPUS, ATTN_GPUS): start_2a2f NAME MODEL TRANSPORT [extra role flags...]
start_2a2f() {
  local name=$1 model=$2 transport=$3
  shift 3
  EP_PORT_BASE=$((EP_PORT_BASE + 8))
  EP_ROLE=(--model "$model" --topology 2A2F --connector ${AFD_EP_CONNECTOR:-peer} --enable-expert-parallel --ep-transport "$transport"
    --afd-port $EP_PORT_BASE --backend cuda --device 0 "$@")
  EP_PIDS=()
  for f in 0 1; do start_ffn $name $f; done
  for a in 0 1; do
    CUDA_VISIBLE_DEVICES=${ATTN_GPUS[$a]} $AGENT role attention "${EP_ROLE[@]}" --rank $a --api-port $((18030 + 2 * a)) --kv-cache-mib 8192 \
      > "$OUT/ep-$name-attention$a.log" 2>&1 &
    EP_PIDS+=($!)
  done
  wait_health http://127.0.0.1:18030 && wait_health http://127.0.0.1:18032
}
# (Re)starts FFN rank f of the current 2A2F: start_ffn NAME F (its pid goes to EP_PIDS[F]).
start_ffn() {
  CUDA_VISIBLE_DEVICES=${FFN_GPUS[$2]} $AGENT role ffn "${EP_ROLE[@]}" --rank $2 --api-port $((18031 + 2 * $2)) >> "$OUT/ep-$1-ffn$2.log" 2>&1 &
  EP_PIDS[$2]=$!
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
if [[ ${AFD_EP_PARTS:-texts,bench} == *faults* ]]; then
  TINY=/tmp/afd-tiny-qwen3-moe
  [ -f $TINY/config.json ] || $AGENT make-model --arch qwen3_moe --preset tiny --out $TINY --config-only > /dev/null
  for SIG in KILL STOP; do
    name=fault-$SIG
    if start_2a2f $name $TINY ${AFD_EP_FAULT_TRANSPORT:-peer} --load-format dummy --seed 1 ${AFD_EP_FAULT_FLAGS:-}; then
      RJ=()
      for a in 0 1; do
        "$NODE" tools/gpu/timed-request.mjs --url http://127.0.0.1:$((18030 + 2 * a)) --max-tokens 4000 --out "$OUT/$name-inflight-a$a.json" &
        RJ+=($!)
      done
      sleep 4
      T0=$(date +%s%3N)
      kill -$SIG ${EP_PIDS[1]}
      wait "${RJ[@]}"
      "$NODE" -e '
        const [t0, ...files] = process.argv.slice(1);
        for (const f of files) {
          const r = JSON.parse(require("fs").readFileSync(f, "utf8"));
          console.log(`${f.split("/").pop()}: HTTP ${r.status}, ended ${r.endedAt - Number(t0)} ms after the signal (${r.completionTokens ?? "no"} tokens): ${r.body.replace(/\s+/g, " ").slice(0, 260)}`);
        }' $T0 "$OUT"/$name-inflight-a*.json | tee -a "$SUMMARY"
      grep -h "expert-parallel group" "$OUT/ep-$name-ffn0.log" | head -2 | cut -c1-300 | sed "s/^/$name ffn0 log: /" | tee -a "$SUMMARY"
      if [ $SIG = KILL ]; then start_ffn $name 1; else kill -CONT ${EP_PIDS[1]}; fi
      T1=$(date +%s)
      ok=0
      for try in $(seq 1 60); do
        for a in 0 1; do
          "$NODE" tools/gpu/timed-request.mjs --url http://127.0.0.1:$((18030 + 2 * a)) --max-tokens 8 --timeout-ms 20000 --out "$OUT/$name-after-a$a.json"
        done
        if grep -q '"status": 200' "$OUT/$name-after-a0.json" && grep -q '"status": 200' "$OUT/$name-after-a1.json"; then ok=1; break; fi
        sleep 2
      done
      say "$name: after the restart both attention ranks serve: $([ $ok = 1 ] && echo yes || echo no), $(( $(date +%s) - T1 )) s after it"
    else
      say "$name: not healthy"; tail -4 "$OUT"/ep-$name-*.log | tee -a "$SUMMARY"
    fi
    stop_2a2f
  done
fi
