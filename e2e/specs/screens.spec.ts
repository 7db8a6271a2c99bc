/**
 * Every screen of the console at 1280x720 (issue 43: "the screenshots in e2e/artifacts show
 * each screen at 1280x720") and again at 1920x1080, against a real local agent (CPU backend) with one 1A1F launch
 * and two exchanges in the Playground: each screen's heading shows, what it is for lies
 * inside the window without scrolling (the Topology screen's Launch, the Launch screen's
 * Stop, the Playground's composer and Send ...), and the window as it is goes to
 * e2e/artifacts/screen-<name>-<width>x<height>.png.
 */
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, openScreen } from '../support/flow.js';
import { startLoad } from '../support/load.js';
import { ARTIFACTS } from '../support/paths.js';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';

test.describe.configure({ mode: 'serial' });

const SIZES = [
  { width: 1280, height: 720 },
  { width: 1920, height: 1080 },
] as const;
let WIDTH: number = SIZES[0].width;
let HEIGHT: number = SIZES[0].height;

let session: ConsoleSession | undefined;
let page: Page;

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  page = session.page;
  await page.setViewportSize({ width: WIDTH, height: HEIGHT });
  await addAgent(page, session.agent.url, session.agent.token);
});

test.afterAll(async () => {
  await session?.close();
});

/** The element with this test id lies wholly inside the window. */
async function expectInView(testId: string, screen: string): Promise<void> {
  const el = page.getByTestId(testId).first();
  await expect(el, `${testId} on ${screen}`).toBeVisible();
  const box = (await el.boundingBox())!;
  expect(box.y, `${testId} top on ${screen}`).toBeGreaterThanOrEqual(0);
  expect(box.x, `${testId} left on ${screen}`).toBeGreaterThanOrEqual(0);
  expect(box.y + box.height, `${testId} bottom on ${screen}`).toBeLessThanOrEqual(HEIGHT);
  expect(box.x + box.width, `${testId} right on ${screen}`).toBeLessThanOrEqual(WIDTH);
}

/** Opens a screen at the top, checks its heading is in the window, runs its checks and saves the window. */
async function shoot(id: string, title: string, checks: () => Promise<void>): Promise<void> {
  await openScreen(page, id);
  await page.evaluate(() => document.querySelector('.app-main')?.scrollTo(0, 0));
  const heading = page.getByRole('heading', { level: 2, name: title, exact: true });
  await expect(heading).toBeVisible();
  const box = (await heading.boundingBox())!;
  expect(box.y + box.height, `${title} heading`).toBeLessThanOrEqual(HEIGHT);
  await expectInView(`nav-${id}`, title);
  await checks();
  await page.screenshot({ path: join(ARTIFACTS, `screen-${id}-${WIDTH}x${HEIGHT}.png`) });
}

test('launch 1A1F and have two exchanges in the Playground', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await openScreen(page, 'playground');
  await page.getByTestId('max-tokens').fill('16');
  await page.getByTestId('temperature').fill('0');
  for (const [n, text] of ['Hello, who are you?', 'Tell me about castles.'].entries()) {
    await page.getByTestId('chat-input').fill(text);
    await page.getByTestId('chat-send').click();
    await expect(page.getByTestId('msg-assistant')).toHaveCount(n + 1);
    await expect(page.getByTestId('msg-assistant').last()).toHaveAttribute('data-stage', 'done', { timeout: 90_000 });
  }
});

for (const size of SIZES) test(`every screen at ${size.width}x${size.height}: its heading and what it is for inside the window`, async () => {
  ({ width: WIDTH, height: HEIGHT } = size);
  await page.setViewportSize(size);
  /** The topology's OpenAI API (from the Launch screen). */
  let api = '';
  await shoot('agents', 'Agents', async () => {
    await expect(page.locator('[data-testid^="agent-row-"]').first().getByTestId('agent-state')).toHaveText('connected');
    await expectInView('agent-url', 'Agents');
    await expectInView('agent-add', 'Agents');
  });
  await shoot('topology', 'Topology', async () => {
    await expect(page.getByTestId('preset-1A1F')).toBeChecked();
    await expectInView('preset-1A1F', 'Topology');
    await expectInView('topology-busy', 'Topology'); // 1A1F runs: the screen says so at the top
    // The actions stay at the bottom of the window below the long options form.
    await expectInView('launch-button', 'Topology');
    await expectInView('replace-button', 'Topology');
  });
  await shoot('launch', 'Launch', async () => {
    await expect(page.getByTestId('launch-state')).toHaveText('running');
    api = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
    for (const id of ['launch-state', 'stop-button', 'restart-button', 'launch-restart-policy', 'rank-attention-0', 'rank-ffn-0']) await expectInView(id, 'Launch');
  });
  await shoot('playground', 'Playground', async () => {
    await expect(page.getByTestId('msg-assistant')).toHaveCount(2);
    for (const id of ['chat-input', 'chat-send', 'chat-new']) await expectInView(id, 'Playground');
    await expect(page.getByTestId('msg-assistant').last()).toBeInViewport();
    const scroll = await page.evaluate(() => {
      const main = document.querySelector('.app-main')!;
      return { page: document.documentElement.scrollHeight - window.innerHeight, main: main.scrollHeight - main.clientHeight };
    });
    expect(scroll, 'only the conversation scrolls').toEqual({ page: 0, main: 0 });
  });
  // Live numbers need traffic: background completions while the Dashboard is watched.
  const load = startLoad(api, { concurrency: 1, maxTokens: 32 });
  try {
    await shoot('dashboard', 'Dashboard', async () => {
      await expect(page.getByTestId('stat-step')).toHaveText(/^\d[\d.]* (ms|µs|s)$/, { timeout: 30_000 });
      await expect(page.getByTestId('heatmap-A→F bytes')).not.toHaveAttribute('data-nonzero', '0');
      for (const id of ['stat-step', 'stat-tps', 'chart-range']) await expectInView(id, 'Dashboard');
    });
  } finally {
    await load.stop();
  }
  await shoot('logs', 'Logs', async () => {
    await expect(page.getByTestId('logs-view')).not.toContainText('Select a rank', { timeout: 20_000 });
    await expect(page.getByTestId('logs-view').locator('div').first()).toBeVisible({ timeout: 20_000 });
    await expectInView('logs-filter', 'Logs');
    await expectInView('logs-rank', 'Logs');
  });
  await shoot('server', 'Server', async () => {
    await expect(page.getByTestId('server-base-url')).toContainText('/v1');
    await expectInView('server-base-url', 'Server');
    await expectInView('server-model', 'Server');
    // The Playground's two chats are in the request log.
    await expect.poll(async () => page.getByTestId('request-row').filter({ hasText: '/v1/chat/completions' }).count(), { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
  });
  await shoot('plan', 'Plan', async () => {
    // The agent runs from this checkout: the repository's CPU profile is among its profiles.
    await page.getByTestId('plan-agent-profiles').getByText('profile-cpu-qwen3_moe-tiny.json').first().click();
    await expect(page.getByTestId('plan-row-0')).toBeVisible({ timeout: 60_000 });
    for (const id of ['plan-gpus', 'plan-tpot', 'plan-reason', 'plan-use-winner', 'plan-row-0']) await expectInView(id, 'Plan');
  });
});
