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
/** The same ranks behind a router that balances by load alone. */
let balanced: FrontRouter;
let balancedUrl: string;
beforeAll(async () => {
  a = await startTestServer({ engine: { stepDelayMs: 2 }, serving: { prefixCaching: true } });
  b = await startTestServer({ engine: { stepDelayMs: 2 }, serving: { prefixCaching: true } });
  router = new FrontRouter({ backends: [a.url, b.url], healthIntervalMs: 50 });
  url = await router.listen(0, '127.0.0.1');
  balanced = new FrontRouter({ backends: [a.url, b.url], healthIntervalMs: 50, prefixAffinity: false });
  balancedUrl = await balanced.listen(0, '127.0.0.1');
});
afterAll(async () => {
  await router.close();
  await balanced.close();
  await a.close();
  await b.close();
});

/** Which backend served a request: the one whose count of routed requests grew (requests one at a time). */
async function servedBy(r: FrontRouter, send: () => Promise<Response>): Promise<{ backend: number; body: { usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } } } }> {
  const before = r.load().map((l) => l.requestsTotal);
  const res = await send();
  expect(res.status).toBe(200);
  const body = (await res.json()) as { usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } } };
  const grew = r.load().flatMap((l, i) => (l.requestsTotal > before[i]! ? [i] : []));
  expect(grew).toHaveLength(1);
  return { backend: grew[0]!, body };
}

describe('FrontRouter', () => {
  it('spreads concurrent streaming requests over both ranks (least outstanding tokens, prefix affinity off)', async () => {
    const client = new OpenAI({ baseURL: `${balancedUrl}/v1`, apiKey: 'x', maxRetries: 0 });
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
    expect(balanced.load().every((l) => l.outstandingTokens === 0 && l.inFlight === 0)).toBe(true);
  });

  it('sends a request to the rank with fewer outstanding tokens (prefix affinity off)', async () => {
    const ctrl = new AbortController();
    const long = await fetch(`${balancedUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x', max_tokens: 2000, stream: true }), signal: ctrl.signal });
    const reader = long.body!.getReader();
    await reader.read();
    const busy = balanced.load().findIndex((l) => l.inFlight === 1);
    expect(busy).toBeGreaterThanOrEqual(0);
    expect(balanced.load()[busy]!.outstandingTokens).toBeGreaterThan(2000);
    const idle = [a, b][1 - busy]!;
    const before = idle.engine.steps;
    const res = await fetch(`${balancedUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'y', max_tokens: 3 }) });
    expect(res.status).toBe(200);
    expect(idle.engine.steps).toBeGreaterThan(before);
    ctrl.abort();
    await expect.poll(() => balanced.load().every((l) => l.inFlight === 0 && l.outstandingTokens === 0), { timeout: 15_000, interval: 10 }).toBe(true);
    // The disconnect travelled upstream: the busy rank freed the request's KV blocks.
    const rank = [a, b][busy]!;
    await expect.poll(() => rank.api.serving.scheduler.blocks.numUsedBlocks, { timeout: 15_000, interval: 10 }).toBe(0);
  });

  it('prefix affinity: requests sharing a long system prompt go to one rank (which reuses its KV) whatever their last user message; distinct prompts spread over both ranks', async () => {
    const chat = (system: string, question: string) => () =>
      fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', messages: [{ role: 'system', content: system }, { role: 'user', content: question }], max_tokens: 2 }) });
    const ranksOfSystems = new Set<number>();
    for (let s = 0; s < 8; s++) {
      const system = `You are assistant number ${s} of the support desk. ${'Answer in one short sentence and cite the manual. '.repeat(100)}`; // ~5 KiB: longer than the 4 KiB key window
      const first = await servedBy(router, chat(system, `What does error E${s} mean?`));
      const second = await servedBy(router, chat(system, 'And how do I reset the device after that, step by step?'));
      expect(second.backend).toBe(first.backend);
      // The second found the system prompt in its rank's prefix cache.
      expect(second.body.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(second.body.usage.prompt_tokens / 2);
      ranksOfSystems.add(first.backend);
    }
    expect([...ranksOfSystems].sort()).toEqual([0, 1]);
    const perRank = [0, 0];
    for (let i = 0; i < 16; i++) perRank[(await servedBy(router, chat('You are terse.', `Question ${i}: what is ${i} squared?`))).backend]!++;
    expect(perRank.every((n) => n >= 3)).toBe(true);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('afd:router_prefix_affinity_total{outcome="hit"} 8');
    expect(metrics).toContain('afd:router_prefix_affinity_total{outcome="rendezvous"} 24');
    expect(metrics).toContain('afd:router_prefix_affinity_total{outcome="overloaded"} 0');
    expect(await (await fetch(`${balancedUrl}/metrics`)).text()).not.toContain('afd:router_prefix_affinity_total');
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
