import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ConsoleService } from '../service/ConsoleService.js';
import { resolveStaticPath } from './staticFiles.js';
import { BRIDGE_SUBPROTOCOL, BRIDGE_TOKEN_PREFIX, WebHost } from './WebHost.js';

const dir = mkdtempSync(join(tmpdir(), 'afd-webhost-'));
writeFileSync(join(dir, 'index.html'), '<!doctype html><title>AFD Console</title>');
const service = new ConsoleService({ log: () => undefined });
const host = new WebHost({ service, rendererDir: dir, token: 'test-token-0123456789' });
let base = '';

beforeAll(async () => {
  const url = await host.listen();
  base = url.slice(0, url.indexOf('/#'));
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=test-token-0123456789$/);
});
afterAll(async () => {
  await host.close();
  await service.dispose();
});

function connect(opts: { token?: string; origin?: string } = {}): Promise<{ ws: WebSocket; status: number | null }> {
  const protocols = [BRIDGE_SUBPROTOCOL, ...(opts.token !== undefined ? [`${BRIDGE_TOKEN_PREFIX}${opts.token}`] : [])];
  const ws = new WebSocket(`${base.replace('http', 'ws')}/bridge`, protocols, opts.origin ? { origin: opts.origin } : {});
  return new Promise((resolve) => {
    ws.once('open', () => resolve({ ws, status: null }));
    ws.once('unexpected-response', (_req, res) => resolve({ ws, status: res.statusCode ?? 0 }));
    ws.once('error', () => undefined);
  });
}

function call(ws: WebSocket, frame: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    ws.once('message', (d) => resolve(JSON.parse(d.toString()) as Record<string, unknown>));
    ws.send(frame);
  });
}

describe('WebHost', () => {
  it('serves the renderer and nothing outside it', async () => {
    expect((await fetch(`${base}/`)).status).toBe(200);
    expect(await (await fetch(`${base}/index.html`)).text()).toContain('AFD Console');
    expect((await fetch(`${base}/../../etc/passwd`)).status).toBe(404);
    expect((await fetch(`${base}/%2e%2e/%2e%2e/etc/passwd`)).status).toBe(404);
    expect(resolveStaticPath('/srv/r', '/../x')).toBeNull();
    expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405);
  });

  it('refuses the bridge without the token, with a wrong one, or from another origin', async () => {
    expect((await connect()).status).toBe(401);
    expect((await connect({ token: 'wrong-token' })).status).toBe(401);
    expect((await connect({ token: 'test-token-0123456789', origin: 'http://evil.example' })).status).toBe(403);
  });

  it('answers valid calls and rejects bad ones with readable errors', async () => {
    const { ws, status } = await connect({ token: 'test-token-0123456789', origin: base });
    expect(status).toBeNull();
    expect(await call(ws, JSON.stringify({ kind: 'invoke', id: '1', channel: 'agents.list', payload: {} }))).toEqual({ kind: 'result', id: '1', ok: true, payload: { agents: [] } });
    expect(await call(ws, JSON.stringify({ kind: 'invoke', id: '2', channel: 'fs.read', payload: {} }))).toMatchObject({ id: '2', ok: false, error: 'unknown bridge channel "fs.read"' });
    expect(await call(ws, JSON.stringify({ kind: 'invoke', id: '3', channel: 'agents.add', payload: { url: 'ftp://x' } }))).toMatchObject({ id: '3', ok: false, error: expect.stringMatching(/malformed agents.add request/) });
    expect(await call(ws, JSON.stringify({ kind: 'result', id: '4', ok: true }))).toMatchObject({ id: '4', ok: false, error: expect.stringMatching(/only send invoke/) });
    expect(await call(ws, JSON.stringify({ kind: 'invoke', id: '5', channel: 'topology.validate', payload: { topology: '3A2F' } }))).toMatchObject({ ok: true, payload: { valid: true } });
    expect(await call(ws, JSON.stringify({ kind: 'invoke', id: '6', channel: 'chat.start', payload: { mode: 'completion', prompt: 'hi' } }))).toMatchObject({ ok: false, error: expect.stringMatching(/cannot chat: no topology is launched/) });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send('{not json');
    expect(await closed).toBe(1008);
  });
});

describe('WebHost port', () => {
  it('takes another port when the usual one is taken (npm start default), and refuses when asked for that port', async () => {
    const taken = Number(new URL(base).port);
    const moved = new WebHost({ service, rendererDir: dir, port: taken, fallbackToAnyPort: true });
    const url = await moved.listen();
    expect(Number(new URL(url).port)).not.toBe(taken);
    expect(moved.movedFromPort).toBe(taken);
    await moved.close();
    const strict = new WebHost({ service, rendererDir: dir, port: taken });
    await expect(strict.listen()).rejects.toThrow(`port ${taken} is in use: pick another with --port, or 0 for any free port`);
  });
});
