/**
 * A launch that fails must not leave ranks behind: 2A2F over two agents with the FFN
 * ranks' rendezvous port taken. The FFN rank cannot listen, the launch fails, and the
 * console stops every rank on every agent (the attention ranks would otherwise wait at
 * the rendezvous), says what it stopped, and no rank process is left on either host.
 */
import { createServer, type Server } from 'node:net';
import { expect, test, type Page } from '@playwright/test';
import { addAgent, openScreen, screenshot } from '../support/flow.js';
import { rankPids, startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';

test.describe.configure({ mode: 'serial' });
let agents: StartedAgent[] = [];
let host: StartedConsole;
let page: Page;
let squatter: Server;

test.beforeAll(async ({ browser }) => {
  agents = [await startAgent(), await startAgent()];
  host = await startConsole();
  page = await browser.newPage();
  await page.goto(host.url);
  // Hold a port where FFN rank 0 must listen.
  squatter = createServer();
  await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
});
test.afterAll(async () => {
  await page?.close();
  await host?.stop();
  for (const a of agents) await a.stop();
  squatter?.close();
});

test('a failed launch leaves no rank running on any agent, and says what it stopped', async () => {
  const port = (squatter.address() as { port: number }).port;
  for (const a of agents) await addAgent(page, a.url, a.token);
  const ids = (await page.locator('[data-testid^="agent-row-"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')!.replace('agent-row-', '')))) as string[];
  expect(ids).toHaveLength(2);
  await openScreen(page, 'topology');
  await page.getByTestId('preset-2A2F').check();
  await page.getByTestId('model-dir').fill('');
  for (const r of ['ffn rank 0', 'ffn rank 1']) await page.getByLabel(`Device of ${r}`).selectOption(`${ids[1]}|cpu|0`);
  for (const r of ['attention rank 0', 'attention rank 1']) await page.getByLabel(`Device of ${r}`).selectOption(`${ids[0]}|cpu|0`);
  await page.getByLabel('Rendezvous base port').fill(String(port));
  await expect(page.getByTestId('topology-ok')).toContainText('on 2 agents');
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('failed', { timeout: 90_000 });
  await expect(page.getByTestId('launch-failure')).toContainText(/ffn rank 0 on agent \S+ exited with code/);
  // The console stops the rest: the attention ranks on the first agent, FFN rank 1 on the second.
  const cleanup = page.getByTestId('launch-cleanup');
  await expect(cleanup).toContainText('Stopped the rest of the failed launch', { timeout: 60_000 });
  await expect(cleanup).toContainText(`agent ${ids[0]}: attention 0, attention 1`);
  for (const r of ['attention-0', 'attention-1', 'ffn-1']) await expect(page.getByTestId(`rank-${r}`).getByTestId('rank-state')).toHaveText('exited');
  await expect(page.getByTestId('rank-ffn-0').getByTestId('rank-state')).toHaveText('failed');
  // No rank process is left on either host (bounded poll: they exit within the stop's grace).
  await expect.poll(() => agents.map((a) => rankPids(a).length), { timeout: 30_000 }).toEqual([0, 0]);
  // Nothing is left waiting at the rendezvous in the rows either.
  await expect(page.getByTestId('rank-table')).not.toContainText('rendezvous');
  await expect(page.getByTestId('stop-button')).toBeDisabled();
  await screenshot(page, 'launch-failed-cleanup');
});
