// Bundles the agent CLI and the benchmark client with esbuild into single CommonJS files
// (agent/dist/afd-agent.cjs, agent/dist/afd-bench.cjs) so they run without node_modules.
// The native addon stays a separate file, found at run time (see native/src/addon.ts).
//   node tools/build-agent.mjs                       agent/dist, with source maps; skipped when
//                                                    the bundles are newer than their sources
//                                                    (--force builds anyway)
//   node tools/build-agent.mjs --outdir DIR --gpu    DIR, no maps, plus gpu-tests.cjs (the GPU
//                                                    suite; what tools/gpu/afd-prepare.sh carries)
// Each file is written beside its destination and renamed into place, so a program started
// meanwhile (agent/bin's shims, role processes) never reads half a bundle.
import { build } from 'esbuild';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import fresh from './fresh.cjs';
import { noTestingCode } from './noTestingCode.mjs';
import { xgrammarAsCommonJs } from './esbuildXgrammar.mjs';

const root = new URL('..', import.meta.url).pathname;

/** Bundles one TypeScript entry (relative to the repository root) into a Node 20 CommonJS file. */
export async function bundleNodeEntry(entry, outfile, { sourcemap = false, banner, plugins = [] } = {}) {
  await build({
    entryPoints: [join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: sourcemap ? 'linked' : false,
    logLevel: 'warning',
    logOverride: { 'empty-import-meta': 'silent' },
    ...(banner ? { banner: { js: banner } } : {}),
    // pino's optional transports are not used (we log to fd 2 directly). xgrammar's
    // WebAssembly build rides inside the bundle (esbuildXgrammar.mjs).
    external: ['pino-pretty', 'bufferutil', 'utf-8-validate'],
    plugins: [xgrammarAsCommonJs(), ...plugins],
  });
}

// afd-agent.cjs takes no test or lab code; afd-bench's two-hosts command drives the
// namespace test bed (agent/src/testing/netns) by design, and the GPU suite is test code.
const entries = [
  ['agent/src/cli/main.ts', 'afd-agent.cjs', [noTestingCode('afd-agent.cjs')]],
  ['agent/src/bench/main.ts', 'afd-bench.cjs'],
];
const gpuEntries = [['native/src/testing/gpu/gpuSuiteMain.ts', 'gpu-tests.cjs']];

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' }, gpu: { type: 'boolean', default: false }, force: { type: 'boolean', default: false } } });
  const outdir = values.outdir ?? join(root, 'agent/dist');
  const wanted = [...entries, ...(values.gpu ? gpuEntries : [])].filter(([entry]) => existsSync(join(root, entry)));
  const outputs = wanted.map(([, name]) => join(outdir, name));
  if (!values.outdir && !values.force && fresh.upToDate(outputs, fresh.agentBundleInputs(root), fresh.agentBundleExts)) {
    console.log('agent: agent/dist is up to date');
  } else {
    mkdirSync(outdir, { recursive: true });
    const staging = mkdtempSync(join(outdir, '.staging-'));
    try {
      for (const [entry, name, plugins] of wanted) {
        await bundleNodeEntry(entry, join(staging, name), { sourcemap: !values.outdir, banner: '#!/usr/bin/env node', plugins });
        for (const f of readdirSync(staging)) renameSync(join(staging, f), join(outdir, f));
        console.log(`agent: bundled ${join(outdir, name)}`);
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
}
