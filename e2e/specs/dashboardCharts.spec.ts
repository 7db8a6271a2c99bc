/**
 * The Dashboard's charts against a real agent and console (browser mode, CPU backend): the
 * range picker changes the window (what the CSV export holds), the pick and the history
 * survive a page reload (the console keeps 15 minutes of chart points and hands them to
 * the page as it loads), and a chart downloads as CSV (time + series with units) and PNG.
 */
import { readFileSync } from 'node:fs';
import { expect, test, type Locator, type Page } from '@playwright/test';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';
import { addAgent, launchTopology, openScreen, screenshot } from '../support/flow.js';
import { startLoad } from '../support/load.js';

test.describe.configure({ mode: 'serial' });

let session: ConsoleSession | undefined;
let page: Page;

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  page = session.page;
});

test.afterAll(async () => {
  await session?.close();
});

/** Clicks a download button; returns the file's name and bytes. */
async function download(button: Locator): Promise<{ name: string; bytes: Buffer }> {
  const [dl] = await Promise.all([page.waitForEvent('download'), button.click()]);
  const failure = await dl.failure();
  expect(failure, 'download failed').toBeNull();
  return { name: dl.suggestedFilename(), bytes: readFileSync((await dl.path())!) };
}

/** The throughput chart's CSV: header cells and rows (each a time in epoch ms and the cells). */
async function throughputCsv(): Promise<{ name: string; header: string[]; rows: { tMs: number; cells: string[] }[] }> {
  const { name, bytes } = await download(page.getByTestId('panel-throughput').getByTestId('chart-export-csv'));
  const [head, ...lines] = bytes.toString('utf8').trim().split('\r\n');
  const rows = lines.map((l) => l.split(',')).map((cells) => ({ tMs: Date.parse(cells[0]!), cells }));
  return { name, header: head!.split(','), rows };
}

test('the range picker changes the window, and history and range survive a reload', async () => {
  test.setTimeout(240_000);
  await addAgent(page, session!.agent.url, session!.agent.token);
  await launchTopology(page, '1A1F', 'charts-');
  const apiUrl = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
  const load = startLoad(apiUrl, { concurrency: 1, maxTokens: 16 });
  try {
    await openScreen(page, 'dashboard');
    await expect(page.getByTestId('panel-throughput').getByRole('img', { name: 'output tokens per second' })).toBeVisible({ timeout: 30_000 });
    await page.getByTestId('chart-range').selectOption('60000');
    // A few seconds of points at full resolution (one per 100 ms fold).
    await page.waitForTimeout(4_000);
    const minute = await throughputCsv();
    expect(minute.name).toMatch(/^afd-output-tokens-s-1min-.*\.csv$/);
    expect(minute.header).toEqual(['time (UTC)', 'seconds before newest (s)', 'tokens/s (tokens/s)']);
    expect(minute.rows.length).toBeGreaterThan(25);
    for (const r of minute.rows) expect(Number.isFinite(r.tMs) && Number(r.cells[2]) >= 0).toBe(true);
    const steps = minute.rows.slice(1).map((r, i) => r.tMs - minute.rows[i]!.tMs);
    expect(Math.min(...steps)).toBeGreaterThan(0);
    expect(steps.sort((a, b) => a - b)[Math.floor(steps.length / 2)]).toBeLessThan(250);

    // 5 minutes: 1 s buckets (mean, min and max), so fewer rows over the same time.
    await page.getByTestId('chart-range').selectOption('300000');
    const five = await throughputCsv();
    expect(five.name).toMatch(/-5min-/);
    expect(five.header).toEqual(['time (UTC)', 'seconds before newest (s)', 'tokens/s (tokens/s)', 'tokens/s min (tokens/s)', 'tokens/s max (tokens/s)']);
    expect(five.rows.length).toBeLessThan(minute.rows.length / 3);
    for (const r of five.rows) expect(Number(r.cells[3])).toBeLessThanOrEqual(Number(r.cells[4]));

    // Reload: the range is remembered, and the charts start with what the console kept.
    const firstBefore = minute.rows[0]!.tMs;
    const reloadAtMs = Date.now();
    await page.reload();
    await openScreen(page, 'dashboard');
    await expect(page.getByTestId('chart-range')).toHaveValue('300000');
    await expect(page.getByTestId('panel-throughput').getByRole('img', { name: 'output tokens per second' })).toBeVisible({ timeout: 30_000 });
    const after = await throughputCsv();
    expect(after.rows[0]!.tMs).toBeLessThan(reloadAtMs - 3_000);
    // Within one 1 s bucket of the oldest point seen before the reload (or older).
    expect(after.rows[0]!.tMs).toBeLessThanOrEqual(firstBefore + 1_000);
    await screenshot(page, 'dashboard-charts-5min');

    // The PNG: a real image of the chart (signature, and as wide as the chart's canvas at least).
    const png = await download(page.getByTestId('panel-throughput').getByTestId('chart-export-png'));
    expect(png.name).toMatch(/^afd-output-tokens-s-5min-.*\.png$/);
    expect(png.bytes.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const widthPx = png.bytes.readUInt32BE(16);
    const heightPx = png.bytes.readUInt32BE(20);
    const canvasWidth = await page.getByTestId('panel-throughput').getByRole('img').evaluate((c) => (c as HTMLCanvasElement).width);
    expect(widthPx).toBe(canvasWidth);
    expect(heightPx).toBeGreaterThan(100);
    expect(png.bytes.length).toBeGreaterThan(2_000);
  } finally {
    await load.stop();
  }
});
