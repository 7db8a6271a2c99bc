import { describe, expect, it } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createAgentsStore } from './agentsStore.js';

describe('agentsStore', () => {
  it('rejects a non-ws URL and an empty token before calling the service', async () => {
    const bridge = createFakeBridge();
    const store = createAgentsStore(bridge);
    expect(await store.getState().add('http://host:7700', 't')).toBe(false);
    expect(store.getState().error).toMatch(/not an agent URL: use ws:\/\/HOST:PORT/);
    expect(await store.getState().add('ws://host:7700', '  ')).toBe(false);
    expect(store.getState().error).toMatch(/token is empty/);
    expect(bridge.calls).toHaveLength(0);
  });

  it('adds through the bridge and shows the service error as is', async () => {
    const bridge = createFakeBridge();
    bridge.handle('agents.add', (r) => {
      if ((r as { token: string }).token !== 'good') throw new Error('agent at ws://h:1 rejected the token');
      return {};
    });
    bridge.handle('agents.list', () => ({ agents: [{ agentId: 'h', url: 'ws://h:1', state: 'connected', message: null, inventory: null, topology: null, latencyMs: 1 }] }));
    const store = createAgentsStore(bridge);
    expect(await store.getState().add('ws://h:1', 'bad')).toBe(false);
    expect(store.getState().error).toBe('agent at ws://h:1 rejected the token');
    expect(await store.getState().add(' ws://h:1 ', ' good ')).toBe(true);
    expect(bridge.calls.find((c) => c.channel === 'agents.add' && (c.request as { token: string }).token === 'good')?.request).toEqual({ url: 'ws://h:1', token: 'good' });
    expect(store.getState().agents.map((a) => a.agentId)).toEqual(['h']);
    expect(store.getState().adding).toBe(false);
  });

  it('follows agents.state pushes', () => {
    const bridge = createFakeBridge();
    const store = createAgentsStore(bridge);
    bridge.emit('agents.state', { agents: [{ agentId: 'x', url: 'ws://x:1', state: 'disconnected', message: 'closed; reconnecting', inventory: null, topology: null, latencyMs: null }] });
    expect(store.getState().agents[0]).toMatchObject({ agentId: 'x', state: 'disconnected' });
  });
});
