/**
 * Prompt batches on /v1/completions over real loopback HTTP with the fake engine: choice
 * order and summed usage, streamed choice indices with one usage chunk and one [DONE], a
 * bad prompt refused (naming its index) before anything runs, the batch cap, a client
 * disconnect that ends every prompt, and the batch admitted into one scheduler step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf, sseData as sse } from '../testing/httpBodies.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 128, stepDelayMs: 1 } });
});
afterAll(() => srv.close());

function post(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
}

// Prompts of different lengths: the fake engine's tokens depend on the position, so each gets its own text.
const prompts = ['Hello', 'The quick brown fox', 'x y', 'Once upon a time, in a kingdom by the sea,'];
const greedy = { model: 'tiny', max_tokens: 6, temperature: 0, seed: 0, ignore_eos: true };

describe('/v1/completions prompt batches', () => {
  it('answers choice i for prompt i, with usage summed over the prompts', async () => {
    const singles = await Promise.all(prompts.map(async (prompt) => jsonOf(await post(srv.url, { ...greedy, prompt }))));
    const res = await post(srv.url, { ...greedy, prompt: prompts });
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(body).toMatchObject({ object: 'text_completion', model: 'tiny' });
    expect(body.choices).toEqual(singles.map((s, index) => ({ index, text: s.choices[0].text, logprobs: null, finish_reason: 'length', prompt_logprobs: null })));
    expect(new Set(body.choices.map((c: { text: string }) => c.text)).size).toBeGreaterThan(1);
    const sum = (key: string): number => singles.reduce((n, s) => n + (s.usage[key] as number), 0);
    expect(body.usage).toEqual({ prompt_tokens: sum('prompt_tokens'), completion_tokens: 6 * prompts.length, total_tokens: sum('total_tokens') });
  });

  it('accepts a batch of token-id prompts', async () => {
    const body = await jsonOf(await post(srv.url, { ...greedy, prompt: [[1, 2, 3], [4], [5, 6]], max_tokens: 2 }));
    expect(body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2]);
    expect(body.usage).toEqual({ prompt_tokens: 6, completion_tokens: 6, total_tokens: 12 });
  });

  it('streams chunks with their prompt index, a finish chunk per prompt, then one usage chunk and one [DONE]', async () => {
    // Seed 0: the first token of a one-token prompt is " world" (a stop string); the others run to max_tokens.
    const body = { model: 'tiny', prompt: [[5], [5, 5], [5, 5, 5]], max_tokens: 3, temperature: 0, seed: 0, stop: [' world'], stream: true, stream_options: { include_usage: true } };
    const events = await sse(await post(srv.url, body));
    expect(events.filter((e) => e === '[DONE]')).toHaveLength(1);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    const choiceChunks = chunks.slice(0, -1);
    expect(choiceChunks.every((c) => c.choices.length === 1 && c.usage === null)).toBe(true);
    const finishes = [0, 1, 2].map((i) => choiceChunks.filter((c) => c.choices[0].index === i && c.choices[0].finish_reason !== null).map((c) => c.choices[0].finish_reason));
    expect(finishes).toEqual([['stop'], ['length'], ['length']]);
    const plain = await jsonOf(await post(srv.url, { ...body, stream: false, stream_options: undefined })); // stream_options only with stream
    const texts = [0, 1, 2].map((i) => choiceChunks.filter((c) => c.choices[0].index === i).map((c) => c.choices[0].text).join(''));
    expect(texts).toEqual(plain.choices.map((c: { text: string }) => c.text));
    expect(usage.usage).toEqual(plain.usage);
    expect(usage.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 1 + 3 + 3 });
  });

  it('streams each choice its own usage so far with continuous_usage_stats, the final usage summed', async () => {
    const body = { ...greedy, prompt: [[5], [5, 5, 5]], max_tokens: 3, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } };
    const chunks = (await sse(await post(srv.url, body))).slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks.slice(0, -1)) expect(c.usage.prompt_tokens).toBe(c.choices[0].index === 0 ? 1 : 3);
    expect(chunks.at(-1).usage).toEqual({ prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 });
  });

  it('refuses a bad prompt at index 2 with a 400 naming it, before anything is submitted', async () => {
    const steps = srv.engine.steps;
    const cases: [unknown, RegExp][] = [
      [['a', 'b', '', 'd'], /^prompt\[2\]: the prompt is empty/],
      [[[1], [2], [1e9]], /^prompt\[2\]: token id 1000000000 is outside the vocabulary/],
      [['a', 'b', 'x'.repeat(128 * 192 + 1)], /^prompt\[2\]: This model's maximum context length is 128 tokens.*at least 24577 characters/],
      [['a', 'b', 'x '.repeat(1000)], /^prompt\[2\]: This model's maximum context length is 128 tokens.*your prompt has \d+ tokens/],
    ];
    for (const [prompt, message] of cases) {
      const res = await post(srv.url, { ...greedy, prompt });
      expect(res.status).toBe(400);
      expect((await jsonOf(res)).error.message).toMatch(message);
    }
    await new Promise((r) => setTimeout(r, 20)); // a submitted prompt would have run a step by now
    expect(srv.engine.steps).toBe(steps);
    expect(srv.api.serving.numActiveRequests).toBe(0);
  });

  it('refuses a batch of more prompts than max-num-seqs (64 here)', async () => {
    const res = await post(srv.url, { ...greedy, prompt: new Array(65).fill('x') });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ code: 'batch_too_large', param: 'prompt', message: expect.stringMatching(/a batch of 65 prompts .*\(64, its max-num-seqs.*at most 64 prompts per request/) });
    expect((await post(srv.url, { ...greedy, prompt: new Array(64).fill('x'), max_tokens: 1 })).status).toBe(200);
  });

  it('an empty batch is refused', async () => {
    expect((await post(srv.url, { ...greedy, prompt: [] })).status).toBe(400);
  });

  it('a client disconnect ends every prompt of the batch and frees their KV blocks', async () => {
    const ctrl = new AbortController();
    const res = await post(srv.url, { ...greedy, prompt: ['a', 'b', 'c'], max_tokens: 100, stream: true }, ctrl.signal);
    const reader = res.body!.getReader();
    await reader.read();
    expect(srv.api.serving.numActiveRequests).toBe(3);
    ctrl.abort();
    await expect.poll(() => srv.api.serving.numActiveRequests, { timeout: 15_000, interval: 10 }).toBe(0);
    await expect.poll(() => srv.api.serving.scheduler.blocks.numUsedBlocks, { timeout: 15_000, interval: 10 }).toBe(0);
  });

  it('an engine failure ends the batch with one error event and one [DONE], or (no token yet) a retryable 503', async () => {
    srv.engine.failNext = new Error('peer ffn 0 closed the connection');
    const events = await sse(await post(srv.url, { ...greedy, prompt: ['a', 'b', 'c'], stream: true }));
    expect(events.filter((e) => e.includes('engine step failed'))).toHaveLength(1);
    expect(events.filter((e) => e === '[DONE]')).toHaveLength(1);
    srv.engine.failNext = new Error('peer ffn 0 closed the connection');
    const res = await post(srv.url, { ...greedy, prompt: ['a', 'b', 'c'] });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect((await jsonOf(res)).error).toMatchObject({ code: 'step_failed', message: expect.stringMatching(/engine step failed: .*nothing was generated: retry it/) });
    expect(srv.api.serving.numActiveRequests).toBe(0);
  });
});

describe('a prompt batch in the scheduler', () => {
  it('is admitted into one step and decodes as one batch', async () => {
    const s = await startTestServer({ engine: { stepDelayMs: 1 } });
    try {
      const body = await jsonOf(await post(s.url, { ...greedy, prompt: prompts, max_tokens: 4 }));
      expect(body.choices).toHaveLength(4);
      // 1 step prefills all four prompts and samples their first tokens, 3 more decode them together.
      expect(s.engine.steps).toBe(4);
      expect(s.engine.plans.map((p) => p.numSeqs)).toEqual([4, 4, 4, 4]);
      expect(s.engine.plans[0]!.tokenOffsets[4]).toBe(body.usage.prompt_tokens);
    } finally {
      await s.close();
    }
  });
});
