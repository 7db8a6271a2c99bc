import { describe, expect, it } from 'vitest';
import { launchSpecSchema } from '@afd/shared';
import { withAgentHosts, type AgentAddress } from './agentHosts.js';

const spec = (agents: [string, string, string, string], agentHosts: Record<string, string> = {}) =>
  launchSpecSchema.parse({
    mode: 'afd',
    topology: '2A2F',
    agentHosts,
    placements: [
      { role: 'ffn', rank: 0, agentId: agents[0], backend: 'cpu' },
      { role: 'ffn', rank: 1, agentId: agents[1], backend: 'cpu' },
      { role: 'attention', rank: 0, agentId: agents[2], backend: 'cpu' },
      { role: 'attention', rank: 1, agentId: agents[3], backend: 'cpu' },
    ],
  });

const book: Record<string, AgentAddress> = {
  'host-a': { advertiseHost: 'host-a', url: 'wss://192.0.2.10:7700' },
  'host-b': { advertiseHost: null, url: 'wss://host-b:7700' },
  v6: { advertiseHost: null, url: 'wss://[fd00::3]:7700' },
  local: { advertiseHost: null, url: 'ws://127.0.0.1:7700' },
  local2: { advertiseHost: null, url: 'ws://127.0.0.1:7701' },
};
const addressOf = (id: string): AgentAddress | undefined => book[id];

describe('withAgentHosts', () => {
  it('takes the advertised address, else the URL host, and keeps what the spec gives', () => {
    const out = withAgentHosts(spec(['host-a', 'host-a', 'host-b', 'v6']), addressOf);
    expect(out.mode === 'afd' && out.agentHosts).toEqual({ 'host-a': 'host-a', 'host-b': 'host-b', v6: 'fd00::3' });
    const given = withAgentHosts(spec(['host-a', 'host-a', 'host-b', 'host-b'], { 'host-a': '10.1.1.1' }), addressOf);
    expect(given.mode === 'afd' && given.agentHosts).toEqual({ 'host-a': '10.1.1.1', 'host-b': 'host-b' });
  });

  it('leaves one-agent launches alone, and agents that are all on this machine', () => {
    expect(withAgentHosts(spec(['local', 'local', 'local', 'local']), addressOf).mode === 'afd' && withAgentHosts(spec(['local', 'local', 'local', 'local']), addressOf)).toMatchObject({ agentHosts: {} });
    const both = withAgentHosts(spec(['local', 'local', 'local2', 'local2']), addressOf);
    expect(both.mode === 'afd' && both.agentHosts).toEqual({ local: '127.0.0.1', local2: '127.0.0.1' });
  });

  it('refuses a loopback agent among remote ones, saying what to do', () => {
    expect(() => withAgentHosts(spec(['local', 'local', 'host-b', 'host-b']), addressOf)).toThrow(/agent "local" is reached at 127\.0\.0\.1, a loopback address .* --advertise-host/);
    expect(() => withAgentHosts(spec(['gone', 'gone', 'host-b', 'host-b']), addressOf)).toThrow(/no agent "gone" is connected/);
  });
});
