/** The front router over two real API servers (fake engines) on loopback. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { FrontRouter } from './FrontRouter.js';
import { addLabel, mergeExpositions } from './promText.js';

let a: TestServer;
let b: TestServer;
let router: FrontRouter;
let url: string;
beforeAll(async () => {
  a = await startTestServer({ engine: { stepDelayMs: 2 } });
  b = await startTestServer({ engine: { stepDelayMs: 2 } });
  router = new FrontRouter({ backends: [a.url, b.url], healthIntervalMs: 50 });
  url = await router.listen(0, '127.0.0.1');
});
afterAll(async () => {
  await router.close();
  await a.close();
  await b.close();
});

describe('FrontRouter', () => {
  it('spreads concurrent streaming requests over both ranks (least outstanding tokens)', async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
    const runs = Array.from({ length: 8 }, async () => {
      const stream = await client.completions.create({ model: 'tiny', prompt: 'hello', max_tokens: 20, stream: true });
      let n = 0;
      for await (const c of stream) if (c.choices[0]?.text) n++;
      return n;
    });
    const counts = await Promise.all(runs);
    expect(counts.every((n) => n > 0)).toBe(true);
    expect(a.engine.steps).toBeGreaterThan(0);
    expect(b.engine.steps).toBeGreaterThan(0);
    expect(router.load().every((l) => l.outstandingTokens === 0 && l.inFlight === 0)).toBe(true);
  });

  it('sends a request to the rank with fewer outstanding tokens', async () => {
    const ctrl = new AbortController();
    const long = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x', max_tokens: 2000, stream: true }), signal: ctrl.signal });
    const reader = long.body!.getReader();
    await reader.read();
    const busy = router.load().findIndex((l) => l.inFlight === 1);
    expect(busy).toBeGreaterThanOrEqual(0);
    expect(router.load()[busy]!.outstandingTokens).toBeGreaterThan(2000);
    const idle = [a, b][1 - busy]!;
    const before = idle.engine.steps;
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'y', max_tokens: 3 }) });
    expect(res.status).toBe(200);
    expect(idle.engine.steps).toBeGreaterThan(before);
    ctrl.abort();
    await expect.poll(() => router.load().every((l) => l.inFlight === 0 && l.outstandingTokens === 0), { timeout: 15_000, interval: 10 }).toBe(true);
    // The disconnect travelled upstream: the busy rank freed the request's KV blocks.
    const rank = [a, b][busy]!;
    await expect.poll(() => rank.api.serving.scheduler.blocks.numUsedBlocks, { timeout: 15_000, interval: 10 }).toBe(0);
  });

  it('serves /v1/models, /health and merged /metrics', async () => {
    const models = JSON.parse(await (await fetch(`${url}/v1/models`)).text());
    expect(models.data[0].id).toBe('tiny');
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(JSON.parse(await health.text()).status).toBe('ok');
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toMatch(/vllm:num_requests_running\{model_name="tiny",backend="0"\} 0/);
    expect(text).toMatch(/vllm:num_requests_running\{model_name="tiny",backend="1"\} 0/);
    expect(text.match(/# TYPE vllm:num_requests_running gauge/g)).toHaveLength(1);
    expect(text).toContain('afd:router_requests_total{backend="0"}');
  });

  it('routes around a rank that stops being healthy and says 503 when none is', async () => {
    const r = new FrontRouter({ backends: [a.url, 'http://127.0.0.1:1'], healthIntervalMs: 50 });
    const u = await r.listen(0, '127.0.0.1');
    try {
      expect(JSON.parse(await (await fetch(`${u}/health`)).text()).status).toBe('degraded');
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${u}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x', max_tokens: 2 }) });
        expect(res.status).toBe(200);
      }
    } finally {
      await r.close();
    }
    const dead = new FrontRouter({ backends: ['http://127.0.0.1:1'] });
    const du = await dead.listen(0, '127.0.0.1');
    try {
      expect((await fetch(`${du}/health`)).status).toBe(503);
      const res = await fetch(`${du}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x' }) });
      expect(res.status).toBe(503);
      expect(JSON.parse(await res.text()).error.message).toMatch(/no attention rank is ready/);
    } finally {
      await dead.close();
    }
  });
});

describe('promText', () => {
  it('adds a label to samples with and without labels', () => {
    expect(addLabel('x_total 3', 'backend', '0')).toBe('x_total{backend="0"} 3');
    expect(addLabel('x{a="b"} 3', 'backend', '1')).toBe('x{a="b",backend="1"} 3');
  });
  it('keeps one HELP/TYPE per family', () => {
    const t = '# HELP m help\n# TYPE m gauge\nm 1\n';
    expect(mergeExpositions([{ label: 'r', value: '0', text: t }, { label: 'r', value: '1', text: t }])).toBe('# HELP m help\n# TYPE m gauge\nm{r="0"} 1\nm{r="1"} 1\n');
  });
});
