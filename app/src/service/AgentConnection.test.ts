import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import type { AgentEvent } from '@afd/shared';
import { AgentConnection, describeConnectError, tokenRefusal } from './AgentConnection.js';
import type { ConnectionState } from './AgentConnection.js';

/** A scripted stand-in for afd-agent serve: checks the bearer token, says hello, answers requests. */
async function fakeAgent(onRequest: (ws: ServerSocket, msg: { id: string; method: string }) => void): Promise<{ url: string; server: Server }> {
  const server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (req.headers.authorization !== 'Bearer good-token') {
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nwrong agent token\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.send(JSON.stringify({ type: 'hello', protocolVersion: 1, agentVersion: '0.1.0', hostname: 'fakehost' }));
      ws.on('message', (d) => onRequest(ws, JSON.parse(d.toString()) as { id: string; method: string }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const open: AgentConnection[] = [];
const servers: Server[] = [];
afterEach(() => {
  open.splice(0).forEach((c) => c.close());
  servers.splice(0).forEach((s) => s.closeAllConnections?.() ?? s.close());
});

function connection(url: string, token: string, events: AgentEvent[] = []): AgentConnection {
  const c = new AgentConnection({ url, token, onEvent: (e) => events.push(e), onStatus: () => undefined, pingIntervalMs: 60_000, reconnectMinMs: 50 });
  open.push(c);
  return c;
}

describe('AgentConnection', () => {
  it('reports a wrong token with what to do, and does not retry', async () => {
    const { url, server } = await fakeAgent(() => undefined);
    servers.push(server);
    const c = connection(url, 'bad-token');
    await expect(c.connect()).rejects.toThrow(/rejected the token: wrong agent token$/);
    expect(c.state).toBe('unauthorized');
  });

  it('says what to do about a refused token once', () => {
    const real = 'wrong agent token: use the token from the agent token file ($AFD_HOME/agent-token by default)';
    expect(tokenRefusal('ws://h:1', real)).toBe('agent at ws://h:1 rejected the token: use the token from the agent token file ($AFD_HOME/agent-token by default)');
    expect(tokenRefusal('ws://h:1', '')).toBe("agent at ws://h:1 rejected the token: copy the token from the agent host's token file ($AFD_HOME/agent-token by default)");
  });

  it('forgets the ping time of a connection it lost', async () => {
    const sockets: ServerSocket[] = [];
    const { url, server } = await fakeAgent((ws, msg) => {
      sockets.push(ws);
      if (msg.method === 'ping') ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { timeMs: 5 } }));
    });
    servers.push(server);
    const c = connection(url, 'good-token');
    await c.connect();
    await vi.waitFor(() => expect(c.latencyMs).not.toBeNull(), { timeout: 5000 });
    sockets[0]!.terminate();
    await vi.waitFor(() => expect(c.state).not.toBe('connected'), { timeout: 5000 });
    expect(c.latencyMs).toBeNull();
  });

  it('validates results against the protocol', async () => {
    const { url, server } = await fakeAgent((ws, msg) => {
      if (msg.method === 'ping') ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { timeMs: 5 } }));
      else if (msg.method === 'inventory.get') ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { hostname: 1 } }));
      else ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: false, error: { code: 'busy', message: 'a launch is running; stop it first' } }));
    });
    servers.push(server);
    const events: AgentEvent[] = [];
    const c = connection(url, 'good-token', events);
    await c.connect();
    expect(c.state).toBe('connected');
    expect(c.hostname).toBe('fakehost');
    expect(events[0]?.type).toBe('hello');
    await expect(c.request('ping', {})).resolves.toEqual({ timeMs: 5 });
    await expect(c.request('inventory.get', {})).rejects.toThrow(/answered inventory.get with malformed inventory.get result/);
    await expect(c.request('topology.stop', {})).rejects.toThrow('a launch is running; stop it first');
  });

  it('turns garbage frames into error events instead of crashing', async () => {
    const { url, server } = await fakeAgent((ws) => ws.send('{"type":"rank.ready"}'));
    servers.push(server);
    const events: AgentEvent[] = [];
    const c = connection(url, 'good-token', events);
    await c.connect();
    void c.request('ping', {}, 200).catch(() => undefined);
    await vi.waitFor(() => expect(events.find((e) => e.type === 'error')).toMatchObject({ message: expect.stringMatching(/sent an invalid message/) }), { timeout: 5000 });
  });

  it('explains unreachable agents', async () => {
    const c = connection('ws://127.0.0.1:1', 'x');
    await expect(c.connect()).rejects.toThrow(/refused the connection: is `afd-agent serve` running there/);
    expect(describeConnectError('ws://h:1', Object.assign(new Error('x'), { code: 'ENOTFOUND' }))).toMatch(/cannot be resolved/);
  });

  it('refuses requests while not connected', async () => {
    const c = connection('ws://127.0.0.1:1', 'x');
    await expect(c.request('ping', {})).rejects.toThrow(/is not connected/);
  });

  it('marks an agent that stops answering pings unreachable, and connected again when it answers', async () => {
    let answering = true;
    const { url, server } = await fakeAgent((ws, msg) => {
      if (msg.method === 'ping' && answering) ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { timeMs: 1 } }));
    });
    servers.push(server);
    const states: ConnectionState[] = [];
    const c = new AgentConnection({ url, token: 'good-token', onEvent: () => undefined, onStatus: () => states.push(c.state), pingIntervalMs: 50, pingTimeoutMs: 200, unreachableResetMs: 60_000 });
    open.push(c);
    await c.connect();
    answering = false; // as a partition looks: the socket stays open, nothing comes back
    await vi.waitFor(() => expect(c.state).toBe('unreachable'), { timeout: 5000 });
    expect(c.message).toMatch(/has not answered for 0\.2 s: the network is cut or the host is down; its ranks keep running there/);
    expect(c.latencyMs).toBeNull();
    await expect(c.request('inventory.get', {})).rejects.toThrow(/is not connected \(unreachable/);
    answering = true;
    await vi.waitFor(() => expect(c.state).toBe('connected'), { timeout: 5000 });
    expect(c.message).toBeNull();
    expect(states).toContain('unreachable');
  });

  it('drops a connection unreachable for too long and reconnects', async () => {
    let answering = true;
    let connections = 0;
    const { url, server } = await fakeAgent((ws, msg) => {
      if (msg.method === 'ping' && answering) ws.send(JSON.stringify({ type: 'response', id: msg.id, ok: true, result: { timeMs: 1 } }));
    });
    server.on('upgrade', () => connections++);
    servers.push(server);
    const c = new AgentConnection({ url, token: 'good-token', onEvent: () => undefined, onStatus: () => undefined, pingIntervalMs: 50, pingTimeoutMs: 100, unreachableResetMs: 300, reconnectMinMs: 50 });
    open.push(c);
    await c.connect();
    answering = false;
    await vi.waitFor(() => expect(connections).toBeGreaterThanOrEqual(2), { timeout: 5000 });
    answering = true;
    await vi.waitFor(() => expect(c.state).toBe('connected'), { timeout: 5000 });
  });
});
