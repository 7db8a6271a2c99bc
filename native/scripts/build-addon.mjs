// Builds the native addons with cmake-js: afd_native.node (the product) and
// afd_native_testing.node (the same objects plus the test entry points; tests and the GPU
// suite load it). AFD_CUDA=auto|on|off (default auto: the CUDA backend is compiled when
// nvcc is found). AFD_BUILD_TYPE=Release|Debug (default Release). Skips work when both
// addons are newer than every source file (fast `npm start`).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cuda = process.env.AFD_CUDA ?? 'auto';
if (!['auto', 'on', 'off'].includes(cuda)) {
  console.error(`AFD_CUDA must be auto, on or off (got "${cuda}")`);
  process.exit(2);
}
const buildType = process.env.AFD_BUILD_TYPE ?? 'Release';
// AFD_BUILD_DIR lets parallel builds use separate folders (default native/build).
const buildDir = process.env.AFD_BUILD_DIR ? join(root, process.env.AFD_BUILD_DIR) : join(root, 'build');
const addons = ['afd_native.node', 'afd_native_testing.node'].map((name) => join(buildDir, buildType, name));

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const stamp = join(buildDir, `variant-${cuda}`);
if (!process.argv.includes('--force') && addons.every((a) => existsSync(a)) && existsSync(stamp)) {
  const sources = Math.max(newestSource(join(root, 'src')), statSync(join(root, 'CMakeLists.txt')).mtimeMs);
  if (addons.every((a) => statSync(a).mtimeMs > sources)) {
    console.log(`native: ${addons.join(' and ')} are up to date`);
    process.exit(0);
  }
}

const require = createRequire(import.meta.url);
const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
const jobs = String(Math.max(1, Number(process.env.AFD_BUILD_JOBS ?? 0) || (await import('node:os')).availableParallelism()));
const args = [cmakeJs, 'compile', '--directory', root, '--out', buildDir, `--CDAFD_CUDA=${cuda}`, `--parallel`, jobs];
if (buildType === 'Debug') args.push('--debug');
console.log(`native: building (AFD_CUDA=${cuda}, ${buildType}, ${jobs} jobs)`);
// Build against this Node's own headers (never download them): cmake-js reads nodedir
// from npm's config; outside npm we point it at the running Node's prefix.
const env = { ...process.env };
const prefix = dirname(dirname(process.execPath));
if (!env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) env.npm_config_nodedir = prefix;
execFileSync(process.execPath, args, { stdio: 'inherit', cwd: root, env });
for (const v of ['auto', 'on', 'off']) {
  const p = join(buildDir, `variant-${v}`);
  if (existsSync(p) && v !== cuda) (await import('node:fs')).rmSync(p);
}
(await import('node:fs')).writeFileSync(stamp, `${new Date().toISOString()}\n`);
