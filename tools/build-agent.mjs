// Bundles the agent CLI and the benchmark client with esbuild into single CommonJS files
// (agent/dist/afd-agent.cjs, agent/dist/afd-bench.cjs) so they run without node_modules.
// The native addon stays a separate file, found at run time (see native/src/index.ts).
import { build } from 'esbuild';
import { existsSync } from 'node:fs';

const entries = [
  ['agent/src/cli/main.ts', 'agent/dist/afd-agent.cjs'],
  ['agent/src/bench/main.ts', 'agent/dist/afd-bench.cjs'],
];
const root = new URL('..', import.meta.url).pathname;
for (const [entry, outfile] of entries) {
  if (!existsSync(root + entry)) continue;
  await build({
    entryPoints: [root + entry],
    outfile: root + outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'linked',
    logLevel: 'warning',
    banner: { js: '#!/usr/bin/env node' },
    // pino's optional transports are not used (we log to fd 2 directly).
    external: ['pino-pretty', 'bufferutil', 'utf-8-validate'],
  });
  console.log(`agent: bundled ${outfile}`);
}
