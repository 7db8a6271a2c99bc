// `npm run test:gpu`: the GPU test suite (native/src/testing/gpu/gpuSuite.ts), bundled with
// esbuild into tools/gpu/dist/gpu-tests.cjs so it also runs where node_modules are
// absent (a GPU host gets the bundle and the addon). Skips with a clear message where
// the addon has no CUDA or no device is visible. Set AFD_NATIVE_ADDON to pick the product
// addon (engines) and AFD_NATIVE_TESTING_ADDON the testing addon (op conformance; default:
// afd_native_testing.node beside the product addon).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';

const root = new URL('..', import.meta.url).pathname;
const entry = `${root}native/src/testing/gpu/gpuSuiteMain.ts`;
const bundle = `${root}tools/gpu/dist/gpu-tests.cjs`;

async function bundleSuite() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    if (existsSync(bundle)) return;  // a GPU host without node_modules: use the carried bundle
    console.error(`gpu tests: esbuild is not installed and ${bundle} does not exist; run npm install first`);
    process.exit(2);
  }
  mkdirSync(`${root}tools/gpu/dist`, { recursive: true });
  await esbuild.build({
    entryPoints: [entry],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'error',
  });
}

await bundleSuite();
// The bundle lives in tools/gpu/dist, so point it at the workspace's addons unless told otherwise.
const env = { ...process.env, NCCL_NVLS_ENABLE: '0' };
const defaultAddon = `${root}native/build/Release/afd_native.node`;
const defaultTestingAddon = `${root}native/build/Release/afd_native_testing.node`;
if (!env.AFD_NATIVE_ADDON && existsSync(defaultAddon)) env.AFD_NATIVE_ADDON = defaultAddon;
if (!env.AFD_NATIVE_TESTING_ADDON && !process.env.AFD_NATIVE_ADDON && existsSync(defaultTestingAddon)) env.AFD_NATIVE_TESTING_ADDON = defaultTestingAddon;
const run = spawnSync(process.execPath, [bundle], { stdio: 'inherit', env });
process.exit(run.status ?? 1);
