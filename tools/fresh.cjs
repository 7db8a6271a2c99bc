// Up-to-date checks for the bundles, so `npm start` and `npx afd-agent` do no work that is
// already done: outputs are fresh when every one exists and is newer than every input
// file (folders are walked, skipping node_modules, dist and build outputs). CommonJS so
// the agent's bin shim can require it; the ESM build scripts import it too.
'use strict';
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const SKIP = new Set(['node_modules', 'dist', 'build', 'out', '.vite']);

/** Newest modification time (ms) under the given files and folders; 0 when none exist. */
function newestInput(paths, exts) {
  let newest = 0;
  const visit = (path) => {
    let st;
    try {
      st = statSync(path);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const e of readdirSync(path)) if (!SKIP.has(e)) visit(join(path, e));
    } else if (!exts || exts.some((x) => path.endsWith(x))) {
      newest = Math.max(newest, st.mtimeMs);
    }
  };
  for (const p of paths) visit(p);
  return newest;
}

/** Whether every output exists and is newer than every input (files with `exts` only, when given). */
function upToDate(outputs, inputs, exts) {
  if (!outputs.every((o) => existsSync(o))) return false;
  const oldestOutput = Math.min(...outputs.map((o) => statSync(o).mtimeMs));
  return oldestOutput > newestInput(inputs, exts);
}

/** Inputs of the agent bundles (agent/dist/afd-agent.cjs, afd-bench.cjs), relative to the repository root. */
const agentBundleInputs = (root) => ['agent/src', 'shared/src', 'native/src', 'agent/package.json', 'package-lock.json', 'tools/build-agent.mjs', 'tools/esbuildXgrammar.mjs'].map((p) => join(root, p));
/** Source extensions that end up in the agent bundles (native's C++ does not). */
const agentBundleExts = ['.ts', '.js', '.mjs', '.cjs', '.json'];

module.exports = { newestInput, upToDate, agentBundleInputs, agentBundleExts };
