#!/usr/bin/env bash
# Builds what tools/gpu/afd-run.sh carries to the GPU host: the CUDA addon in
# native/build-nccl, the afd-bench bundle beside it, and the xz'd Node runtime.
set -euo pipefail
cd "$(dirname "$0")/../.."
(cd native && AFD_BUILD_DIR=build-nccl AFD_CUDA=on node scripts/build-addon.mjs)
npx esbuild agent/src/bench/main.ts --bundle --platform=node --target=node20 --format=cjs \
  --external:pino-pretty --external:bufferutil --external:utf-8-validate \
  --outfile=native/build-nccl/Release/afd-bench.cjs --log-level=warning
mkdir -p .node-runtime
[ -f .node-runtime/node.xz ] || xz -T2 -c "$(command -v node)" > .node-runtime/node.xz
echo "ready: carry .node-runtime and native/build-nccl/Release; run: bash tools/gpu/afd-run.sh"
