/**
 * Expert parallelism from the console against a real agent (CPU backend, built-in tiny
 * model, 8 experts): the option on the Topology screen, the plan saying which experts
 * each FFN rank holds, a 2A2F launch whose FFN ranks report their halves, and the
 * Dashboard's expert-load heatmap (layers x experts) filling while the topology serves.
 */
import { expect, test, type Page } from '@playwright/test';
import type { StartedAgent } from '../support/processes.js';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';
import { addAgent, openScreen, screenshot, stopFromLaunchScreen } from '../support/flow.js';
import { startLoad } from '../support/load.js';

test.describe.configure({ mode: 'serial' });
let session: ConsoleSession | undefined;
let agent: StartedAgent;
let page: Page;

test.beforeAll(async ({ browser }) => {
  session = await openConsoleSession(browser);
  ({ agent, page } = session);
});
test.afterAll(async () => {
  await session?.close();
});

test('2A2F with expert parallelism: the plan, the running split and the expert-load heatmap', async () => {
  await addAgent(page, agent.url, agent.token);
  await openScreen(page, 'topology');
  await page.getByTestId('preset-2A2F').check();
  const placement = page.getByTestId('expert-placement');
  await expect(placement).toContainText('Expert parallelism off');
  await page.getByTestId('expert-parallel').check();
  // The built-in model's 8 experts when the agent has it already, else the rule.
  await expect(placement).toContainText(/F0: experts (0-3 of 8|e with ⌊e·2\/E⌋ = 0)/);
  await expect(placement).toContainText(/F1: experts (4-7 of 8|e with ⌊e·2\/E⌋ = 1)/);
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });

  const apiUrl = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
  const load = startLoad(apiUrl);
  try {
    await openScreen(page, 'dashboard');
    const panel = page.getByTestId('panel-experts');
    await expect(panel.getByTestId('expert-holders')).toContainText('F0 holds e0–e3 (4 of 8');
    await expect(panel.getByTestId('expert-holders')).toContainText('F1 holds e4–e7 (4 of 8');
    await expect(page.getByTestId('heatmap-tokens per expert')).not.toHaveAttribute('data-nonzero', '0', { timeout: 30_000 });
    await expect(page.getByRole('img', { name: /^tokens per expert: 4 layers x 8 columns/ })).toBeVisible();
    await expect(panel.getByTestId('expert-hottest')).toContainText(/hottest: layer \d expert \d/);
    await screenshot(page, 'expert-parallel-dashboard');
    await openScreen(page, 'topology');
    await expect(page.getByTestId('expert-placement-running')).toContainText('F1 holds e4–e7 of 8');
    await screenshot(page, 'expert-parallel-topology');
  } finally {
    await load.stop();
  }
  expect(load.completed).toBeGreaterThan(0);
  await stopFromLaunchScreen(page);
});
