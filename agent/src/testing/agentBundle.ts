/**
 * Test helper: bundles the agent CLI (agent/src/cli/main.ts), the bench program or a test
 * program with esbuild into a private temp folder, once per test process, so integration
 * tests run the same single-file program the bundle ships, built from the current
 * sources, without racing other builds of agent/dist.
 */
import { build } from 'esbuild';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { xgrammarAsCommonJs } from '../../../tools/esbuildXgrammar.mjs';

/** Repository root. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

const bundled = new Map<string, Promise<string>>();

/**
 * Path of a freshly bundled entry, built on first call per test process: 'cli' is
 * agent/src/cli/main.ts (afd-agent.cjs), 'bench' agent/src/bench/main.ts (afd-bench.cjs).
 * The temp folder is removed when the process exits.
 */
export function bundleEntry(entry: 'cli' | 'bench'): Promise<string> {
  return bundleProgram(`agent/src/${entry}/main.ts`, entry === 'cli' ? 'afd-agent.cjs' : 'afd-bench.cjs');
}

/**
 * Bundles any program (`entry` relative to the repository root, e.g. a test program in a
 * testing/ folder) into `<temp>/<name>`, once per test process; returns the file's path.
 */
export function bundleProgram(entry: string, name: string): Promise<string> {
  let out = bundled.get(entry);
  if (!out) {
    out = (async () => {
      const outDir = mkdtempSync(join(tmpdir(), 'afd-agent-bundle-'));
      process.once('exit', () => rmSync(outDir, { recursive: true, force: true }));
      const outfile = join(outDir, name);
      await build({
        entryPoints: [join(repoRoot, entry)],
        outfile,
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        logLevel: 'error',
        external: ['pino-pretty', 'bufferutil', 'utf-8-validate'],
        plugins: [xgrammarAsCommonJs()],
      });
      return outfile;
    })();
    bundled.set(entry, out);
  }
  return out;
}

/** Path of a freshly bundled afd-agent.cjs (built on first call). */
export function agentScript(): Promise<string> {
  return bundleEntry('cli');
}

/** The native addon the tests' role processes load (AFD_NATIVE_ADDON, else the default build). */
export function testAddonPath(): string {
  return process.env['AFD_NATIVE_ADDON'] ?? join(repoRoot, 'native/build/Release/afd_native.node');
}

/** True when that addon is built (tests of real engines skip without it). */
export function testAddonBuilt(): boolean {
  return existsSync(testAddonPath());
}
