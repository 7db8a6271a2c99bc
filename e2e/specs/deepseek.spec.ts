/**
 * A DeepSeek-V2 model (make-model `deepseek_v2 tiny`: MLA, layer 0 dense, routed +
 * shared experts) launched from the console as 1A1F on the CPU backend: it serves, and
 * the dashboard's per-layer panels show every layer, naming the dense one.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, complete, openScreen, screenshot, stopFromLaunchScreen } from '../support/flow.js';
import { startLoad } from '../support/load.js';
import { AFD_HOME, AGENT_SCRIPT, ROOT } from '../support/paths.js';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';

test.describe.configure({ mode: 'serial' });

const dir = mkdtempSync(join(tmpdir(), 'afd-e2e-deepseek-'));
const model = join(dir, 'tiny-deepseek-v2');
let agent: StartedAgent;
let host: StartedConsole;
let page: Page;

test.beforeAll(async ({ browser }) => {
  execFileSync(process.execPath, [AGENT_SCRIPT, 'make-model', '--arch', 'deepseek_v2', '--preset', 'tiny', '--out', model], {
    cwd: ROOT,
    env: { ...process.env, AFD_HOME },
    stdio: 'pipe',
  });
  agent = await startAgent();
  host = await startConsole();
  page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(host.url);
  await addAgent(page, agent.url, agent.token);
});

test.afterAll(async () => {
  await page?.close();
  await host?.stop();
  await agent?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('launch DeepSeek-V2 as 1A1F, complete, and see its dense layer on the dashboard', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await page.getByTestId('model-dir').fill(model);
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await complete(page, 'Once upon a time');
  await openScreen(page, 'launch');
  const apiUrl = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
  const load = startLoad(apiUrl, { concurrency: 1, maxTokens: 16 });
  try {
    await openScreen(page, 'dashboard');
    await expect(page.getByTestId('dense-layers')).toContainText('Dense FFN layers: 0 (the others are MoE)', { timeout: 30_000 });
    const bytes = page.getByTestId('heatmap-A→F bytes');
    await expect(bytes.getByRole('img')).toHaveAttribute('aria-label', /: 4 layers x \d+ columns/);
    await expect(bytes).not.toHaveAttribute('data-nonzero', '0');
    await expect(page.getByTestId('heatmap-F→A bytes')).not.toHaveAttribute('data-nonzero', '0');
    await screenshot(page, 'deepseek-dashboard');
  } finally {
    await load.stop();
  }
  expect(load.completed).toBeGreaterThan(0);
  await stopFromLaunchScreen(page);
});
