/**
 * RemoteAgent against a scripted agent (a local ws server speaking the protocol): notes
 * when pings go unanswered and when they are answered again, reopens a dropped
 * connection, and passes the agent's events on from the new connection too.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '@afd/shared';
import { RemoteAgent } from './RemoteAgent.js';

const servers: Server[] = [];
const agents: RemoteAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A fake agent: hello on connect, pings answered while `answering`; `drop()` closes every socket. */
async function fakeAgent(): Promise<{ url: string; answering: { value: boolean }; sockets: Set<WebSocket>; connections: () => number }> {
  const server = createServer();
  servers.push(server);
  const wss = new WebSocketServer({ server });
  const answering = { value: true };
  const sockets = new Set<WebSocket>();
  let connections = 0;
  wss.on('connection', (ws) => {
    connections++;
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    ws.send(JSON.stringify({ type: 'hello', protocolVersion: 1, agentVersion: '0.1.0', hostname: 'fake' }));
    ws.on('message', (d) => {
      const msg = JSON.parse(d.toString()) as { id: string; method: string };
      if (msg.method === 'ping' && answering.value) ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { timeMs: 1 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, answering, sockets, connections: () => connections };
}

describe('RemoteAgent', () => {
  it('notes an agent that stops answering, and when it answers again', async () => {
    const agent = await fakeAgent();
    const notes: string[] = [];
    const r = await RemoteAgent.connect({ url: agent.url, token: 't', onEvent: () => undefined, onNote: (m) => notes.push(m), pingIntervalMs: 50, pingTimeoutMs: 150 });
    agents.push(r);
    expect(r.agentId).toBe(new URL(agent.url).host);
    agent.answering.value = false;
    await vi.waitFor(() => expect(r.reachable).toBe(false), { timeout: 5000 });
    expect(notes.at(-1)).toMatch(/agent unreachable \(no answer to a ping within 150 ms: the network or the host is down\); its ranks keep running there/);
    agent.answering.value = true;
    await vi.waitFor(() => expect(r.reachable).toBe(true), { timeout: 5000 });
    expect(notes.at(-1)).toMatch(/agent reachable again$/);
  });

  it('reopens a dropped connection and follows the agent events on it', async () => {
    const agent = await fakeAgent();
    const notes: string[] = [];
    const events: AgentEvent[] = [];
    const r = await RemoteAgent.connect({ url: agent.url, token: 't', onEvent: (e) => events.push(e), onNote: (m) => notes.push(m), pingIntervalMs: 50, pingTimeoutMs: 500 });
    agents.push(r);
    await vi.waitFor(() => expect(events.filter((e) => e.type === 'hello')).toHaveLength(1));
    for (const s of agent.sockets) s.terminate();
    await vi.waitFor(() => expect(agent.connections()).toBe(2), { timeout: 10_000 });
    await vi.waitFor(() => expect(events.filter((e) => e.type === 'hello')).toHaveLength(2));
    expect(notes.some((n) => /connection lost/.test(n))).toBe(true);
    await vi.waitFor(() => expect(notes.at(-1)).toMatch(/reachable again \(reconnected\)/));
    await expect(r.request('ping', {})).resolves.toEqual({ timeMs: 1 });
  });

  it('fails the first connect with the described reason', async () => {
    await expect(RemoteAgent.connect({ url: 'ws://127.0.0.1:1', token: 't', onEvent: () => undefined, onNote: () => undefined })).rejects.toThrow(/refused the connection: is `afd-agent serve` running there/);
  });
});
