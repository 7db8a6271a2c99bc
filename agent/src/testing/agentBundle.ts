/**
 * Test helper: bundles the agent CLI (agent/src/cli/main.ts) with esbuild into a private
 * temp folder, once per test process, so integration tests run the same single-file
 * program the bundle ships, built from the current sources, without racing other builds
 * of agent/dist.
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

let bundled: Promise<string> | undefined;
let outDir: string | undefined;

/** Path of a freshly bundled afd-agent.cjs (built on first call). */
export function agentScript(): Promise<string> {
  bundled ??= (async () => {
    outDir = mkdtempSync(join(tmpdir(), 'afd-agent-bundle-'));
    const outfile = join(outDir, 'afd-agent.cjs');
    await build({
      entryPoints: [join(repoRoot, 'agent/src/cli/main.ts')],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      logLevel: 'error',
      external: ['pino-pretty', 'bufferutil', 'utf-8-validate'],
    });
    process.once('exit', () => {
      if (outDir) rmSync(outDir, { recursive: true, force: true });
    });
    return outfile;
  })();
  return bundled;
}

/** The native addon the tests' role processes load (AFD_NATIVE_ADDON, else the default build). */
export function testAddonPath(): string {
  return process.env['AFD_NATIVE_ADDON'] ?? join(repoRoot, 'native/build/Release/afd_native.node');
}
