// The `afd-agent` and `afd-bench` commands of this workspace: they run the bundles in
// agent/dist, building them from the sources first when they are missing or older than
// the sources (about a second; the build's output goes to stderr so stdout stays the
// command's own). So `npx afd-agent` works right after `npm install`, and after a pull.
'use strict';
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');
const { agentBundleExts, agentBundleInputs, upToDate } = require('../../tools/fresh.cjs');

module.exports = function runBundle(name) {
  const root = join(__dirname, '..', '..');
  const bundle = join(root, 'agent', 'dist', name);
  const bundles = ['afd-agent.cjs', 'afd-bench.cjs'].map((b) => join(root, 'agent', 'dist', b));
  if (!upToDate(bundles, agentBundleInputs(root), agentBundleExts)) {
    process.stderr.write(`${name.replace(/\.cjs$/, '')}: building agent/dist from the sources (first run, or the sources changed)…\n`);
    const r = spawnSync(process.execPath, [join(root, 'tools', 'build-agent.mjs')], { stdio: ['ignore', 2, 2] });
    if (r.status !== 0) {
      process.stderr.write(`${name}: the build failed (exit ${r.status ?? r.signal}); run \`npm run build -w @afd/agent\` to see why\n`);
      process.exit(1);
    }
  }
  // Role processes and the probe re-run argv[1]: point it at the bundle, not this shim.
  process.argv[1] = bundle;
  require(bundle);
};
