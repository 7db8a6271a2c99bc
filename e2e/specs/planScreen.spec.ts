/**
 * The Plan screen (issue 42) in the real browser against a real local agent: a file that is
 * not a profile (dropped, then picked) is refused with a readable reason; the repository's CPU
 * profile loads through the file picker, 4 GPUs at TPOT 40 ms give a ranked table and the
 * reason line (same planner as `afd-agent plan`), the cost curves draw, and the controls lie
 * inside the window at 1280x720 and 1920x1080; "Use" on an AFD row fills the Topology
 * screen with that topology (custom xAyF, DBO on for two micro-batches) and says where it
 * came from. Last, the profiles the agent has on its host (plan.profiles: one in $AFD_HOME/profiles
 * and the repository's) list on the screen and load with a click. Then a mixed cluster (h200:2 and
 * h100:2 with prices, priced by their published figures): the ranked candidates name the attention
 * and FFN cards and show tokens/s per price, the controls lie inside 1280x720, the kinds survive a
 * reload, and "Use" fills the Topology screen. Screenshots: e2e/artifacts/plan-*.png.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, openScreen } from '../support/flow.js';
import { AFD_HOME, ARTIFACTS, ROOT } from '../support/paths.js';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';

test.describe.configure({ mode: 'serial' });

const PROFILE = join(ROOT, 'docs', 'planner', 'profile-cpu-qwen3_moe-tiny.json');
/** A profile in the agent's home (the repository's, with another device name), removed after. */
const HOME_PROFILE = join(AFD_HOME, 'profiles', `e2e-plan-${process.pid}.json`);

let session: ConsoleSession | undefined;
let page: Page;
/** The page's console warnings (the planner must run in its worker, not fall back to the page). */
const warnings: string[] = [];
/** Scripts of the workers the page started. */
const workers: string[] = [];

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  page = session.page;
  page.on('worker', (w) => workers.push(w.url()));
  page.on('console', (m) => {
    if (m.type() === 'warning') warnings.push(m.text());
  });
  await page.setViewportSize({ width: 1280, height: 720 });
  await addAgent(page, session.agent.url, session.agent.token);
});

test.afterAll(async () => {
  rmSync(HOME_PROFILE, { force: true });
  await session?.close();
});

async function expectInView(testId: string): Promise<void> {
  const size = page.viewportSize()!;
  const el = page.getByTestId(testId).first();
  await expect(el, testId).toBeVisible();
  const box = (await el.boundingBox())!;
  expect(box.y, `${testId} top`).toBeGreaterThanOrEqual(0);
  expect(box.y + box.height, `${testId} bottom at ${size.width}x${size.height}`).toBeLessThanOrEqual(size.height);
  expect(box.x + box.width, `${testId} right at ${size.width}x${size.height}`).toBeLessThanOrEqual(size.width);
}

test('a file that is not a profile is refused with the reason', async () => {
  await openScreen(page, 'plan');
  await expect(page.getByRole('heading', { level: 2, name: 'Plan', exact: true })).toBeVisible();
  // Dropped on the drop zone: not JSON.
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer();
    d.items.add(new File(['{"version": 1, "attention": ['], 'broken.json', { type: 'application/json' }));
    return d;
  });
  await page.getByTestId('plan-drop').dispatchEvent('drop', { dataTransfer: dt });
  await expect(page.getByTestId('plan-profile-error')).toContainText('broken.json: not JSON');
  // Picked: JSON, but a profile of another version.
  await page.getByTestId('plan-file').setInputFiles({ name: 'old.json', mimeType: 'application/json', buffer: Buffer.from('{"version": 7}') });
  await expect(page.getByTestId('plan-profile-error')).toContainText('old.json: profile version 7 is not supported');
  // Right version, a curve missing.
  await page.getByTestId('plan-file').setInputFiles({ name: 'partial.json', mimeType: 'application/json', buffer: Buffer.from('{"version": 1, "measuredAt": "x"}') });
  await expect(page.getByTestId('plan-profile-error')).toContainText('partial.json: backend');
  await expect(page.getByTestId('plan-table')).toHaveCount(0);
  await page.screenshot({ path: join(ARTIFACTS, 'plan-bad-file.png') });
});

test("the repository's CPU profile: 4 GPUs at TPOT 40 ms, the ranking, the reason and the curves", async () => {
  await page.getByTestId('plan-file').setInputFiles(PROFILE);
  await expect(page.getByTestId('plan-profile')).toContainText('qwen3_moe/tiny');
  await expect(page.getByTestId('plan-profile-error')).toHaveCount(0);
  await page.getByTestId('plan-gpus').fill('4');
  await page.getByTestId('plan-tpot').fill('40');
  await expect(page.getByTestId('plan-link')).toHaveValue('profile:tcp');
  await expect(page.getByTestId('plan-row-0')).toBeVisible();
  await expect(page.getByTestId('plan-reason')).toContainText(/(use AFD|do not use AFD here): /);
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/4$/);
  await expect(page.locator('[data-testid^="plan-row-"][data-kind="afd"]').first()).toBeVisible();
  await expect(page.getByTestId('plan-curve-attention-series')).toHaveCount(2);
  await expect(page.getByTestId('plan-curve-ffn-series')).toHaveCount(1);
  await expect(page.getByTestId('plan-curve-connector-series')).toHaveCount(1);
  await expect(page.getByTestId('plan-running')).toHaveCount(0);
  for (const size of [
    { width: 1280, height: 720 },
    { width: 1920, height: 1080 },
  ]) {
    await page.setViewportSize(size);
    await page.evaluate(() => document.querySelector('.app-main')?.scrollTo(0, 0));
    // The table is not squeezed by the page's column: several rows show.
    expect(await page.getByTestId('plan-table-wrap').evaluate((e) => e.clientHeight)).toBeGreaterThan(150);
    for (const id of ['nav-plan', 'plan-drop', 'plan-gpus', 'plan-tpot', 'plan-link', 'plan-reason', 'plan-use-winner', 'plan-row-0', 'plan-use-0']) await expectInView(id);
    // At 1920x1080 the cost curves fit under the table too.
    if (size.height >= 1080) await expectInView('plan-curve-connector');
    await page.screenshot({ path: join(ARTIFACTS, `plan-${size.width}x${size.height}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 720 });
  // A big cluster plans in the worker without freezing the page; back to 4 after.
  await page.getByTestId('plan-gpus').fill('32');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/32$/, { timeout: 60_000 });
  await page.getByTestId('plan-gpus').fill('4');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/4$/, { timeout: 60_000 });
  expect(warnings.filter((w) => w.includes('plan worker unavailable'))).toEqual([]);
  expect(workers.some((u) => u.includes('plan.worker'))).toBe(true);
  // Memory: this version-1 profile says nothing of its device's memory; a GPU of 0.01 GiB
  // holds none of the tiny model's ~92 MB of weights: every shape is dropped, and says why.
  await expect(page.getByTestId('plan-memory')).toContainText('not modelled');
  await page.getByTestId('plan-gpu-mem').fill('0.01');
  await expect(page.getByTestId('plan-dropped')).toContainText(/dropped: they do not fit/, { timeout: 60_000 });
  await expect(page.getByTestId('plan-memory')).toContainText('0.01 GiB per GPU');
  await expect(page.getByTestId('plan-reason')).toContainText('nothing meets');
  await page.getByTestId('plan-gpu-mem').fill('');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/4$/, { timeout: 60_000 });
  await expect(page.getByTestId('plan-dropped')).toHaveCount(0);
  // A reload keeps the inputs and the profile, and plans again at once.
  await page.getByTestId('plan-gpus').fill('8');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/8$/, { timeout: 60_000 });
  await page.reload();
  await page.getByTestId('nav-plan').click();
  await expect(page.getByTestId('plan-profile')).toContainText('qwen3_moe/tiny');
  await expect(page.getByTestId('plan-gpus')).toHaveValue('8');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/8$/, { timeout: 60_000 });
  await page.getByTestId('plan-gpus').fill('4');
  await expect(page.getByTestId('plan-gpus-used-0')).toHaveText(/\/4$/, { timeout: 60_000 });
});

test('"Use" on an AFD row fills the Topology screen with that topology', async () => {
  await expect(page.getByTestId('plan-running')).toHaveCount(0);
  const row = page.locator('[data-testid^="plan-row-"][data-kind="afd"]').first();
  const topology = (await row.getAttribute('data-topology'))!;
  const label = await row.locator('td').nth(1).innerText();
  expect(topology).toMatch(/^\d+A\d+F$/);
  await row.getByRole('button', { name: 'Use' }).click();
  await expect(page.getByTestId('nav-topology')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('topology-from-plan')).toContainText(`From the Plan screen: ${label}`);
  if (['1A1F', '2A1F', '2A2F', '4A2F', '4A4F'].includes(topology)) {
    await expect(page.getByTestId(`preset-${topology}`)).toBeChecked();
  } else {
    await expect(page.getByTestId('preset-custom')).toBeChecked();
    await expect(page.getByTestId('custom-topology')).toHaveValue(topology);
  }
  const dbo = page.getByTestId('dbo-enabled');
  if (label.includes('with DBO') || label.includes('micro-batches')) await expect(dbo).toBeChecked();
  else await expect(dbo).not.toBeChecked();
  await expect(page.getByTestId('topology-plan')).toBeVisible();
  await page.screenshot({ path: join(ARTIFACTS, 'plan-use-topology.png') });
  // The user's own change of shape drops the note.
  await page.getByTestId('preset-1A1F').check();
  await expect(page.getByTestId('topology-from-plan')).toHaveCount(0);
});

test("the agent's profiles: one in its AFD_HOME and the repository's, loaded with a click", async () => {
  mkdirSync(join(AFD_HOME, 'profiles'), { recursive: true });
  writeFileSync(HOME_PROFILE, JSON.stringify({ ...JSON.parse(readFileSync(PROFILE, 'utf8')), device: 'E2E Card' }));
  await openScreen(page, 'plan');
  await page.getByTestId('plan-agent-list').click();
  const home = page.locator('[data-testid^="plan-agent-profile-"]', { hasText: `e2e-plan-${process.pid}.json` });
  await expect(home).toContainText('AFD_HOME');
  const repo = page.locator('[data-testid^="plan-agent-profile-"]', { hasText: 'profile-cpu-qwen3_moe-tiny.json' });
  await expect(repo).toContainText('repository');
  await home.click();
  await expect(page.getByTestId('plan-profile')).toContainText('E2E Card');
  await expect(page.getByTestId('plan-profile')).toContainText(`: e2e-plan-${process.pid}.json`);
  await expect(page.getByTestId('plan-row-0')).toBeVisible();
  await repo.click();
  await expect(page.getByTestId('plan-profile')).toContainText('AMD EPYC');
  await expectInView('plan-agent-profiles');
  await page.screenshot({ path: join(ARTIFACTS, 'plan-agent-profiles.png') });
});

test('a mixed cluster: h200:2 and h100:2 with prices rank attention/FFN cards per GPU and per price, and survive a reload', async () => {
  await openScreen(page, 'plan');
  await page.getByTestId('plan-mixed-add').click();
  await page.getByTestId('plan-mixed-add').click();
  for (const [i, card, price] of [[0, 'h200', '3'], [1, 'h100', '2']] as const) {
    await page.getByTestId(`plan-mixed-card-${i}`).fill(card);
    await page.getByTestId(`plan-mixed-gpus-${i}`).fill('2');
    await page.getByTestId(`plan-mixed-price-${i}`).fill(price);
  }
  await expect(page.getByTestId('plan-gpus')).toBeDisabled();
  // The loaded profile's measured connector is not a link between two kinds (as the CLI says).
  await page.getByTestId('plan-link').selectOption('profile:tcp');
  await expect(page.getByTestId('plan-error')).toContainText('a mixed cluster needs a link preset');
  await page.getByTestId('plan-link').selectOption('nvlink4');
  await expect(page.getByTestId('plan-mixed-table')).toBeVisible({ timeout: 60_000 });
  await expect(page.getByTestId('plan-mixed-cards')).toContainText('h200: 2 x NVIDIA H200 SXM 141GB, price 3; costs: roofline from published figures');
  await expect(page.getByTestId('plan-mixed-cards')).toContainText('h100: 2 x NVIDIA H100 SXM 80GB, price 2');
  await expect(page.getByTestId('plan-mixed-table').locator('th', { hasText: 'tok/s/price' })).toHaveCount(1);
  await expect(page.getByTestId('plan-per-price-0')).toHaveText(/^\d+(\.\d)?$/);
  await expect(page.getByTestId('plan-reason')).toContainText(/(use AFD|do not use AFD here): .*per unit of price the best is/);
  const afd = page.locator('[data-testid^="plan-row-"][data-kind="afd"]').first();
  await expect(afd.locator('[data-testid^="plan-attention-"]')).toHaveText(/^h(200|100)$/);
  await expect(afd.locator('[data-testid^="plan-ffn-"]')).toHaveText(/^h(200|100)$/);
  for (const id of ['plan-mixed-add', 'plan-mixed-price-1', 'plan-mixed-remove-1', 'plan-mixed-model', 'plan-link', 'plan-reason', 'plan-row-0', 'plan-use-0']) await expectInView(id);
  await page.screenshot({ path: join(ARTIFACTS, 'plan-mixed-1280x720.png') });
  // A reload keeps the kinds, their prices and the link, and plans them again at once.
  await page.reload();
  await page.getByTestId('nav-plan').click();
  await expect(page.getByTestId('plan-mixed-card-0')).toHaveValue('h200');
  await expect(page.getByTestId('plan-mixed-card-1')).toHaveValue('h100');
  await expect(page.getByTestId('plan-mixed-price-1')).toHaveValue('2');
  await expect(page.getByTestId('plan-link')).toHaveValue('nvlink4');
  await expect(page.getByTestId('plan-per-price-0')).toBeVisible({ timeout: 60_000 });
  // "Use" on an AFD candidate fills the Topology screen and says which card each role belongs on.
  const first = page.locator('[data-testid^="plan-row-"][data-kind="afd"]').first();
  const topology = (await first.getAttribute('data-topology'))!;
  await first.getByRole('button', { name: 'Use' }).click();
  await expect(page.getByTestId('nav-topology')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('topology-from-plan')).toContainText(/assign h(200|100) GPUs to the attention ranks/);
  if (['1A1F', '2A1F', '2A2F', '4A2F', '4A4F'].includes(topology)) await expect(page.getByTestId(`preset-${topology}`)).toBeChecked();
  else await expect(page.getByTestId('custom-topology')).toHaveValue(topology);
  // Back to one profile: the kinds removed, the single plan shows again.
  await openScreen(page, 'plan');
  await page.getByTestId('plan-mixed-remove-1').click();
  await page.getByTestId('plan-mixed-remove-0').click();
  await expect(page.getByTestId('plan-table')).toBeVisible({ timeout: 60_000 });
});
