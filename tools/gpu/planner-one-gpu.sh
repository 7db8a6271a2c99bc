#!/usr/bin/env bash
# The planner's measurements on a GPU host (issue 42): the `planner` phase of one-gpu-run.sh
# (needs $BENCH, $NODE, $OUT, $MPS_CONTROL-less shells fine, say() from there).
#   AFD_PLANNER_PARTS (comma-separated, default cuda,shares,cpu):
#     cuda    afd-bench profile --backend cuda of qwen3-30b-a3b (dummy weights): attention vs
#             batch x context, FFN vs tokens (up to 2048: the tokens of an EP8 group at batch 256); no connector (a 1A1F pair beside the attached
#             pair would hold the model's weights twice: 122 GB). The connectors (tcp, peer)
#             are timed on deepseek-v2-lite, whose hidden size (2048) and so bytes per token
#             are the same, and copied into the 30b profile (connectorsFrom says so)
#                                                         -> planner/profile-cuda-*.json
#     shares  the same 30b profile under a CUDA MPS daemon of its own, at each
#             CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of $AFD_PLANNER_SHARES (default 40 60)
#             and afd-bench profile-shares writes their slowdowns into the full profile
#                                                         -> planner/profile-cuda-share*.json, -shares.json
#     cpu     the CPU validation with a free core per engine thread (this host has 16):
#             a CPU profile of qwen3_moe/tiny, then planner-validate.mjs over
#             $AFD_PLANNER_TOPOLOGIES (default 1A1F,2A1F,2A2F,3A2F,4A4F)  -> planner/validate-cpu.md
set -uo pipefail
PL=$OUT/planner
mkdir -p "$PL"
PL_PARTS=${AFD_PLANNER_PARTS:-cuda,shares,cpu}
PL_GRID="--batches 1,4,16,64 --contexts 256,1024 --tokens 1,4,16,64,256,1024,2048 --steps 5 --warmup 2"
PL_MPS=$(command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin/nvidia-cuda-mps-control 2>/dev/null || echo "")

if [[ $PL_PARTS == *cuda* ]]; then
  timeout 300 $BENCH profile --backend cuda --arch qwen3_moe --preset qwen3-30b-a3b --connectors none $PL_GRID \
    --out "$PL/profile-cuda-qwen3-30b-a3b.json" > "$PL/profile-cuda.log" 2>&1
  say "planner cuda profile: exit $? ($(tail -1 "$PL/profile-cuda.log"))"
  timeout 240 $BENCH profile --backend cuda --arch deepseek_v2 --preset deepseek-v2-lite --connectors tcp,peer \
    --batches 1 --contexts 256 --tokens 1 --link-batches 1,16,64,256 --steps 5 --warmup 2 \
    --out "$PL/profile-cuda-deepseek-v2-lite-links.json" > "$PL/profile-cuda-links.log" 2>&1
  say "planner cuda connectors: exit $? ($(tail -1 "$PL/profile-cuda-links.log"))"
  $NODE -e '
    const fs = require("fs"); const [p, l] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
    p.connectors = l.connectors; fs.writeFileSync(process.argv[1].replace(".json", "-with-links.json"), JSON.stringify(p, null, 2));
  ' "$PL/profile-cuda-qwen3-30b-a3b.json" "$PL/profile-cuda-deepseek-v2-lite-links.json" 2>&1 | tee -a "$SUMMARY"
fi
if [[ $PL_PARTS == *shares* ]] && [ -n "$PL_MPS" ]; then
  PIPE=/tmp/afd-plan-mps/pipe
  mkdir -p $PIPE /tmp/afd-plan-mps/log
  CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=/tmp/afd-plan-mps/log "$PL_MPS" -d
  for S in ${AFD_PLANNER_SHARES:-40 60}; do
    CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$S timeout 300 $BENCH profile --backend cuda --arch qwen3_moe \
      --preset qwen3-30b-a3b --connectors none $PL_GRID --out "$PL/profile-cuda-share$S.json" > "$PL/profile-share$S.log" 2>&1
    say "planner profile at MPS share $S%: exit $? ($(tail -1 "$PL/profile-share$S.log"))"
  done
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$PIPE "$PL_MPS"
  # The measured slowdowns into the full-GPU profile (smShares), for plans with --shared-device mps:...
  FULL=$PL/profile-cuda-qwen3-30b-a3b-with-links.json; [ -f "$FULL" ] || FULL=$PL/profile-cuda-qwen3-30b-a3b.json
  SHARES=(); for S in ${AFD_PLANNER_SHARES:-40 60}; do [ -f "$PL/profile-cuda-share$S.json" ] && SHARES+=(--share "0.$S=$PL/profile-cuda-share$S.json"); done
  [ -f "$FULL" ] && [ ${#SHARES[@]} -gt 0 ] && $BENCH profile-shares --profile "$FULL" "${SHARES[@]}" --out "$PL/profile-cuda-qwen3-30b-a3b-shares.json" > /dev/null 2> "$PL/profile-shares.log"
  say "planner smShares: $(grep -o '"slowdown": [0-9.]*' "$PL/profile-cuda-qwen3-30b-a3b-shares.json" 2>/dev/null | tr '\n' ' ')"
fi
if [[ $PL_PARTS == *cpu* ]]; then
  AFD_BENCH_CMD="$BENCH" timeout 400 $NODE tools/bench/planner-validate.mjs --topologies "${AFD_PLANNER_TOPOLOGIES:-1A1F,2A1F,2A2F,3A2F,4A4F}" \
    --batches 4,16 > "$PL/validate-cpu.md" 2> "$PL/validate-cpu.log"
  say "planner cpu validation: exit $?"; grep "^|" "$PL/validate-cpu.md" | tee -a "$SUMMARY"
fi
