/**
 * Frame profile of the Dashboard under synthetic load: 10 Hz snapshots from each of 8 ranks
 * (4A4F) x 48 layers x 2 stages, fed as bridge frames through the real bridge, store and
 * components (the benchmark page, app/src/renderer/testing/dashboardBench, built and served
 * by app/src/testing/dashboardBench.ts: it is not part of the console's build; its charts
 * start with 15 minutes of history and show the 15-minute range), for 20 s
 * (AFD_BENCH_MS) in Chromium with a Chrome trace recording. The trace gives the renderer
 * main thread's work per frame (app/src/testing/traceProfile.ts); the page adds long tasks
 * and long animation frames.
 * Summary: e2e/artifacts/dashboard-profile.json; raw trace: test-results/dashboard-trace.json
 * (open it in chrome://tracing or the DevTools Performance panel).
 */
import { expect, test } from '@playwright/test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveDashboardBench, type ServedBench } from '../../app/src/testing/dashboardBench.js';
import { profileFrames, type TraceEvent } from '../../app/src/testing/traceProfile.js';
import { ARTIFACTS, ROOT } from '../support/paths.js';
import { formatPercent } from '../../app/src/renderer/lib/format.js';
import { SYNTHETIC_PREFIX_QUERIES_PER_STEP, syntheticPrefixHitsPerStep } from '../../app/src/renderer/testing/syntheticMetrics.js';

const TRACE_CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'disabled-by-default-devtools.timeline.frame',
  'blink.user_timing',
  'toplevel',
  'v8.execute',
];
const BUDGET_MS = 16;

// Playwright's own trace would snapshot the DOM on every action: it is not what is measured.
test.use({ trace: 'off' });

let bench: ServedBench;
test.beforeAll(async () => {
  bench = await serveDashboardBench(); // a vite build of the page, then a static server
});
test.afterAll(async () => {
  await bench?.close();
});

test('dashboard keeps up with 10 Hz x 8 ranks x 48 layers', async ({ page, browser }) => {
  const ms = Number(process.env['AFD_BENCH_MS'] ?? 20_000);
  test.setTimeout(ms + 120_000);
  await browser.startTracing(page, { categories: TRACE_CATEGORIES });
  let trace: Buffer;
  try {
    await page.goto(`${bench.url}?ms=${ms}`);
    await page.waitForFunction(() => window.__afdBench !== undefined, undefined, { timeout: ms + 60_000, polling: 1000 });
  } finally {
    trace = await browser.stopTracing();
  }
  const page_ = await page.evaluate(() => window.__afdBench!);
  mkdirSync(join(ROOT, 'test-results'), { recursive: true });
  writeFileSync(join(ROOT, 'test-results', 'dashboard-trace.json'), trace);
  const parsed = JSON.parse(trace.toString('utf8')) as { traceEvents: TraceEvent[] } | TraceEvent[];
  const events = Array.isArray(parsed) ? parsed : parsed.traceEvents;
  const profile = profileFrames(events, { startMark: 'afd-bench-start', endMark: 'afd-bench-end', budgetMs: BUDGET_MS });
  const summary = {
    what: 'Dashboard, 10 Hz snapshots x 8 ranks (4A4F) x 48 layers x 2 stages through bridge + store + DashboardView; charts on the 15 min range over 15 minutes of history',
    command: 'npx playwright test -c e2e/playwright.config.ts e2e/specs/dashboardBench.spec.ts',
    recordedAt: new Date().toISOString(),
    trace: profile,
    page: page_,
  };
  writeFileSync(join(ARTIFACTS, 'dashboard-profile.json'), `${JSON.stringify(summary, null, 2)}\n`);
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-bench.png'), fullPage: true });
  console.log(
    `dashboard profile: ${profile.frames} frames; work/frame CPU p50/p95/p99/max ${Object.values(profile.workCpuMs).join('/')} ms, ` +
      `wall ${Object.values(profile.workWallMs).join('/')} ms; over ${BUDGET_MS} ms: ${profile.framesOverBudgetCpu} (CPU), ${profile.framesOverBudgetWall} (wall); ` +
      `long tasks ${page_.longTasks}, LoAF ${page_.loaf?.count ?? 'n/a'}; commit p95 ${page_.commitP95Ms} ms; top self: ${profile.selfTime
        .slice(0, 5)
        .map((s) => `${s.name} ${s.cpuMs}`)
        .join(', ')}`,
  );

  // The prefix-cache numbers are the synthetic ranks' own: attention rank r hits
  // syntheticPrefixHitsPerStep(r) of 400 tokens every step, in any window and since start.
  const rates = [0, 1, 2, 3].map((r) => syntheticPrefixHitsPerStep(r) / SYNTHETIC_PREFIX_QUERIES_PER_STEP);
  for (const [r, rate] of rates.entries()) {
    const row = page.getByTestId(`prefix-row-A${r}`);
    await expect(row.getByTestId('prefix-window')).toHaveText(formatPercent(rate));
    await expect(row.getByTestId('prefix-lifetime')).toHaveText(formatPercent(rate));
  }
  const overall = rates.reduce((a, b) => a + b, 0) / rates.length;
  // Since start, the ranks are at most one step apart (they report out of phase): the mean of their rates.
  await expect(page.getByTestId('prefix-row-all').getByTestId('prefix-lifetime')).toHaveText(formatPercent(overall));
  // Over the window, one rank may count a step more than another: within a point of it.
  const windowed = Number((await page.getByTestId('stat-prefix').innerText()).replace('%', '')) / 100;
  expect(Math.abs(windowed - overall)).toBeLessThan(0.015);
  await page.getByTestId('panel-prefix').screenshot({ path: join(ARTIFACTS, 'dashboard-bench-prefix.png') });

  // The feed reached the screen: 8 ranks x 10 Hz, and about one fold per 100 ms.
  expect(page_.snapshots).toBeGreaterThan((8 * 10 * ms * 0.7) / 1000);
  expect(page_.commits).toBeGreaterThan((ms / 100) * 0.6);
  expect(profile.frames).toBeGreaterThan((ms / 1000) * 20);
  // The budget, on the renderer's own work (thread CPU time per frame interval; wall time
  // also counts the time other processes held the cores, so it is reported, not asserted).
  // Measured on the shared 2-core dev VM (3 runs of 20 s): p99 5.3-6.5 ms, max 8.0-11.7 ms,
  // no interval over 16 ms; on the CI box (2 cores, the rest of the suite's processes
  // winding down) p99 12.1-12.6 ms, max 20 ms. The target (issue 43) is p99 within one
  // 16 ms frame, and that is what is asserted; the fraction check below guards the budget
  // itself, and the single worst interval only has to stay clear of a stall (a GC or a busy
  // CI box can cost one frame, not three).
  expect(profile.workCpuMs.p99).toBeLessThan(BUDGET_MS);
  expect(profile.workCpuMs.max).toBeLessThan(50);
  expect(profile.framesOverBudgetCpu).toBeLessThanOrEqual(Math.floor(profile.intervals * 0.005));
});

declare global {
  interface Window {
    __afdBench?: import('../../app/src/renderer/testing/dashboardBench/benchResult.js').BenchResult;
  }
}
