/**
 * Prefill ranks on the Topology screen (wPxAyF): against a real local agent (CPU backend)
 * the 1P1A1F preset wires a prefill rank beside 1A1F — the wiring drawing shows the
 * Prefill group with its KV link to the attention rank apart from the A↔F link, the
 * prefill rank gets a placement row, and the launch spec the console would send names
 * 1P1A1F with a prefill placement (checked without launching). The prefill count is typed
 * from the keyboard too. Screenshots at 1280x720 and 1920x1080 (e2e/artifacts/
 * prefill-topology-<w>x<h>.png) with the Launch button and the prefill placement rows in view.
 */
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, openScreen } from '../support/flow.js';
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
async function shownSpec(): Promise<{ topology: string; placements: { role: string; rank: number; agentId: string; backend: string }[] }> {
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

  const spec = await shownSpec();
  expect(spec.topology).toBe('1P1A1F');
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
