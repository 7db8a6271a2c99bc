#!/usr/bin/env bash
# Where a multi-turn chat's time goes before the scheduler, on the CPU (issue 36): a
# colocated rank of qwen3_moe/tiny (dummy weights, the real Qwen3 tokenizer and chat
# template) serves afd-bench serve's multi-turn dataset (a 2,000-token shared system prompt,
# 16 conversations in flight); afterwards the rank's afd:request_preprocess_seconds per stage,
# afd:tokenizer_piece_cache_total (where the build has it) and the TTFT parts are printed.
#   bash tools/bench/chat-preprocess.sh [AGENT_DIST (default agent/dist)] [OUT (default /tmp/afd-chat-preprocess)]
# AGENT_DIST may be another checkout's agent/dist (the peer: an earlier build, same box, same run).
set -uo pipefail
DIST=${1:-agent/dist}; OUT=${2:-/tmp/afd-chat-preprocess}; PORT=${AFD_PREPROCESS_PORT:-18631}
WORKERS=${AFD_PREPROCESS_TOKENIZER_WORKERS:-2}; TURNS=${AFD_PREPROCESS_TURNS:-6}
mkdir -p "$OUT"
MODEL=$OUT/tiny
[ -f "$MODEL/config.json" ] || node "$DIST/afd-agent.cjs" make-model --arch qwen3_moe --preset tiny --out "$MODEL" --config-only > /dev/null
AFD_HOME=$OUT/home node "$DIST/afd-agent.cjs" launch --topology colocated --backend cpu --load-format dummy --seed 1 --model "$MODEL" \
  --api-port $PORT --threads 1 --kv-cache-mib 1024 --tokenizer-workers $WORKERS --restart never > "$OUT/launch.log" 2>&1 &
LP=$!; t=0
until grep -q "Ctrl-C stops every rank" "$OUT/launch.log" || [ $t -ge 120 ]; do sleep 1; t=$((t+1)); done
node "$DIST/afd-bench.cjs" serve --base-url http://127.0.0.1:$PORT --seed 7 --ignore-eos --no-progress --json-out "$OUT/serve.json" \
  --dataset-name multi-turn --shared-prefix-len 2000 --num-conversations 16 --turns $TURNS --turn-input-len 100 --turn-output-len 8 \
  --max-concurrency 16 > "$OUT/serve.txt" 2>&1
echo "bench exit $?"
curl -s http://127.0.0.1:$PORT/metrics | grep -E "^(afd:request_preprocess_seconds|vllm:time_to_first_token_seconds|vllm:request_queue_time_seconds)_(sum|count)|^afd:tokenizer_piece_cache_total" > "$OUT/metrics.txt"
kill -TERM $LP; wait $LP 2> /dev/null
node -e '
  const fs = require("fs"); const [out] = process.argv.slice(1);
  const m = {}; for (const l of fs.readFileSync(out + "/metrics.txt", "utf8").trim().split("\n")) { const [k, v] = l.split(" "); m[k] = Number(v); }
  const mean = (f, lbl = "") => { const s = Object.keys(m).find((k) => k.startsWith(f + "_sum") && k.includes(lbl)); const c = s && s.replace("_sum", "_count"); return s && m[c] ? (1000 * m[s] / m[c]).toFixed(2) + " ms" : "-"; };
  const pc = (r) => Object.entries(m).find(([k]) => k.startsWith("afd:tokenizer_piece_cache_total") && k.includes(`"${r}"`))?.[1];
  const j = JSON.parse(fs.readFileSync(out + "/serve.json", "utf8")); const later = j.multiTurn?.laterTurns;
  console.log(`preprocess mean: body ${mean("afd:request_preprocess_seconds", "\"body\"")}, prompt ${mean("afd:request_preprocess_seconds", "\"prompt\"")}, submit ${mean("afd:request_preprocess_seconds", "\"submit\"")}; server TTFT ${mean("vllm:time_to_first_token_seconds")}, queue ${mean("vllm:request_queue_time_seconds")}`);
  console.log(`piece cache: ${pc("hit") ?? "-"} hits, ${pc("miss") ?? "-"} misses; client TTFT of turns >= 2: mean ${later?.ttftMs?.mean?.toFixed(1)} ms, median ${later?.ttftMs?.median?.toFixed(1)} ms over ${later?.requests} requests`);
' "$OUT"
