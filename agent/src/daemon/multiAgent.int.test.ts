/**
 * A topology spread over two agents (two real `afd-agent serve` processes on loopback):
 * both receive the same 2A2F spec; agent "ffn-host" starts the FFN ranks, agent
 * "attn-host" the attention ranks and the front router; they meet at the agreed port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentEvent, type TopologyState } from '@afd/shared';
import { freePortBlock } from '@afd/native/ports';
import { AgentClient } from './AgentClient.js';
import { startAgent, type StartedAgent } from '../testing/AgentProcess.js';
import { defaultServedModelName } from '../model/defaultModel.js';

const agents: StartedAgent[] = [];
const clients: AgentClient[] = [];

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const a = await startAgent();
    agents.push(a);
    clients.push(await AgentClient.connect(a.url, a.token));
  }
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.request('topology.stop', { graceMs: 5000 }).catch(() => undefined)));
  await Promise.all(clients.map((c) => c.close()));
  for (const a of agents) expect(await a.stop()).toBe(0);
});

describe('a topology across two agents', () => {
  it('launches 2A2F with FFN ranks on one agent and attention ranks on the other', async () => {
    const states: (TopologyState | undefined)[] = [undefined, undefined];
    const failures: string[] = [];
    clients.forEach((c, i) =>
      c.onEvent((e: AgentEvent) => {
        if (e.type === 'topology.state') states[i] = e.state;
        if (e.type === 'rank.failed') failures.push(`${e.message}\n${e.lastLogLines.join('\n')}`);
      }),
    );
    const port = await freePortBlock(2);
    const spec = launchSpecSchema.parse({
      mode: 'afd',
      topology: '2A2F',
      apiPort: 0,
      agentHosts: { 'ffn-host': '127.0.0.1', 'attn-host': '127.0.0.1' },
      afd: { port },
      placements: [
        { role: 'ffn', rank: 0, agentId: 'ffn-host', backend: 'cpu', threads: 1 },
        { role: 'ffn', rank: 1, agentId: 'ffn-host', backend: 'cpu', threads: 1 },
        { role: 'attention', rank: 0, agentId: 'attn-host', backend: 'cpu', threads: 1 },
        { role: 'attention', rank: 1, agentId: 'attn-host', backend: 'cpu', threads: 1 },
      ],
    });
    const [ffnAgent, attnAgent] = clients as [AgentClient, AgentClient];
    expect((await ffnAgent.request('topology.launch', { launchId: 'x2', agentId: 'ffn-host', spec })).numRanks).toBe(2);
    expect((await attnAgent.request('topology.launch', { launchId: 'x2', agentId: 'attn-host', spec })).numRanks).toBe(2);
    const t0 = Date.now();
    while (!(states[0]?.state === 'running' && states[1]?.state === 'running')) {
      if (failures.length > 0) throw new Error(`a rank failed: ${failures[0]}`);
      if (Date.now() - t0 > 180_000) throw new Error(`not running in time: ${JSON.stringify(states.map((s) => s?.ranks.map((r) => [r.role, r.rank, r.state])))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(states[0]!.ranks.map((r) => r.role)).toEqual(['ffn', 'ffn']);
    expect(states[0]!.routerUrl).toBeNull();
    expect(states[1]!.ranks.map((r) => r.role)).toEqual(['attention', 'attention']);
    const res = await fetch(`${states[1]!.routerUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: defaultServedModelName(), prompt: 'hi', max_tokens: 3, temperature: 0 }),
    });
    expect(res.status).toBe(200);
  }, 240_000);
});
