/**
 * Prefill ranks on the Topology screen (wPxAyF): against a real local agent (CPU backend)
 * the 1P1A1F preset wires a prefill rank beside 1A1F — the wiring drawing shows the
 * Prefill group with its KV link to the attention rank apart from the A↔F link, the
 * prefill rank gets a placement row, and the launch spec the console would send names
 * 1P1A1F with a prefill placement (checked without launching). The prefill count is typed
 * from the keyboard too. Screenshots at 1280x720 and 1920x1080 (e2e/artifacts/
 * prefill-topology-<w>x<h>.png) with the Launch button and the prefill placement rows in view.
 * Then 1P1A1F launches on the CPU from the console: the Launch screen lists the prefill rank
 * ready, one chat in the Playground is prefilled on it, and the Dashboard's KV-transfer
 * section shows the transfer P0 → A0 and P0's served prefill.
 */
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, chat, openScreen, screenshot, stopFromLaunchScreen } from '../support/flow.js';
import { ARTIFACTS } from '../support/paths.js';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';

test.describe.configure({ mode: 'serial' });

let session: ConsoleSession | undefined;
let page: Page;

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  page = session.page;
  await addAgent(page, session.agent.url, session.agent.token);
});

test.afterAll(async () => {
  await session?.close();
});

/** The element lies wholly inside the window. */
async function expectInWindow(testId: string, what: string): Promise<void> {
  const size = page.viewportSize()!;
  const box = (await page.getByTestId(testId).first().boundingBox())!;
  expect(box.y, `${what} top`).toBeGreaterThanOrEqual(0);
  expect(box.y + box.height, `${what} bottom`).toBeLessThanOrEqual(size.height);
  expect(box.x + box.width, `${what} right`).toBeLessThanOrEqual(size.width);
}

/** The launch spec the Topology screen shows (what Launch would send). */
async function shownSpec(): Promise<{ topology: string; placements: { role: string; rank: number; agentId: string; backend: string }[]; afd?: { pd?: { transport?: string } } }> {
  const details = page.getByTestId('launch-spec-details');
  if ((await details.getAttribute('open')) === null) await details.locator('summary').click();
  return JSON.parse(await page.getByTestId('launch-spec').textContent() ?? '{}');
}

test('1P1A1F: the prefill group in the wiring drawing, its placement row and the spec to launch', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1P1A1F').check();
  await expect(page.getByTestId('prefill-ranks')).toHaveValue('1');
  await expect(page.getByTestId('topology-ok')).toContainText('Ready to launch 1P1A1F');

  const wiring = page.getByTestId('topology-wiring');
  await expect(wiring).toHaveAttribute('data-topology', '1P1A1F');
  await expect(wiring.getByTestId('wiring-group-prefill')).toContainText('Prefill');
  await expect(wiring.getByTestId('wiring-node-P0')).toBeVisible();
  await expect(wiring.getByTestId('wire-kv')).toHaveCount(1);
  await expect(wiring.getByTestId('wire-af')).toHaveCount(1);
  await expect(wiring.getByTestId('wiring-kv-legend')).toContainText('KV transfer');
  await expect(page.getByTestId('plan-prefill')).toContainText('P0 → every attention rank');

  const row = page.getByTestId('placement-prefill-0');
  await expect(row).toContainText('prefill 0');
  await expect(row.getByLabel('Device of prefill rank 0')).toHaveValue(/\|cpu\|0$/);

  // The KV transport: auto by default, and what the spec sends.
  await expect(page.getByTestId('pd-transport')).toHaveValue('auto');
  await page.getByTestId('pd-transport').selectOption('tcp');
  expect((await shownSpec()).afd?.pd?.transport).toBe('tcp');
  await page.getByTestId('pd-transport').selectOption('auto');

  const spec = await shownSpec();
  expect(spec.topology).toBe('1P1A1F');
  expect(spec.afd?.pd?.transport).toBe('auto');
  expect(spec.placements.map((p) => `${p.role}${p.rank}`).sort()).toEqual(['attention0', 'ffn0', 'prefill0']);
  const prefill = spec.placements.find((p) => p.role === 'prefill');
  expect(prefill).toMatchObject({ rank: 0, backend: 'cpu' });
  expect(prefill?.agentId).toBe(spec.placements.find((p) => p.role === 'attention')?.agentId);

  for (const size of [
    { width: 1280, height: 720 },
    { width: 1920, height: 1080 },
  ]) {
    await page.setViewportSize(size);
    await row.scrollIntoViewIfNeeded();
    await expectInWindow('placement-prefill-0', `prefill placement row at ${size.width}x${size.height}`);
    await expectInWindow('launch-button', `Launch at ${size.width}x${size.height}`);
    await expect(page.getByTestId('launch-button')).toBeEnabled();
    await page.screenshot({ path: join(ARTIFACTS, `prefill-topology-${size.width}x${size.height}.png`) });
  }
});

test('the prefill count from the keyboard: 2 makes 2P1A1F, 0 plain 1A1F', async () => {
  await page.setViewportSize({ width: 1280, height: 720 });
  const count = page.getByTestId('prefill-ranks');
  await count.focus();
  await page.keyboard.press('ArrowUp');
  await expect(count).toHaveValue('2');
  await expect(page.getByTestId('preset-2P1A1F')).toBeChecked();
  await expect(page.getByTestId('topology-wiring')).toHaveAttribute('data-topology', '2P1A1F');
  await expect(page.getByTestId('wire-kv')).toHaveCount(2);
  await expect(page.getByTestId('placement-prefill-1')).toBeVisible();
  expect((await shownSpec()).topology).toBe('2P1A1F');
  await count.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('0');
  await expect(page.getByTestId('preset-1A1F')).toBeChecked();
  await expect(page.getByTestId('wiring-group-prefill')).toHaveCount(0);
  await expect(page.getByTestId('placement-prefill-0')).toHaveCount(0);
  expect((await shownSpec()).topology).toBe('1A1F');
});

test('1P1A1F launches on the CPU; a chat is prefilled on P0 and the Dashboard shows the KV transfer', async () => {
  test.setTimeout(400_000);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1P1A1F').check();
  // The chat below is a few dozen tokens: every prompt with a full KV block goes to the prefill rank.
  await page.getByTestId('pd-min-prompt').fill('8');
  await expect(page.getByTestId('topology-ok')).toContainText('Ready to launch 1P1A1F');
  expect((await shownSpec()).placements.some((p) => p.role === 'prefill')).toBe(true);
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('nav-launch')).toHaveAttribute('aria-selected', 'true');
  // Fail at once on a failed launch, with its reason, instead of waiting out the timeout.
  await expect(page.getByTestId('launch-state')).toHaveText(/running|failed/, { timeout: 240_000 });
  if ((await page.getByTestId('launch-state').textContent()) !== 'running') throw new Error(`1P1A1F failed: ${await page.getByTestId('rank-table').innerText()}`);
  await expect(page.getByTestId('rank-prefill-0').getByTestId('rank-state')).toHaveText('ready');
  await screenshot(page, 'prefill-launch');

  await chat(page, 'Tell me a long story about the quick brown fox that jumps over the lazy dog while seven sailors sing about the northern lights.', 'prefill-');

  await openScreen(page, 'dashboard');
  const panel = page.getByTestId('panel-pd');
  await expect(panel).toBeVisible({ timeout: 30_000 });
  const link = panel.getByTestId('pd-link-P0-A0');
  await expect(link.getByTestId('pd-link-transfers')).not.toHaveText('0', { timeout: 30_000 });
  await expect(link).toContainText('connected');
  // One host: the attention rank copied the KV out of the prefill rank's shared memory.
  await expect(link.getByTestId('pd-link-transport')).toHaveText('peer');
  await expect(panel.getByTestId('pd-served-P0').getByTestId('pd-served-prefills')).not.toHaveText('0');
  await expect(panel.getByTestId('heatmap-KV bytes, prefill → attention')).toHaveAttribute('data-nonzero', '1');
  await panel.scrollIntoViewIfNeeded();
  await screenshot(page, 'prefill-dashboard');
  await stopFromLaunchScreen(page);
});
