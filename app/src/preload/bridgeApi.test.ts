import { describe, expect, it } from 'vitest';
import { createBridgeApi, IPC_INVOKE, IPC_PUSH, type IpcLike } from './bridgeApi.js';

function fakeIpc(reply: unknown) {
  const sent: unknown[][] = [];
  const listeners = new Set<(e: unknown, ...a: unknown[]) => void>();
  const ipc: IpcLike = {
    invoke: async (...args) => {
      sent.push(args);
      return reply;
    },
    on: (_c, l) => void listeners.add(l),
    removeListener: (_c, l) => void listeners.delete(l),
  };
  return { ipc, sent, emit: (...args: unknown[]) => listeners.forEach((l) => l({}, ...args)), listeners };
}

describe('preload bridge', () => {
  it('rejects unknown channels and malformed requests before IPC', async () => {
    const f = fakeIpc({ ok: true, payload: {} });
    const api = createBridgeApi(f.ipc);
    await expect(api.invoke('shell.exec' as never, {} as never)).rejects.toThrow(/unknown bridge channel "shell.exec"/);
    await expect(api.invoke('agents.add', { url: 'http://x', token: 't' })).rejects.toThrow(/malformed agents.add request: url: must be a ws:\/\//);
    await expect(api.invoke('chat.start', { mode: 'chat', messages: [] } as never)).rejects.toThrow(/messages/);
    expect(f.sent).toHaveLength(0);
  });

  it('sends validated requests (defaults applied) and unwraps replies', async () => {
    const f = fakeIpc({ ok: true, payload: { lines: [] } });
    const api = createBridgeApi(f.ipc);
    await expect(api.invoke('logs.get', { agentId: 'a', role: 'ffn', rank: 0 })).resolves.toEqual({ lines: [] });
    expect(f.sent[0]).toEqual([IPC_INVOKE, 'logs.get', { agentId: 'a', role: 'ffn', rank: 0, tail: 200 }]);
    const failing = createBridgeApi(fakeIpc({ ok: false, error: 'no agent "a" is connected' }).ipc);
    await expect(failing.invoke('agents.list', {})).rejects.toThrow('no agent "a" is connected');
    const broken = createBridgeApi(fakeIpc('garbage').ipc);
    await expect(broken.invoke('agents.list', {})).rejects.toThrow(/malformed reply/);
  });

  it('delivers pushes of the subscribed channel only, and unsubscribes', () => {
    const f = fakeIpc(null);
    const api = createBridgeApi(f.ipc);
    const got: unknown[] = [];
    const off = api.on('agents.state', (p) => got.push(p));
    f.emit('agents.state', { agents: [] });
    f.emit('logs.lines', { lines: [] });
    expect(got).toEqual([{ agents: [] }]);
    off();
    expect(f.listeners.size).toBe(0);
    expect(() => api.on('evil' as never, () => undefined)).toThrow(/unknown bridge push channel/);
    expect(IPC_PUSH).toBe('afd:push');
  });
});
