/**
 * Recovery against a real local agent (CPU backend): with "Restart a rank that dies" on,
 * an FFN rank killed by hand comes back without a click, the Launch screen says how many
 * restarts and why, and a new prompt gets an answer; the Launch screen's switch then turns
 * the policy off on the running launch (and the limit changes, kept across a reload), and
 * the next kill fails the launch with its cause; then "Stop and launch this one" on the
 * Topology screen switches to another topology in one click.
 */
import { expect, test, type Page } from '@playwright/test';
import { openConsoleSession, type ConsoleSession } from '../support/session.js';
import { addAgent, complete, openScreen, screenshot } from '../support/flow.js';

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

test('with the restart policy on, a killed FFN rank comes back without a click', async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-1A1F').check();
  await page.getByTestId('restart-policy').check();
  await expect(page.getByTestId('topology-ok')).toBeVisible();
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await expect(page.getByTestId('launch-recovery')).toHaveCount(0);

  const row = page.getByTestId('rank-ffn-0');
  const pid = Number(/pid (\d+)/.exec(await row.innerText())?.[1]);
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, 'SIGKILL');
  await expect(page.getByTestId('launch-recovery')).toContainText(/last cause: ffn rank 0 on agent \S+ was killed by SIGKILL/, { timeout: 30_000 });
  await expect(page.getByTestId('launch-recovery')).toContainText('Restarts: 1', { timeout: 60_000 });
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await expect(row.getByTestId('rank-restarts')).toHaveText('restarts 1');
  await expect(row).not.toContainText(`pid ${pid}`);
  await expect(page.getByTestId('launch-failure')).toHaveCount(0);
  await screenshot(page, 'launch-recovered');
  // The router takes the block back at its next /health poll (every second); a request before
  // that gets 503 with Retry-After, which the Playground shows as an error, not a hang.
  const api = (await page.getByTestId('router-url').innerText()).replace(/\/v1$/, '');
  await expect.poll(async () => ((await (await fetch(`${api}/health`)).json()) as { status: string }).status, { timeout: 30_000 }).toBe('ok');
  await complete(page, 'Once upon a time');
});

test("the Launch screen's switch turns the restart policy off live: the next killed FFN rank fails the launch", async () => {
  await openScreen(page, 'launch');
  const policy = page.getByTestId('launch-restart-policy');
  const max = page.getByTestId('launch-max-restarts');
  await expect(policy).toBeChecked();
  await expect(max).toHaveValue('10');
  // The limit: changed live, and what the agents hold survives a reload of the page.
  await max.fill('3');
  await max.press('Enter');
  await expect(page.getByTestId('launch-restart-note')).toContainText('On: the agents restart a rank that dies');
  await page.reload();
  await openScreen(page, 'launch');
  await expect(max).toHaveValue('3');
  await expect(policy).toBeChecked();

  await policy.uncheck();
  await expect(policy).not.toBeChecked();
  await expect(page.getByTestId('launch-restart-note')).toHaveText('Off: a rank that dies fails the launch; Restart relaunches it.');
  await expect(max).toBeDisabled();
  await expect(page.getByTestId('launch-state')).toHaveText('running');

  const row = page.getByTestId('rank-ffn-0');
  const pid = Number(/pid (\d+)/.exec(await row.innerText())?.[1]);
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, 'SIGKILL');
  // Not restarted: the launch fails with the cause (on, it would stay up while the agent restarts the rank).
  await expect(page.getByTestId('launch-state')).toHaveText('failed', { timeout: 30_000 });
  await expect(page.getByTestId('launch-failure')).toContainText(/ffn rank 0 on agent \S+ was killed by SIGKILL/);
  await expect(row.getByTestId('rank-state')).toHaveText('failed');
  await expect(row.getByTestId('rank-restarts')).toHaveText('restarts 1'); // the first test's restart only
  await expect(page.getByTestId('launch-cleanup')).toContainText('Restart launches it again', { timeout: 30_000 });
  await expect(policy).toBeDisabled(); // a failed launch takes no change; Restart relaunches with the policy it had
  await screenshot(page, 'launch-restart-off');

  // Restart relaunches with the switch as it was left (off), and it turns on again live.
  await page.getByTestId('restart-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await expect(policy).not.toBeChecked();
  await policy.check();
  await expect(policy).toBeChecked();
  await expect(max).toHaveValue('3');
  await expect(page.getByTestId('launch-restart-note')).toContainText('On: the agents restart a rank that dies');
});

test("'Stop and launch this one' switches topologies in one click", async () => {
  await openScreen(page, 'topology');
  await page.getByTestId('preset-colocated').check();
  await expect(page.getByTestId('topology-busy')).toContainText('1A1F is running: stop it before launching 1 colocated replica');
  await page.getByTestId('replace-button').click();
  await expect(page.getByTestId('nav-launch')).toHaveAttribute('aria-selected', 'true', { timeout: 60_000 });
  await expect(page.getByTestId('rank-colocated-0')).toBeVisible();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 120_000 });
  await expect(page.getByTestId('rank-ffn-0')).toHaveCount(0);
  await complete(page, 'Once upon a time');
});
