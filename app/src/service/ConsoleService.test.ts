import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleService } from './ConsoleService.js';

const services: ConsoleService[] = [];
const make = (): ConsoleService => {
  const s = new ConsoleService({ log: () => undefined, connectTimeoutMs: 2000 });
  services.push(s);
  return s;
};
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.dispose()));
});

describe('ConsoleService.invoke', () => {
  it('rejects unknown channels and malformed requests with the reason', async () => {
    const s = make();
    await expect(s.invoke('process.exit', {})).rejects.toThrow('unknown bridge channel "process.exit"');
    await expect(s.invoke('agents.add', { url: 'ws://h:1' })).rejects.toThrow(/malformed agents.add request: token/);
    await expect(s.invoke('topology.launch', { mode: 'afd', topology: '1A2F', placements: [] })).rejects.toThrow(/attention-ge-ffn/);
  });

  it('validates topologies with a plan', async () => {
    const s = make();
    await expect(s.invoke('topology.validate', { topology: '3A2F' })).resolves.toMatchObject({ valid: true, plan: { blocks: [{ attentionRanks: [0, 1] }, { attentionRanks: [2] }] } });
    await expect(s.invoke('topology.validate', { topology: '1A2F' })).resolves.toMatchObject({ valid: false, plan: null, problems: [expect.stringMatching(/attention-ge-ffn/)] });
  });

  it('refuses a launch on agents it does not know, naming the rank and what to do', async () => {
    const s = make();
    const spec = { mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'gpu-host', backend: 'cpu' }] };
    await expect(s.invoke('topology.launch', spec)).rejects.toThrow('cannot launch: colocated rank 0 is placed on agent "gpu-host", which the console does not know; add it on the Agents screen');
    await expect(s.invoke('launch.get', {})).resolves.toEqual({ launch: null });
    // No launch, no chart history yet (a renderer that loads now starts with empty charts).
    await expect(s.invoke('metrics.history', {})).resolves.toMatchObject({ launchId: null, history: { tiers: [{ buckets: [] }, { buckets: [] }, { buckets: [] }] } });
  });

  it('explains chat and restart without a topology, and a missing agent', async () => {
    const s = make();
    await expect(s.invoke('chat.start', { mode: 'completion', prompt: 'hi' })).rejects.toThrow(/cannot chat: no topology is launched/);
    await expect(s.invoke('topology.restart', {})).rejects.toThrow(/nothing to restart/);
    await expect(s.invoke('topology.stop', {})).resolves.toEqual({ stopped: false });
    await expect(s.invoke('chat.stop', { chatId: 'nope' })).resolves.toEqual({ stopped: false });
    await expect(s.invoke('agents.remove', { agentId: 'ghost' })).rejects.toThrow(/no agent "ghost"/);
    await expect(s.invoke('agents.add', { url: 'ws://127.0.0.1:1', token: 't' })).rejects.toThrow(/refused the connection/);
    await expect(s.invoke('agents.list', {})).resolves.toEqual({ agents: [] });
  });
});
