import { describe, expect, it, vi } from 'vitest';
import { createWsBridge, tokenFromLocation, type SocketLike } from './wsBridge.js';

class FakeSocket implements SocketLike {
  readyState = 0;
  sent: string[] = [];
  onopen: SocketLike['onopen'] = null;
  onclose: SocketLike['onclose'] = null;
  onmessage: SocketLike['onmessage'] = null;
  onerror: SocketLike['onerror'] = null;
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {}
  send(data: string): void {
    this.sent.push(data);
  }
  close(): void {}
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  receive(msg: unknown): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
}

describe('web bridge client', () => {
  it('offers the token as a subprotocol, queues calls until open, resolves results', async () => {
    const sockets: FakeSocket[] = [];
    const bridge = createWsBridge({ url: 'ws://h/bridge', token: 'tok', connect: (u, p) => sockets[sockets.push(new FakeSocket(u, p)) - 1]! });
    expect(sockets[0]!.protocols).toEqual(['afd.bridge.v1', 'afd.token.tok']);
    const p = bridge.invoke('agents.list', {});
    expect(sockets[0]!.sent).toHaveLength(0);
    sockets[0]!.open();
    const frame = JSON.parse(sockets[0]!.sent[0]!) as { id: string; channel: string };
    expect(frame).toMatchObject({ kind: 'invoke', channel: 'agents.list', payload: {} });
    sockets[0]!.receive({ kind: 'result', id: frame.id, ok: true, payload: { agents: [] } });
    await expect(p).resolves.toEqual({ agents: [] });
    const q = bridge.invoke('topology.stop', {});
    const id2 = (JSON.parse(sockets[0]!.sent[1]!) as { id: string }).id;
    sockets[0]!.receive({ kind: 'result', id: id2, ok: false, error: 'agent b: stop failed' });
    await expect(q).rejects.toThrow('agent b: stop failed');
  });

  it('delivers known pushes and ignores unknown channels', () => {
    const sockets: FakeSocket[] = [];
    const bridge = createWsBridge({ url: 'ws://h/bridge', token: 't', connect: (u, p) => sockets[sockets.push(new FakeSocket(u, p)) - 1]! });
    sockets[0]!.open();
    const got: unknown[] = [];
    bridge.on('agents.state', (p) => got.push(p));
    sockets[0]!.receive({ kind: 'push', channel: 'agents.state', payload: { agents: [] } });
    sockets[0]!.receive({ kind: 'push', channel: 'evil', payload: {} });
    expect(got).toEqual([{ agents: [] }]);
  });

  it('reports a refused token and a lost link, and fails calls in flight', async () => {
    vi.useFakeTimers();
    const sockets: FakeSocket[] = [];
    const bridge = createWsBridge({ url: 'ws://h/bridge', token: 't', connect: (u, p) => sockets[sockets.push(new FakeSocket(u, p)) - 1]! });
    const states: string[] = [];
    bridge.onLink((s, m) => states.push(`${s}:${m ?? ''}`));
    sockets[0]!.onclose?.({ code: 1006, reason: '' });
    expect(states.at(-1)).toMatch(/^unauthorized:.*wrong or missing token/);
    vi.advanceTimersByTime(5000);
    sockets[1]!.open();
    const p = bridge.invoke('agents.list', {});
    sockets[1]!.onclose?.({ code: 1006, reason: '' });
    await expect(p).rejects.toThrow(/lost the connection/);
    expect(states.at(-1)).toMatch(/^closed:.*reconnecting/);
    vi.useRealTimers();
  });

  it('reads the token from the fragment and remembers it', () => {
    const mem = new Map<string, string>();
    const storage = { getItem: (k: string) => mem.get(k) ?? null, setItem: (k: string, v: string) => void mem.set(k, v) };
    expect(tokenFromLocation('#token=abc%2Bd', storage)).toBe('abc+d');
    expect(tokenFromLocation('', storage)).toBe('abc+d');
    expect(tokenFromLocation('', null)).toBeNull();
  });
});
