/**
 * Frame-time profile of the Dashboard under synthetic load: 10 Hz snapshots from 8 ranks
 * (4A4F) x 48 layers x 2 stages through the real store and components, in Chromium.
 * Numbers go to e2e/artifacts/dashboard-bench.json.
 */
import { expect, test } from '@playwright/test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS } from '../support/paths.js';
import { startConsole, type StartedConsole } from '../support/processes.js';

let host: StartedConsole;
test.beforeAll(async () => {
  host = await startConsole();
});
test.afterAll(async () => {
  await host?.stop();
});

test('dashboard keeps up with 10 Hz x 8 ranks x 48 layers', async ({ page }) => {
  const base = host.url.slice(0, host.url.indexOf('/#'));
  await page.goto(`${base}/?bench=dashboard&ms=8000`);
  await page.waitForFunction(() => window.__afdBench !== undefined, undefined, { timeout: 40_000 });
  const r = await page.evaluate(() => window.__afdBench!);
  writeFileSync(join(ARTIFACTS, 'dashboard-bench.json'), `${JSON.stringify(r, null, 2)}\n`);
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-bench.png'), fullPage: true });
  console.log(`dashboard bench: ${JSON.stringify(r)}`);
  // 8 ranks at 10 Hz for 8 s (+1 s warmup), and about one fold per 100 ms reached the screen.
  expect(r.snapshots).toBeGreaterThan(8 * 70);
  expect(r.commits).toBeGreaterThan(50);
  // This is a measurement, reported in dashboard-bench.json (an idle machine shows commit p95
  // 2-6 ms and frame p95 16.8 ms). Wall-clock figures on a shared 2-core CI box swing with
  // its load, so only a gross regression fails here: the recharts version of these charts
  // took 50-300 ms per update and had p95 frame gaps of 100-800 ms.
  expect(r.commitP95Ms).toBeLessThan(100);
  expect(r.frameP95Ms).toBeLessThan(250);
});

declare global {
  interface Window {
    __afdBench?: { snapshots: number; commits: number; commitP95Ms: number; frameP95Ms: number };
  }
}
