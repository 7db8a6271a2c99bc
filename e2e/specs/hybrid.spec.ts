/**
 * A Gated DeltaNet hybrid (make-model `qwen3_next tiny`: three linear-attention layers and
 * one gated full-attention layer, MoE with a gated shared expert) from the console: the
 * Topology screen's model line names its Gated DeltaNet layers, with the Launch button in
 * view at 1280x720 and 1920x1080, and the model launches as 1A1F on the CPU and completes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, complete, openScreen, screenshot, stopFromLaunchScreen } from '../support/flow.js';
import { AFD_HOME, AGENT_SCRIPT, ROOT } from '../support/paths.js';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';

test.describe.configure({ mode: 'serial' });

const dir = mkdtempSync(join(tmpdir(), 'afd-e2e-hybrid-'));
const model = join(dir, 'tiny-qwen3-next');
let agent: StartedAgent;
let host: StartedConsole;
let page: Page;

test.beforeAll(async ({ browser }) => {
  execFileSync(process.execPath, [AGENT_SCRIPT, 'make-model', '--arch', 'qwen3_next', '--preset', 'tiny', '--out', model], {
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

test('the model line names the Gated DeltaNet layers; 1A1F launches and completes', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await page.getByTestId('model-dir').fill(model);
  await expect(page.getByTestId('model-info-line').first()).toContainText('Qwen3NextForCausalLM · 4 layers (3 Gated DeltaNet)');
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  for (const size of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
    await page.setViewportSize(size);
    await expect(page.getByTestId('launch-button')).toBeInViewport();
    await page.screenshot({ path: join(ROOT, 'e2e', 'artifacts', `hybrid-topology-${size.width}x${size.height}.png`) });
  }
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await complete(page, 'Once upon a time');
  await screenshot(page, 'hybrid-playground');
  await stopFromLaunchScreen(page);
});
