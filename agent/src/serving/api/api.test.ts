/**
 * The HTTP API over real loopback HTTP with a fake engine: response shapes, SSE, usage,
 * auth, metrics, and every bad input with its status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rankStatsSchema, servingStatsSchema } from '@afd/shared';
import { jsonOf, sseData as sse } from '../testing/httpBodies.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 128, stepDelayMs: 1 } });
});
afterAll(() => srv.close());

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

describe('OpenAI API (fake engine)', () => {
  it('serves /v1/models, /health, /version, /afd/stats', async () => {
    const models = await jsonOf(await fetch(`${srv.url}/v1/models`));
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'tiny', object: 'model', owned_by: 'afd', max_model_len: 128 }] });
    const health = await fetch(`${srv.url}/health`);
    expect(health.status).toBe(200);
    expect(await jsonOf(health)).toEqual({ status: 'ok' });
    expect(await jsonOf(await fetch(`${srv.url}/version`))).toEqual({ version: '0.0.0-test' });
    const stats = await jsonOf(await fetch(`${srv.url}/afd/stats`));
    expect(stats).toMatchObject({ role: 'colocated', kv: { blocksUsed: 0, blocksTotal: 256 } });
    // A valid RankStats, with the serving numbers as an extra key.
    expect(rankStatsSchema.safeParse(stats).success).toBe(true);
    expect(servingStatsSchema.parse(stats.serving)).toMatchObject({ runningRequests: 0, waitingRequests: 0, kvUsage: 0 });
  });

  it('completes non-streaming with usage and finish_reason length', async () => {
    const res = await post('/v1/completions', { model: 'tiny', prompt: 'Hello', max_tokens: 5, temperature: 0 });
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(body).toMatchObject({ object: 'text_completion', model: 'tiny', choices: [{ index: 0, finish_reason: 'length', logprobs: null }] });
    expect(body.usage).toEqual({ prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 });
    expect(body.id).toMatch(/^cmpl-/);
    expect(typeof body.choices[0].text).toBe('string');
  });

  it('accepts token-id prompts', async () => {
    const body = await jsonOf(await post('/v1/completions', { model: 'tiny', prompt: [1, 2, 3], max_tokens: 2 }));
    expect(body.usage.prompt_tokens).toBe(3);
  });

  it('streams completions with [DONE] and a final usage chunk', async () => {
    const res = await post('/v1/completions', { model: 'tiny', prompt: 'Hi', max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const events = await sse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 });
    expect(chunks.at(-2).choices[0].finish_reason).toBe('length');
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
  });

  it('streams the usage so far in every chunk with continuous_usage_stats (vLLM)', async () => {
    const body = { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } };
    const chunks = (await sse(await post('/v1/chat/completions', body))).slice(0, -1).map((e) => JSON.parse(e));
    const counts = chunks.map((c) => c.usage.completion_tokens as number);
    const prompt = chunks[0].usage.prompt_tokens as number;
    expect(prompt).toBeGreaterThan(0);
    for (const c of chunks) expect(c.usage).toEqual({ prompt_tokens: prompt, completion_tokens: c.usage.completion_tokens, total_tokens: prompt + c.usage.completion_tokens });
    expect(counts[0]).toBe(1);
    expect(counts.every((n, i) => i === 0 || n >= counts[i - 1]!)).toBe(true);
    expect(counts.at(-1)).toBe(4);
  });

  it('streams chat with a role delta first and finish_reason last', async () => {
    const res = await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, stream: true });
    const events = await sse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks[0].object).toBe('chat.completion.chunk');
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.at(-1).choices[0]).toMatchObject({ delta: {}, finish_reason: 'length' });
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
  });

  it('chat non-streaming counts the templated prompt', async () => {
    const body = await jsonOf(await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], max_completion_tokens: 2 }));
    expect(body).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' }, finish_reason: 'length' }] });
    // <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n
    expect(body.usage.prompt_tokens).toBe(9);
  });

  it('honours stop strings', async () => {
    const res = await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 30, stop: [' world'], temperature: 0 });
    const body = await jsonOf(res);
    expect(body.choices[0].finish_reason).toBe('stop');
    expect(body.choices[0].text).not.toContain(' world');
  });

  it('exports vLLM and afd metrics', async () => {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    for (const name of [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc',
      'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total',
      'vllm:time_to_first_token_seconds_bucket',
      'vllm:inter_token_latency_seconds_bucket',
      'vllm:e2e_request_latency_seconds_count',
      'vllm:request_prompt_tokens_bucket',
      'vllm:request_generation_tokens_sum',
      'vllm:request_success_total{model_name="tiny",finished_reason="length"}',
      'afd:steps_total',
      'afd:a2f_bytes_total{layer="0",stage="0"}',
      'afd:kv_blocks{kind="total"} 256',
      // A colocated engine moves nothing between ranks: no direction is timed.
      'afd:wire_basis{direction="f2a",basis="unavailable"} 1',
    ]) {
      expect(text).toContain(name);
    }
    expect(text).toMatch(/vllm:generation_tokens_total\{model_name="tiny"\} [1-9]/);
  });

  it('counts an engine failure as finished_reason="error", not abort, and streams it as an error event', async () => {
    const count = async (reason: string): Promise<number> => {
      const text = await (await fetch(`${srv.url}/metrics`)).text();
      return Number(new RegExp(`vllm:request_success_total\\{model_name="tiny",finished_reason="${reason}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const [errors, aborts] = [await count('error'), await count('abort')];
    srv.engine.failNext = new Error('peer ffn 0 closed the connection');
    const res = await post('/v1/completions', { model: 'tiny', prompt: 'Hello', max_tokens: 5, stream: true });
    const events = await sse(res);
    expect(JSON.parse(events.at(-2)!).error.message).toMatch(/engine step failed: peer ffn 0 closed/);
    expect(events.at(-1)).toBe('[DONE]');
    expect(await count('error')).toBe(errors + 1);
    expect(await count('abort')).toBe(aborts);
  });

  it('/v1/models names the served model, never the model directory', async () => {
    const text = await (await fetch(`${srv.url}/v1/models`)).text();
    expect(JSON.parse(text).data[0]).toMatchObject({ id: 'tiny', root: 'tiny' });
    expect(text).not.toContain('/models/tiny');
  });
});

describe('bad input', () => {
  async function expectError(res: Response, status: number, pattern: RegExp): Promise<void> {
    expect(res.status).toBe(status);
    const body = await jsonOf(res);
    expect(body.error).toMatchObject({ message: expect.stringMatching(pattern), type: expect.any(String) });
    expect(body.error).toHaveProperty('param');
    expect(body.error).toHaveProperty('code');
  }

  it('malformed JSON -> 400', async () => {
    await expectError(await post('/v1/completions', '{"model": "tiny", '), 400, /not valid JSON/);
    await expectError(await post('/v1/completions', ''), 400, /empty/);
  });
  it('unknown model -> 404', async () => {
    await expectError(await post('/v1/completions', { model: 'gpt-4', prompt: 'x' }), 404, /`gpt-4` does not exist.*tiny/);
  });
  it('wrong types -> 400 naming the field', async () => {
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 'ten' }), 400, /max_tokens/);
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x', temperature: 5 }), 400, /temperature/);
    await expectError(await post('/v1/chat/completions', { model: 'tiny', messages: [] }), 400, /messages: needs at least one message/);
    await expectError(await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'wizard', content: 'x' }] }), 400, /messages\.0\.role/);
    await expectError(await post('/v1/completions', { prompt: 'x' }), 400, /model/);
  });
  it('n beyond max-num-seqs and unsupported fields -> 400 saying what to do', async () => {
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x', n: 65 }), 400, /n=65 is more than this server runs at once \(max-num-seqs 64\).*send n <= 64/);
    await expectError(await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'x' }], functions: [{ name: 'f' }] }), 400, /functions: deprecated by OpenAI; send each function as a tool/);
  });
  it('message fields and /tokenize fields beyond the schema -> 400 naming them; an answer sent back as given is accepted', async () => {
    const named = async (res: Response, param: string): Promise<void> => {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    };
    await named(await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'x', extra_field: 1 }] }), 'messages.0.extra_field');
    await named(await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'assistant', content: 'x', tool_calls: [{ id: 'a' }] }, { role: 'user', content: 'y' }] }), 'messages.0.tool_calls.0.type');
    await named(await post('/tokenize', { prompt: 'x', add_bos: true }), 'add_bos');
    await named(await post('/detokenize', { tokens: [1], skip_special_tokens: true }), 'skip_special_tokens');
    const echoed = await post('/v1/chat/completions', { model: 'tiny', max_tokens: 1, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'y', refusal: null, tool_calls: [] }, { role: 'user', content: 'z' }] });
    expect(echoed.status).toBe(200);
  });
  it('prompt longer than the context window -> 400 naming the limit', async () => {
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: new Array(200).fill(5) }), 400, /maximum context length is 128 tokens/);
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: [1, 2], max_tokens: 500 }), 400, /maximum context length is 128 tokens.*502/);
  });
  it('text no 128-token window can hold -> 400 before tokenising (192 characters per Qwen3 token at most)', async () => {
    const t0 = performance.now();
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x'.repeat(128 * 192 + 1) }), 400, /maximum context length is 128 tokens.*at least 24577 characters.*at most 24576 characters, 192 per token/);
    await expectError(
      await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'system', content: 'a'.repeat(20_000) }, { role: 'user', content: 'b'.repeat(5_000) }] }),
      400,
      /your messages have at least 25000 characters/,
    );
    expect(performance.now() - t0).toBeLessThan(2000); // tokenising 25k characters twice over would be fine too, 13 MB would not
    // Just under the bound: tokenised, then refused by its token count.
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x '.repeat(1000) }), 400, /maximum context length is 128 tokens.*your prompt has \d+ tokens/);
  });
  it('empty prompt and oversized body -> 400 / 413', async () => {
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: '' }), 400, /prompt is empty/);
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 0 }), 400, /max_tokens/);
    await expectError(await post('/v1/completions', { model: 'tiny', prompt: 'x'.repeat(17 * 2 ** 20) }), 413, /larger than/);
  });

  it('unknown route -> 404, wrong method -> 405', async () => {
    // Read the bodies: an unread response body can hold its pooled connection.
    await expectError(await fetch(`${srv.url}/v2/nothing`), 404, /.+/);
    await expectError(await fetch(`${srv.url}/v1/completions`), 405, /GET is not allowed/);
  });
});

describe('limits, readiness and auth', () => {
  it('too many queued -> 429', async () => {
    const s = await startTestServer({ engine: { stepDelayMs: 20 }, serving: { maxQueuedRequests: 1, scheduler: { maxNumSeqs: 1, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } } } });
    try {
      const body = { model: 'tiny', prompt: 'x', max_tokens: 50 };
      const send = (): Promise<Response> => fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      // Wait until the server holds each request (a fixed sleep races a loaded CI box).
      const held = async (n: number): Promise<void> => {
        await expect.poll(() => s.api.serving.numActiveRequests, { timeout: 15_000, interval: 5 }).toBe(n);
      };
      const first = send();
      await held(1); // first is running
      const second = send(); // waits (maxNumSeqs 1)
      await held(2);
      const third = await send();
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('1');
      expect((await jsonOf(third)).error.message).toMatch(/too many queued requests/);
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('not ready -> 503 on /health and the API', async () => {
    let reason: string | null = 'ffn 0 unreachable';
    const s = await startTestServer({ notReady: () => reason });
    try {
      const h = await fetch(`${s.url}/health`);
      expect(h.status).toBe(503);
      expect(await jsonOf(h)).toEqual({ status: 'unavailable', reason: 'ffn 0 unreachable' });
      const r = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x' }) });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect((await jsonOf(r)).error.message).toMatch(/not ready \(ffn 0 unreachable\)/);
      reason = null;
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('API key guards /v1 but not /health, /metrics, /version, /afd/stats', async () => {
    const s = await startTestServer({ apiKey: 'sekrit' });
    try {
      expect((await fetch(`${s.url}/v1/models`)).status).toBe(401);
      expect((await fetch(`${s.url}/v1/models`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);

      const ok = await fetch(`${s.url}/v1/models`, { headers: { authorization: 'Bearer sekrit' } });
      expect(ok.status).toBe(200);
      for (const p of ['/health', '/metrics', '/version', '/afd/stats']) expect((await fetch(s.url + p)).status).toBe(200);
      const body = await jsonOf(await fetch(`${s.url}/v1/models`));
      expect(body.error.code).toBe('invalid_api_key');
    } finally {
      await s.close();
    }
  });

  it('stopping the server answers in-flight requests with 503 (non-streaming) or an error event (streaming)', async () => {
    const s = await startTestServer({ engine: { stepDelayMs: 5 } });
    const body = (stream: boolean): string => JSON.stringify({ model: 'tiny', prompt: 'x', max_tokens: 3000, ignore_eos: true, stream });
    const plain = fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(false) });
    const streamed = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(true) });
    // Both must be in flight before the stop (a fixed sleep races a loaded CI box).
    await expect.poll(() => s.api.serving.numActiveRequests, { timeout: 15_000, interval: 5 }).toBe(2);
    await s.close();
    const res = await plain;
    expect(res.status).toBe(503);
    expect((await jsonOf(res)).error.code).toBe('aborted');
    const events = await sse(streamed);
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!).error.message).toMatch(/server is stopping/);
  });

  it('client disconnect mid-stream frees the KV blocks', async () => {
    const s = await startTestServer({ engine: { stepDelayMs: 5 } });
    try {
      const ctrl = new AbortController();
      const res = await fetch(`${s.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'x'.repeat(100), max_tokens: 1000, stream: true }), signal: ctrl.signal });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.read();
      expect(s.api.serving.scheduler.blocks.numUsedBlocks).toBeGreaterThan(0);
      ctrl.abort();
      const deadline = Date.now() + 15_000; // polls; a loaded CI box may take a while to see the reset
      while (s.api.serving.scheduler.blocks.numUsedBlocks > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(s.api.serving.scheduler.blocks.numUsedBlocks).toBe(0);
      expect(s.api.serving.numActiveRequests).toBe(0);
    } finally {
      await s.close();
    }
  });
});
