#!/usr/bin/env bash
# AFD on one GPU with the agent managing CUDA MPS (issue 37): the `mps` phase of
# one-gpu-run.sh (needs $AGENT, $BENCH, $NODE, $OUT, $MODEL, $AFD_HOME, say() and
# wait_launch() from there). Every launch is `afd-agent launch --gpus 0`: the ranks of 1A1F
# and 2A2F all land on GPU 0, and the agent starts nvidia-cuda-mps-control -d for them
# (pipe and log folders under $AFD_HOME/mps) and quits it when the launch ends. Nobody
# starts MPS by hand here: that is what is measured.
#   AFD_MPS_PARTS (comma-separated, default auto):
#     auto    colocated baseline, then 1A1F (connector peer, --gpu-sharing auto), afd-bench
#             serve at $AFD_MPS_CONCURRENCY (1,8,64), 1024 in / 256 out, --ignore-eos; the 8
#             greedy texts of 1A1F against colocated's       -> mps-colocated-c*.json, mps-1a1f-c*.json
#     splits  1A1F with --sm-share attention=A,ffn=F for each A/F of $AFD_MPS_SPLITS
#             (default "30/70 40/60 50/50 60/40")                 -> mps-1a1f-aA-fF-c*.json
#     dbo     1A1F with --dbo kept on the shared GPU (afd.dbo.onSharedGpu keep; c=64 only by
#             default: $AFD_MPS_DBO_CONCURRENCY)                 -> mps-1a1f-dbo-c*.json
#     dbo-auto  also 1A1F with plain --dbo, which the agent turns off on a shared GPU (the
#             launch log must say so)                            -> mps-1a1f-dbo-auto-c*.json
#     ep      2A2F expert-parallel, peer exchange, all four ranks on GPU 0, c=8
#             ($AFD_MPS_EP_CONCURRENCY); KV $AFD_MPS_EP_KV_MIB per attention rank (default
#             4096: qwen3-30b-a3b's weights take ~65 GiB of the four ranks, so on an H100
#             lower it or use a smaller preset)                   -> mps-2a2f-ep-c*.json
#     slice   1A1F with --gpu-sharing time-slice at c=1, 4 prompts: what a user got before
#             (expect seconds per token; bounded by $AFD_MPS_SLICE_TIMEOUT) -> mps-slice-c1.json
#     suite   the GPU suite's groups $AFD_MPS_SUITE_GROUPS (afd,expert-parallel,graphs) with a
#             daemon of its own                                  -> mps-suite.log, mps-suite-*.json
#     faults  1A1F under the agent's MPS, restart on-failure: FFN SIGKILL, FFN SIGSTOP 4 s,
#             MPS server SIGKILL; a request must be answered again after each  -> mps-launch-faults.log
#   AFD_MPS_BASELINE=0 skips the colocated launch of a call (parts other than auto then
#   compare against a colocated run of an earlier call: avoid for reported figures).
# Per launch it also checks that the launch log says the agent started MPS, saves nvidia-smi
# while it runs (nvidia-cuda-mps-server should be listed), and that no daemon answers on
# $AFD_HOME/mps/pipe once the launch has ended. Summary: tools/gpu/mps-summary.mjs.
# Ten minutes per device call: run the parts in separate calls, each with its baseline, e.g.
#   AFD_PHASES=mps AFD_MPS_PARTS=auto bash tools/gpu/one-gpu-run.sh
#   AFD_PHASES=mps AFD_MPS_PARTS=splits AFD_MPS_SPLITS="40/60 60/40" AFD_MPS_CONCURRENCY=1,8 bash tools/gpu/one-gpu-run.sh
set -uo pipefail
MPS_PARTS=${AFD_MPS_PARTS:-auto}
MPS_C=${AFD_MPS_CONCURRENCY:-1,8,64}
MPS_KV=${AFD_MPS_KV_MIB:-16384}
MPS_PIPE=$AFD_HOME/mps/pipe
MPS_PORT=18100
MPS_CONTROL=$(command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin/nvidia-cuda-mps-control 2>/dev/null || echo "")
say "mps: control program: ${MPS_CONTROL:-none found (the agent will run shared GPUs time-sliced)}"

# True while a control daemon answers on the agent's pipe directory.
mps_answers() {
  [ -n "$MPS_CONTROL" ] && echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE timeout 10 "$MPS_CONTROL" > /dev/null 2>&1
}

# Launches, benches at each concurrency, stops: mps_run NAME CONCURRENCY_LIST [afd-agent launch flags...]
mps_run() {
  local name=$1 clist=$2
  shift 2
  MPS_PORT=$((MPS_PORT + 1))
  $AGENT launch --backend cuda --gpus 0 --load-format dummy --seed 1 --model "$MODEL" --api-port $MPS_PORT --restart never "$@" \
    > "$OUT/mps-launch-$name.log" 2>&1 &
  local lp=$! api
  api=$(wait_launch "$OUT/mps-launch-$name.log" $lp)
  if [ -z "$api" ]; then
    say "mps $name: the launch did not come up"; tail -15 "$OUT/mps-launch-$name.log" | tee -a "$SUMMARY"
    kill -TERM $lp 2>/dev/null; wait $lp 2>/dev/null
    return 1
  fi
  grep -E "under CUDA MPS|shared without MPS|share it" "$OUT/mps-launch-$name.log" | head -4 | sed "s/^/mps $name: /" | tee -a "$SUMMARY"
  nvidia-smi > "$OUT/mps-nvidia-smi-$name.txt" 2>&1
  if [ "$name" != colocated ]; then
    "$NODE" tools/gpu/greedy-texts.mjs --url "$api" --out "$OUT/mps-texts-$name.json" --compare "$OUT/mps-texts-colocated.json" > "$OUT/mps-texts-$name.txt" 2>&1
    say "mps $name texts: $(head -c 200 "$OUT/mps-texts-$name.txt")"
  else
    "$NODE" tools/gpu/greedy-texts.mjs --url "$api" --out "$OUT/mps-texts-colocated.json" > /dev/null 2>&1
  fi
  for C in $(echo "$clist" | tr ',' ' '); do
    local n=$((C * 4)) outlen=256
    [ $n -lt 10 ] && n=10
    [ "$name" = slice ] && { n=4; outlen=16; }
    timeout ${AFD_MPS_BENCH_TIMEOUT:-240} $BENCH serve --base-url "$api" --num-prompts $n --max-concurrency $C --random-input-len 1024 \
      --random-output-len $outlen --ignore-eos --no-progress --json-out "$OUT/mps-$name-c$C.json" > "$OUT/mps-$name-c$C.txt" 2>&1
    say "mps $name c=$C: exit $?; $(grep -iE 'Mean TPOT|Output token throughput' "$OUT/mps-$name-c$C.txt" | tr -s ' ' | tr '\n' ';')"
  done
  kill -TERM $lp 2>/dev/null; wait $lp 2>/dev/null
  if mps_answers; then say "mps $name: a control daemon still answers on $MPS_PIPE after the launch ended (it should have been quit)"; fi
}

if [[ ${AFD_MPS_BASELINE:-1} != 0 ]]; then
  mps_run colocated "$MPS_C" --topology colocated --kv-cache-mib $MPS_KV
fi
if [[ $MPS_PARTS == *auto* ]]; then
  mps_run 1a1f "$MPS_C" --topology 1A1F --connector peer --gpu-sharing auto --kv-cache-mib $MPS_KV
fi
if [[ $MPS_PARTS == *splits* ]]; then
  for S in ${AFD_MPS_SPLITS:-30/70 40/60 50/50 60/40}; do
    A=${S%/*}; F=${S#*/}
    mps_run "1a1f-a$A-f$F" "$MPS_C" --topology 1A1F --connector peer --gpu-sharing mps --sm-share attention=$A,ffn=$F --kv-cache-mib $MPS_KV
  done
fi
if [[ $MPS_PARTS == *dbo* ]]; then
  # DBO kept on the shared GPU on purpose (the agent turns it off there by default), then as a
  # user gets it: the launch log must say DBO is off.
  mps_run 1a1f-dbo "${AFD_MPS_DBO_CONCURRENCY:-64}" --topology 1A1F --connector peer --gpu-sharing mps --dbo \
    --config '{"dbo":{"onSharedGpu":"keep"}}' --kv-cache-mib $MPS_KV
  if [[ $MPS_PARTS == *dbo-auto* ]]; then
    mps_run 1a1f-dbo-auto "${AFD_MPS_DBO_CONCURRENCY:-64}" --topology 1A1F --connector peer --gpu-sharing mps --dbo --kv-cache-mib $MPS_KV
    say "mps 1a1f-dbo-auto: $(grep -o 'DBO off for attention rank[^:]*' "$OUT/mps-launch-1a1f-dbo-auto.log" | head -1 || echo 'no DBO note in the launch log')"
  fi
fi
if [[ $MPS_PARTS == *ep* ]]; then
  mps_run 2a2f-ep "${AFD_MPS_EP_CONCURRENCY:-8}" --topology 2A2F --connector peer --enable-expert-parallel --ep-transport peer \
    --gpu-sharing mps --kv-cache-mib ${AFD_MPS_EP_KV_MIB:-4096}
fi
if [[ $MPS_PARTS == *slice* ]]; then
  AFD_MPS_BENCH_TIMEOUT=${AFD_MPS_SLICE_TIMEOUT:-120} mps_run slice 1 --topology 1A1F --connector peer --gpu-sharing time-slice --kv-cache-mib $MPS_KV
fi
if [[ $MPS_PARTS == *suite* ]]; then
  # The GPU suite's AFD, expert-parallel and graph groups with every CUDA context of the
  # suite (and the role processes it spawns) under one MPS daemon (item 4 of issue 37).
  SUITE_PIPE=/tmp/afd-mps-suite/pipe
  mkdir -p $SUITE_PIPE /tmp/afd-mps-suite/log
  CUDA_MPS_PIPE_DIRECTORY=$SUITE_PIPE CUDA_MPS_LOG_DIRECTORY=/tmp/afd-mps-suite/log "$MPS_CONTROL" -d
  : > "$OUT/mps-suite.log"
  for G in $(echo "${AFD_MPS_SUITE_GROUPS:-afd,expert-parallel,graphs}" | tr ',' ' '); do
    CUDA_MPS_PIPE_DIRECTORY=$SUITE_PIPE AFD_GPU_GROUPS=$G AFD_GOLDEN_DIR=$PWD/tools/golden/fixtures AFD_GPU_REPORT="$OUT/mps-suite-$G.json" \
      timeout ${AFD_GROUP_TIMEOUT:-150} "$NODE" "$RELEASE/gpu-tests.cjs" >> "$OUT/mps-suite.log" 2>&1
    echo "gpu group $G under MPS: exit $?" >> "$OUT/mps-suite.log"
  done
  echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$SUITE_PIPE "$MPS_CONTROL" > "$OUT/mps-suite-servers.txt" 2>&1
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$SUITE_PIPE "$MPS_CONTROL"
  say "mps suite: $(grep -c '^PASS' "$OUT/mps-suite.log") passed, $(grep -c '^FAIL' "$OUT/mps-suite.log") failed; MPS servers seen: $(wc -l < "$OUT/mps-suite-servers.txt")"
  grep -E "^FAIL|under MPS: exit [1-9]" "$OUT/mps-suite.log" | head -20 | tee -a "$SUMMARY"
fi
if [[ $MPS_PARTS == *faults* ]]; then
  # 1A1F under the agent's MPS with the restart policy: an FFN rank SIGKILLed, an FFN rank
  # SIGSTOPped for 4 s, then the MPS server process killed; after each, a greedy request must
  # be answered again (the agent restarts ranks, and the daemon if it died).
  MPS_PORT=$((MPS_PORT + 1))
  $AGENT launch --backend cuda --gpus 0 --load-format dummy --seed 1 --model "$MODEL" --api-port $MPS_PORT --restart on-failure \
    --topology 1A1F --connector peer --gpu-sharing mps --kv-cache-mib $MPS_KV > "$OUT/mps-launch-faults.log" 2>&1 &
  FLP=$!
  FAPI=$(wait_launch "$OUT/mps-launch-faults.log" $FLP)
  answered() { # answered LABEL: waits up to 180 s for one completion to succeed
    local t=0
    until curl -sf -m 20 "$FAPI/v1/completions" -H 'content-type: application/json' \
      -d '{"model":"'"$(curl -s "$FAPI/v1/models" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)"'","prompt":"The capital of France is","max_tokens":8,"temperature":0}' > /dev/null 2>&1; do
      [ $t -ge 180 ] && { say "mps faults $1: no answer within 180 s"; return 1; }
      sleep 2; t=$((t + 2))
    done
    say "mps faults $1: answered again after ${t} s"
  }
  if [ -n "$FAPI" ]; then
    FAPI=${FAPI%/}
    answered start
    pkill -KILL -f "role ffn" && answered "ffn SIGKILL"
    FP=$(pgrep -f "role ffn" | head -1)
    if [ -n "$FP" ]; then
      kill -STOP $FP; sleep 4
      curl -s -m 15 -o /dev/null -w "mps faults: a request while the FFN rank is stopped: HTTP %{http_code} in %{time_total} s\n" "$FAPI/v1/completions" \
        -H 'content-type: application/json' -d '{"model":"'"$(curl -s "$FAPI/v1/models" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)"'","prompt":"Hi","max_tokens":4}' | tee -a "$SUMMARY"
      kill -CONT $FP; answered "ffn SIGSTOP 4 s"
    fi
    pkill -KILL -f nvidia-cuda-mps-server && answered "MPS server killed"
    grep -iE "MPS|restart" "$OUT/mps-launch-faults.log" | tail -12 | sed 's/^/mps faults log: /' | tee -a "$SUMMARY"
  else
    say "mps faults: the launch did not come up"; tail -15 "$OUT/mps-launch-faults.log" | tee -a "$SUMMARY"
  fi
  kill -TERM $FLP 2>/dev/null; wait $FLP 2>/dev/null
  if mps_answers; then say "mps faults: a control daemon still answers on $MPS_PIPE after the launch ended"; fi
fi
"$NODE" tools/gpu/mps-summary.mjs "$OUT" | tee -a "$SUMMARY"
