/**
 * The daemon as a real process on loopback: auth in the upgrade, Origin, bind policy,
 * TLS, malformed / oversized / binary frames, heartbeats, inventory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { agentMessageSchema, inventorySchema, modelInspectResultSchema, type AgentEvent, type AgentMessage } from '@afd/shared';
import { AgentCallError, AgentClient } from './AgentClient.js';
import { runAgentExpectingFailure, startAgent, type StartedAgent } from '../testing/AgentProcess.js';

let agent: StartedAgent;
const clients: AgentClient[] = [];

beforeAll(async () => {
  agent = await startAgent(['--max-message-bytes', '4096', '--heartbeat-ms', '300', '--allow-origin', 'http://127.0.0.1:5173']);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  expect(await agent?.stop()).toBe(0);
});

async function connect(headers: Record<string, string> = {}): Promise<AgentClient> {
  const c = await AgentClient.connect(agent.url, agent.token, { headers });
  clients.push(c);
  return c;
}

/** Opens a raw socket and collects parsed frames. */
function rawSocket(url: string, options: WebSocket.ClientOptions): Promise<{ ws: WebSocket; frames: AgentMessage[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    const frames: AgentMessage[] = [];
    ws.on('message', (d) => frames.push(agentMessageSchema.parse(JSON.parse(d.toString()))));
    ws.once('open', () => resolve({ ws, frames }));
    ws.once('error', reject);
  });
}

describe('afd-agent serve', () => {
  it('creates the token file with mode 0600 and never prints the token', async () => {
    // The log line goes to stderr; the listening line on stdout may arrive first.
    const t0 = Date.now();
    while (!agent.stderr.join('\n').includes('agent listening') && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 20));
    expect(statSync(agent.tokenFile).mode & 0o777).toBe(0o600);
    expect(agent.token.length).toBeGreaterThanOrEqual(40);
    expect(agent.stderr.join('\n')).not.toContain(agent.token);
    expect(agent.stderr.join('\n')).toContain(agent.token.slice(0, 4));
  });

  it('refuses a connection without a token and with a wrong token (401)', async () => {
    await expect(AgentClient.connect(agent.url, '')).rejects.toThrow(/HTTP 401.*missing agent token/);
    await expect(AgentClient.connect(agent.url, 'x'.repeat(43))).rejects.toThrow(/HTTP 401.*wrong agent token/);
  });

  it('refuses a browser Origin that is not configured (403) and accepts a configured one', async () => {
    await expect(AgentClient.connect(agent.url, agent.token, { headers: { origin: 'https://evil.example' } })).rejects.toThrow(/HTTP 403.*--allow-origin/);
    const c = await connect({ origin: 'http://127.0.0.1:5173' });
    expect((await c.request('ping', {})).timeMs).toBeGreaterThan(0);
  });

  it('accepts the token as a query parameter', async () => {
    const { ws, frames } = await rawSocket(`${agent.url}/?token=${agent.token}`, {});
    // Poll for the hello (a fixed sleep races a loaded CI box).
    const t0 = Date.now();
    while (frames.length === 0 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 20));
    expect(frames[0]?.type).toBe('hello');
    ws.close();
  });

  it('says hello, answers ping and reports an inventory with the CPU device', async () => {
    const c = await connect();
    const inv = await c.request('inventory.get', {});
    expect(inventorySchema.parse(inv).devices[0]).toMatchObject({ kind: 'cpu', index: 0 });
    expect(inv.backends).toContain('cpu');
  });

  it('inspects a model directory on its host', async () => {
    const c = await connect();
    const r = await c.request('model.inspect', { dir: '/afd-e2e/no-such-model' });
    expect(modelInspectResultSchema.parse(r)).toMatchObject({ status: 'refused', reason: '/afd-e2e/no-such-model does not exist on this host', roles: [] });
  });

  it('answers malformed, unknown, invalid, binary and oversized frames with errors and stays up', async () => {
    const { ws, frames } = await rawSocket(agent.url, { headers: { authorization: `Bearer ${agent.token}` } });
    const errors = (): Extract<AgentEvent, { type: 'error' }>[] => frames.filter((f): f is Extract<AgentEvent, { type: 'error' }> => f.type === 'error');
    ws.send('this is not json');
    ws.send(JSON.stringify({ id: 'u1', method: 'format.disk', params: {} }));
    ws.send(JSON.stringify({ id: 'b1', method: 'logs.get', params: { role: 'attention', rank: -1 } }));
    ws.send(Buffer.from([1, 2, 3]), { binary: true });
    ws.send(JSON.stringify({ id: 'big', method: 'ping', params: {}, pad: 'x'.repeat(10_000) }));
    const t0 = Date.now();
    while (errors().length < 5 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 20));
    const msgs = errors().map((e) => e.message);
    expect(msgs[0]).toMatch(/not valid JSON/);
    expect(errors()[1]?.requestId).toBe('u1');
    expect(msgs[1]).toMatch(/malformed agent request/);
    expect(errors()[2]?.requestId).toBe('b1');
    expect(msgs[2]).toMatch(/rank/);
    expect(msgs[3]).toMatch(/binary frames are not supported/);
    expect(msgs[4]).toMatch(/over the 4096-byte limit/);
    // Still connected and serving.
    ws.send(JSON.stringify({ id: 'p', method: 'ping', params: {} }));
    const t1 = Date.now();
    while (!frames.some((f) => f.type === 'response' && f.id === 'p') && Date.now() - t1 < 15_000) await new Promise((r) => setTimeout(r, 20));
    expect(frames.find((f) => f.type === 'response' && f.id === 'p')).toMatchObject({ ok: true });
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it('answers requests it cannot serve with an error response, not a crash', async () => {
    const c = await connect();
    await expect(c.request('logs.get', { role: 'ffn', rank: 3 })).rejects.toMatchObject({ code: 'not-found' });
    await expect(c.request('topology.restart', {})).rejects.toBeInstanceOf(AgentCallError);
    await expect(c.request('topology.setRestartPolicy', { launchId: 'L9', policy: 'never' })).rejects.toMatchObject({ code: 'not-found', message: 'no launch L9 on this agent: nothing was launched here yet' });
    const res = await c.request('topology.stop', {});
    expect(res.stopped).toBe(false);
  });

  it('drops a client that does not answer heartbeats', async () => {
    const { ws } = await rawSocket(agent.url, { headers: { authorization: `Bearer ${agent.token}` }, autoPong: false });
    const closed = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 15_000); // heartbeat 300 ms; slack for a loaded CI box
      ws.once('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    expect(closed).toBe(true);
  });

  it('answers GET /health without a token (for probes) and nothing else', async () => {
    const base = agent.url.replace(/^ws/, 'http');
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${base}/anything`)).status).toBe(426);
  });
});

describe('bind policy and TLS', () => {
  it('refuses a non-loopback address without TLS and exits non-zero', async () => {
    const r = await runAgentExpectingFailure(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/refusing to listen on non-loopback address 0\.0\.0\.0 without TLS/);
  });

  it('refuses --tls-cert without --tls-key', async () => {
    const r = await runAgentExpectingFailure(['serve', '--port', '0', '--tls-cert', '/nonexistent.pem']);
    expect(r.stderr).toMatch(/--tls-cert and --tls-key go together/);
  });

  it('serves wss:// with a certificate and still requires the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-tls-'));
    try {
      const cert = join(dir, 'cert.pem');
      const key = join(dir, 'key.pem');
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      const tlsAgent = await startAgent(['--tls-cert', cert, '--tls-key', key]);
      try {
        expect(tlsAgent.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
        const ca = readFileSync(cert);
        await expect(AgentClient.connect(tlsAgent.url, 'wrong-token-wrong-token', { ca })).rejects.toThrow(/401/);
        const c = await AgentClient.connect(tlsAgent.url, tlsAgent.token, { ca });
        expect((await c.request('ping', {})).timeMs).toBeGreaterThan(0);
        await c.close();
      } finally {
        expect(await tlsAgent.stop()).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
