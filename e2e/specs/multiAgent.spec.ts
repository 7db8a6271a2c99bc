/**
 * One topology over two agents: attention ranks on one, FFN ranks on the other, placed by
 * hand on the Topology screen; the console launches both halves and chats through them.
 * The Launch screen's restart policy switch reaches both agents: each one's topology.state,
 * read here over its own socket, shows the new policy.
 */
import { expect, test, type Page } from '@playwright/test';
import type { RestartPolicy } from '@afd/shared';
import { AgentClient } from '@afd/agent/client';
import { freePortBlock } from '@afd/native/ports';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from '../support/processes.js';
import { addAgent, chat, openScreen, screenshot } from '../support/flow.js';

test.describe.configure({ mode: 'serial' });
let agents: StartedAgent[] = [];
let host: StartedConsole;
let page: Page;

test.beforeAll(async ({ browser }) => {
  agents = [await startAgent(), await startAgent()];
  host = await startConsole();
  page = await browser.newPage();
  await page.goto(host.url);
});
/** The restart policy an agent's current launch has, as its topology.state says on a fresh connection. */
async function agentRestartPolicy(agent: StartedAgent): Promise<RestartPolicy | undefined> {
  let policy: RestartPolicy | undefined;
  const client = await AgentClient.connect(agent.url, agent.token, {
    onEvent: (e) => {
      if (e.type === 'topology.state') policy = e.state.spec?.restart;
    },
  });
  await client.request('ping', {}); // the state came before this answer
  await client.close();
  return policy;
}

test.afterAll(async () => {
  await page?.close();
  await host?.stop();
  for (const a of agents) await a.stop();
});

test('2A2F split over two agents', async () => {
  for (const a of agents) await addAgent(page, a.url, a.token);
  const rows = page.locator('[data-testid^="agent-row-"]');
  await expect(rows).toHaveCount(2);
  const ids = (await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')!.replace('agent-row-', '')))) as string[];
  await openScreen(page, 'topology');
  await page.getByTestId('preset-2A2F').check();
  for (const r of ['ffn rank 0', 'ffn rank 1']) await page.getByLabel(`Device of ${r}`).selectOption(`${ids[1]}|cpu|0`);
  for (const r of ['attention rank 0', 'attention rank 1']) await page.getByLabel(`Device of ${r}`).selectOption(`${ids[0]}|cpu|0`);
  // A free rendezvous block: across agents the port cannot move, and this host runs other tests.
  await page.getByLabel('Rendezvous base port').fill(String(await freePortBlock(2)));
  await expect(page.getByTestId('topology-ok')).toContainText('on 2 agents');
  await screenshot(page, 'multi-agent-topology');
  await page.getByTestId('launch-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('running', { timeout: 90_000 });
  await expect(page.getByTestId('rank-ffn-1')).toContainText(ids[1]!);
  await expect(page.getByTestId('rank-attention-0')).toContainText(ids[0]!);
  await chat(page, 'Hello across two agents', 'multi-agent-');
  await openScreen(page, 'launch');
  // Console launches start with the policy off; the switch turns it on in both agents' launches.
  await expect(page.getByTestId('launch-restart-policy')).not.toBeChecked();
  await page.getByTestId('launch-restart-policy').check();
  await page.getByTestId('launch-max-restarts').fill('4');
  await page.getByTestId('launch-max-restarts').press('Enter');
  for (const a of agents) await expect.poll(() => agentRestartPolicy(a)).toMatchObject({ policy: 'on-failure', maxRestarts: 4 });
  await expect(page.getByTestId('launch-max-restarts')).toHaveValue('4');
  await expect(page.getByTestId('launch-state')).toHaveText('running');
  await page.getByTestId('stop-button').click();
  await expect(page.getByTestId('launch-state')).toHaveText('stopped', { timeout: 60_000 });
});
