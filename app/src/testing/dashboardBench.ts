/**
 * The dashboard benchmark page (src/renderer/testing/dashboardBench) for
 * e2e/specs/dashboardBench.spec.ts: built by vite in mode 'dashboard-bench' (app/vite.config.ts:
 * the console's plugins and target, production React) into test-results/dashboard-bench,
 * and served read-only on loopback the way the console's web host serves its renderer
 * (web/staticFiles.ts). The console's own build never contains it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build, resolveConfig } from 'vite';
import { serveStatic } from '../web/staticFiles.js';

const configFile = fileURLToPath(new URL('../../vite.config.ts', import.meta.url));
const mode = 'dashboard-bench';

export interface ServedBench {
  /** URL of the page; add ?ms=N for the measured span (default 10 s). */
  url: string;
  close(): Promise<void>;
}

/** Builds the page; returns the folder it is in. */
export async function buildDashboardBench(): Promise<string> {
  // As build() does: a production build (React's production bundle) whatever the mode is called.
  const config = await resolveConfig({ configFile, mode }, 'build', 'production', 'production');
  await build({ configFile, mode });
  return config.build.outDir;
}

/** Builds the page and serves it on 127.0.0.1 (a free port) until closed. */
export async function serveDashboardBench(): Promise<ServedBench> {
  const dir = await buildDashboardBench();
  const server = createServer((req, res) => serveStatic(dir, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
