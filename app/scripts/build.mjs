// Builds the console: the renderer with vite (dist/renderer), and with esbuild the
// Electron main process (dist/main/main.cjs), the sandboxed preload
// (dist/preload/preload.cjs) and the launcher / browser-mode host (dist/start.cjs).
// Skipped when every output is newer than every input (`npm start` builds before each
// start); --force builds anyway.
import { build as viteBuild } from 'vite';
import { build } from 'esbuild';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fresh from '../../tools/fresh.cjs';
import { noTestingCode } from '../../tools/noTestingCode.mjs';

const app = fileURLToPath(new URL('..', import.meta.url));
const root = join(app, '..');
const outputs = ['dist/renderer/index.html', 'dist/main/main.cjs', 'dist/preload/preload.cjs', 'dist/start.cjs'].map((p) => join(app, p));
const inputs = [join(app, 'src'), join(app, 'vite.config.ts'), join(app, 'package.json'), join(app, 'scripts', 'build.mjs'), join(root, 'shared', 'src'), join(root, 'package-lock.json'), join(root, 'tools', 'fresh.cjs')];
if (!process.argv.includes('--force') && fresh.upToDate(outputs, inputs)) {
  console.log('app: dist is up to date');
  process.exit(0);
}

await viteBuild({ configFile: `${app}vite.config.ts`, mode: 'production' });
console.log('app: built dist/renderer');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
  // ws's optional native helpers are not used.
  external: ['electron', 'bufferutil', 'utf-8-validate'],
  // Test and lab code never ships (vite.config.ts keeps it out of the renderer the same way).
  plugins: [noTestingCode('the console')],
};
await build({ ...common, entryPoints: [`${app}src/main/main.ts`], outfile: `${app}dist/main/main.cjs` });
// The preload runs sandboxed: it may only require('electron'); everything else is bundled in.
await build({ ...common, target: 'chrome120', entryPoints: [`${app}src/preload/preload.ts`], outfile: `${app}dist/preload/preload.cjs` });
await build({ ...common, entryPoints: [`${app}src/start/start.ts`], outfile: `${app}dist/start.cjs`, banner: { js: '#!/usr/bin/env node' } });
console.log('app: bundled dist/main/main.cjs, dist/preload/preload.cjs, dist/start.cjs');
