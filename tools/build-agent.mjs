// Bundles the agent CLI and the benchmark client with esbuild into single CommonJS files
// (agent/dist/afd-agent.cjs, agent/dist/afd-bench.cjs) so they run without node_modules.
// The native addon stays a separate file, found at run time (see native/src/index.ts).
//   node tools/build-agent.mjs                       agent/dist, with source maps
//   node tools/build-agent.mjs --outdir DIR --gpu    DIR, no maps, plus gpu-tests.cjs (the GPU
//                                                    suite; what tools/gpu/afd-prepare.sh carries)
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = new URL('..', import.meta.url).pathname;

/** Bundles one TypeScript entry (relative to the repository root) into a Node 20 CommonJS file. */
export async function bundleNodeEntry(entry, outfile, { sourcemap = false, banner } = {}) {
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
    // pino's optional transports are not used (we log to fd 2 directly).
    external: ['pino-pretty', 'bufferutil', 'utf-8-validate'],
  });
}

const entries = [
  ['agent/src/cli/main.ts', 'afd-agent.cjs'],
  ['agent/src/bench/main.ts', 'afd-bench.cjs'],
];
const gpuEntries = [['native/src/cuda/gpuSuiteMain.ts', 'gpu-tests.cjs']];

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' }, gpu: { type: 'boolean', default: false } } });
  const outdir = values.outdir ?? join(root, 'agent/dist');
  for (const [entry, name] of [...entries, ...(values.gpu ? gpuEntries : [])]) {
    if (!existsSync(join(root, entry))) continue;
    const outfile = join(outdir, name);
    await bundleNodeEntry(entry, outfile, { sourcemap: !values.outdir, banner: '#!/usr/bin/env node' });
    console.log(`agent: bundled ${outfile}`);
  }
}
