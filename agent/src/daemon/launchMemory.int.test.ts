/**
 * A launch through a real agent whose CPU ranks' KV caches its host cannot hold: the
 * agent refuses topology.launch (launch-failed, naming --kv-cache-mib, the size and the
 * host's limit) before any rank starts: no rank event follows, and no rank process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema, type AgentEvent } from '@afd/shared';
import type { AgentClient } from './AgentClient.js';
import { connectRecording, isAlive, startAgent, type StartedAgent } from '../testing/AgentProcess.js';

let agent: StartedAgent;
let client: AgentClient;
const events: AgentEvent[] = [];
const pids = new Set<number>();

beforeAll(async () => {
  agent = await startAgent();
  client = await connectRecording(agent, events, pids);
});

afterAll(async () => {
  await client?.close();
  expect(await agent?.stop()).toBe(0);
  expect([...pids].filter(isAlive)).toEqual([]);
});

const spec = (kvCacheMib: number) =>
  launchSpecSchema.parse({
    mode: 'afd',
    topology: '2A1F',
    apiPort: 0,
    serving: { kvCacheMib },
    placements: [
      { role: 'ffn', rank: 0, agentId: 'local', backend: 'cpu' },
      { role: 'attention', rank: 0, agentId: 'local', backend: 'cpu' },
      { role: 'attention', rank: 1, agentId: 'local', backend: 'cpu' },
    ],
  });

describe.skipIf(process.platform !== 'linux')('a launch larger than the agent\'s host', () => {
  it('is refused before any rank starts, naming the option, the ranks and the limit', async () => {
    await expect(client.request('topology.launch', { launchId: 'too-big', agentId: 'local', spec: spec(16_000_000) })).rejects.toMatchObject({
      code: 'launch-failed',
      message: expect.stringMatching(
        /^launch too-big failed to start: --kv-cache-mib 16000000 \(serving\.kvCacheMib\) x 2 CPU ranks on agent "local" \(attention 0, attention 1\) would take 31250\.00 GiB of host memory, but this host has [\d.]+ GiB available \(.+\); give --kv-cache-mib \d+ or less \(per rank\), or place ranks on other agents$/,
      ) as unknown,
    });
    await new Promise((r) => setTimeout(r, 300)); // any event the launch would send has arrived
    expect(events.filter((e) => e.type.startsWith('rank.'))).toEqual([]);
    expect(events.filter((e) => e.type === 'topology.state' && e.state.ranks.length > 0)).toEqual([]);
  });
});
