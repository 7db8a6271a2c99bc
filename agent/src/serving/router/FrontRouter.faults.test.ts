/**
 * The front router when its ranks misbehave, over loopback HTTP: real API servers (fake
 * engines) and hand-written misbehaving ranks (refusing, hanging, breaking off a stream).
 * The same behaviours run against real role processes in router.int.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { estimateTokens, FrontRouter } from './FrontRouter.js';
import { PrefixAffinity, prefixKey } from './prefixAffinity.js';

/** A hand-written rank: /health answers 200 unless `healthy` says otherwise; `v1` handles everything else. */
async function fakeRank(v1: (req: IncomingMessage, res: ServerResponse) => void, healthy: () => boolean = () => true): Promise<{ url: string; server: Server; hits: number }> {
  const state = { url: '', server: undefined as unknown as Server, hits: 0 };
  state.server = createServer((req, res) => {
    if (req.url === '/health') {
      if (healthy()) res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return; // unhealthy = hung: no answer at all
    }
    state.hits++;
    req.resume();
    req.on('end', () => v1(req, res));
  });
  await new Promise<void>((r) => state.server.listen(0, '127.0.0.1', r));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  return state;
}

const refuse = (status: number, retryAfter?: string) => (_: IncomingMessage, res: ServerResponse): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...(retryAfter ? { 'retry-after': retryAfter } : {}) });
  res.end(JSON.stringify({ error: { message: status === 429 ? 'too many queued requests' : 'the engine is not ready (lost FFN rank 1)', type: 'x', param: null, code: null } }));
};

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** SSE data payloads of a response body. */
function events(text: string): string[] {
  return text.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => b.slice(6));
}

let good: TestServer;
const routers: FrontRouter[] = [];
const servers: Server[] = [];
async function router(backends: string[], o: Partial<ConstructorParameters<typeof FrontRouter>[0]> = {}): Promise<{ r: FrontRouter; url: string }> {
  const r = new FrontRouter({ backends, healthIntervalMs: 50, ...o });
  routers.push(r);
  return { r, url: await r.listen(0, '127.0.0.1') };
}

beforeAll(async () => {
  good = await startTestServer({ engine: { stepDelayMs: 2 } });
});
afterAll(async () => {
  for (const r of routers) await r.close();
  for (const s of servers) s.close();
  await good.close();
});

describe('FrontRouter with failing ranks', () => {
  it('forwards the body as sent: deeply nested JSON reaches the rank, which answers 400 (not a router 500)', async () => {
    const { url } = await router([good.url]);
    const nested = `{"model":"tiny","prompt":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const res = await post(url, nested);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/prompt/);
    // The balancing estimate reads max_tokens without parsing.
    expect(estimateTokens(Buffer.from(JSON.stringify({ prompt: 'x'.repeat(400), max_tokens: 7 })))).toBe(Math.ceil(428 / 4) + 7);
  });

  it('retries a 429 or a 503 once on another healthy rank, and passes the last refusal on with Retry-After', async () => {
    const busy = await fakeRank(refuse(429));
    const down = await fakeRank(refuse(503));
    servers.push(busy.server, down.server);
    for (const bad of [busy, down]) {
      const { url } = await router([bad.url, good.url], { prefixAffinity: false });
      // Both healthy and idle: the first pick is the refusing rank (index 0).
      const res = await post(url, { model: 'tiny', prompt: 'hi', max_tokens: 2 });
      expect(res.status).toBe(200);
      expect(bad.hits).toBe(1);
    }
    const { r, url } = await router([busy.url]);
    const res = await post(url, { model: 'tiny', prompt: 'hi', max_tokens: 2 });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/too many queued/);
    expect(r.load()[0]!.healthy).toBe(true); // busy is not down
    const { r: r2, url: url2 } = await router([down.url]);
    expect((await post(url2, { model: 'tiny', prompt: 'hi' })).status).toBe(503);
    expect(r2.load()[0]!.healthy).toBe(false); // a 503 marks it down until its /health says otherwise
  });

  it('a block that has just failed (503 step_failed, /health 503): every new request is served by the healthy rank; it rejoins when its /health says ok', async () => {
    const block = { failed: true };
    const reason = 'the engine is not ready (lost FFN rank 1 at 127.0.0.1:29501: timed out; reconnecting); retry later';
    const failedRank = createServer((req, res) => {
      if (req.url === '/health') {
        res.writeHead(block.failed ? 503 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(block.failed ? { status: 'unavailable', reason } : { status: 'ok' }));
        return;
      }
      req.resume();
      req.on('end', () => {
        if (!block.failed) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ error: { message: `engine step failed: timed out waiting for FFN rank 1; ...retry it`, type: 'service_unavailable', param: null, code: 'step_failed' } }));
      });
    });
    servers.push(failedRank);
    await new Promise<void>((r) => failedRank.listen(0, '127.0.0.1', r));
    const failedUrl = `http://127.0.0.1:${(failedRank.address() as AddressInfo).port}`;
    // Its last /health poll said ok (the step failed since): the router still counts it healthy.
    block.failed = false;
    const { r, url } = await router([failedUrl, good.url], { prefixAffinity: false, healthIntervalMs: 60_000 });
    block.failed = true;
    expect(r.load()[0]!.healthy).toBe(true);
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(url, { model: 'tiny', prompt: 'hi', max_tokens: 2 })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const [failedLoad, goodLoad] = r.load();
    expect(failedLoad!.requestsTotal).toBeGreaterThanOrEqual(1); // the first pick: both idle, index 0
    expect(goodLoad!.requestsTotal).toBe(6); // all served there, the refused ones retried
    expect(failedLoad!.healthy).toBe(false);
    const health = (await (await fetch(`${url}/health`)).json()) as { status: string; backends: { reason: string | null }[] };
    expect(health.status).toBe('degraded');
    expect(health.backends[0]!.reason).toMatch(/engine step failed/);
    // Its /health answers 503 while the block is down, so polls keep it out; ok brings it back.
    const { r: polled } = await router([failedUrl, good.url], { prefixAffinity: false, healthIntervalMs: 50 });
    await expect.poll(() => polled.load()[0]!.healthy, { timeout: 5000, interval: 20 }).toBe(false);
    block.failed = false;
    await expect.poll(() => polled.load()[0]!.healthy, { timeout: 5000, interval: 20 }).toBe(true);
  });

  it('refused by every rank: the last refusal reaches the client with Retry-After (the router\'s when the rank gave none), each 503 rank marked down', async () => {
    const bare = (): ((req: IncomingMessage, res: ServerResponse) => void) => (_, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"not ready","type":"x","param":null,"code":"not_ready"}}');
    const [a, b] = await Promise.all([fakeRank(bare()), fakeRank(bare())]);
    servers.push(a.server, b.server);
    const { r, url } = await router([a.url, b.url], { prefixAffinity: false, healthIntervalMs: 60_000 });
    const res = await post(url, { model: 'tiny', prompt: 'hi' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect([a.hits, b.hits]).toEqual([1, 1]);
    expect(r.load().map((l) => l.healthy)).toEqual([false, false]);
    const none = await post(url, { model: 'tiny', prompt: 'hi' });
    expect(none.status).toBe(503);
    expect(none.headers.get('retry-after')).toBe('1');
    expect(((await none.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'not_ready', message: expect.stringMatching(/no attention rank is ready/) });
  });

  it('prefix affinity: a refusing preferred rank is retried on the other, which then keeps the key', async () => {
    const busy = await fakeRank(refuse(429));
    servers.push(busy.server);
    const { r, url } = await router([busy.url, good.url]);
    // A prompt whose rendezvous rank is the refusing one (index 0).
    const ranks = [0, 1].map((index) => ({ index, healthy: true, outstandingTokens: 0 }));
    const body = Array.from({ length: 64 }, (_, i) => ({ model: 'tiny', prompt: `prompt ${i}`, max_tokens: 2 })).find((b) => new PrefixAffinity().rendezvous(prefixKey('/v1/completions', Buffer.from(JSON.stringify(b)))!, ranks)!.index === 0)!;
    expect((await post(url, body)).status).toBe(200);
    expect(busy.hits).toBe(1);
    expect((await post(url, body)).status).toBe(200);
    expect(busy.hits).toBe(1); // straight to the rank that served it
    expect(r.load().map((l) => l.requestsTotal)).toEqual([1, 2]);
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('afd:router_prefix_affinity_total{outcome="hit"} 1');
  });

  it('ends a stream the rank breaks off with a well-formed error event and [DONE]', async () => {
    const breaker = await fakeRank((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"text":"a"}]}\n\n');
      res.write('data: {"choices":[{"te'); // half an event, then the rank dies
      setTimeout(() => res.socket?.destroy(), 20);
    });
    servers.push(breaker.server);
    const { url } = await router([breaker.url]);
    const ev = events(await (await post(url, { model: 'tiny', prompt: 'hi', stream: true })).text());
    expect(ev[0]).toBe('{"choices":[{"text":"a"}]}');
    expect(JSON.parse(ev[1]!).error.message).toMatch(/broke off the response/);
    expect(ev.slice(2)).toEqual(['[DONE]']);
  });

  it('cuts a stream whose rank went silent and stopped answering /health, after the upstream timeout', async () => {
    let hung = false;
    const silent = await fakeRank((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"text":"a"}]}\n\n');
      hung = true; // from now on: no byte, no /health answer
    }, () => !hung);
    servers.push(silent.server);
    const { url } = await router([silent.url], { upstreamTimeoutMs: 400 });
    const t0 = performance.now();
    const ev = events(await (await post(url, { model: 'tiny', prompt: 'hi', stream: true })).text());
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(JSON.parse(ev[1]!).error).toMatchObject({ code: 'upstream_timeout', message: expect.stringMatching(/sent nothing for 0\.4 s and does not answer \/health/) });
    expect(ev.at(-1)).toBe('[DONE]');
  });

  it('a slow rank that still answers /health is never cut', async () => {
    const slow = await fakeRank((_, res) => {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 900);
    });
    servers.push(slow.server);
    const { url } = await router([slow.url], { upstreamTimeoutMs: 300 });
    const res = await post(url, { model: 'tiny', prompt: 'hi' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('a client that leaves before the rank answers cancels the rank request without marking the rank down', async () => {
    let cancelled = false;
    const slowHeaders = await fakeRank((req, res) => {
      res.on('close', () => (cancelled = !res.writableFinished));
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 2000);
    });
    servers.push(slowHeaders.server);
    const { r, url } = await router([slowHeaders.url], { healthIntervalMs: 60_000 });
    const ctrl = new AbortController();
    const pending = fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"tiny","prompt":"x"}', signal: ctrl.signal }).catch((e: Error) => e);
    await expect.poll(() => slowHeaders.hits, { timeout: 10_000, interval: 5 }).toBe(1);
    ctrl.abort();
    await pending;
    await expect.poll(() => cancelled, { timeout: 10_000, interval: 10 }).toBe(true);
    await expect.poll(() => r.inFlight, { timeout: 10_000, interval: 10 }).toBe(0);
    expect(r.load()[0]!.healthy).toBe(true);
  });

  it('drain: refuses new requests, lets short ones finish, ends the rest with an error event and [DONE]', async () => {
    const { r, url } = await router([good.url]);
    const long = await post(url, { model: 'tiny', prompt: 'x', max_tokens: 4000, stream: true, ignore_eos: true });
    const longText = long.text();
    await expect.poll(() => r.inFlight, { timeout: 10_000, interval: 5 }).toBe(1);
    const t0 = performance.now();
    const drained = r.drain(600);
    const short = post(url, { model: 'tiny', prompt: 'y', max_tokens: 2 }); // after drain began: refused
    const refused = await short;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('draining');
    expect((await fetch(`${url}/health`)).status).toBe(503);
    const ev = events(await longText);
    await drained;
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(550);
    expect(took).toBeLessThan(3000);
    expect(JSON.parse(ev.at(-2)!).error.code).toBe('shutting_down');
    expect(ev.at(-1)).toBe('[DONE]');
    // The cut travelled upstream: the rank freed the request's KV blocks.
    await expect.poll(() => good.api.serving.scheduler.blocks.numUsedBlocks, { timeout: 15_000, interval: 10 }).toBe(0);
  });

  it('drain with nothing in flight returns at once; a request in flight that finishes in time is not cut', async () => {
    const { r, url } = await router([good.url]);
    const res = post(url, { model: 'tiny', prompt: 'x', max_tokens: 30, stream: true });
    await expect.poll(() => r.inFlight, { timeout: 10_000, interval: 5 }).toBe(1);
    const drained = r.drain(10_000);
    const ev = events(await (await res).text());
    expect(ev.at(-1)).toBe('[DONE]');
    expect(ev.some((e) => e.includes('"error"'))).toBe(false);
    const t0 = performance.now();
    await drained;
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('guards /v1 with the API key (health and metrics stay open), appends the launch\'s metrics, follows a restarted rank', async () => {
    const { r, url } = await router(['http://127.0.0.1:1'], { apiKey: 'sekret', metricsExtra: () => 'afd:rank_restarts_total{role="ffn",rank="0"} 2\n' });
    expect((await post(url, { model: 'tiny', prompt: 'hi', max_tokens: 2 })).status).toBe(401);
    expect((await fetch(`${url}/health`)).status).toBe(503);
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('afd:rank_restarts_total{role="ffn",rank="0"} 2');
    r.setBackendUrl(0, good.url);
    await expect.poll(async () => (await fetch(`${url}/health`)).status, { timeout: 10_000, interval: 20 }).toBe(200);
    expect((await post(url, { model: 'tiny', prompt: 'hi', max_tokens: 2 }, { authorization: 'Bearer sekret' })).status).toBe(200);
  });
});
