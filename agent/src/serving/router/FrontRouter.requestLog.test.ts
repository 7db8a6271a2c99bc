/**
 * The front router's request log over two real API servers (fake engines) with an API key:
 * what a plain request, a stream, a refused request, a very long body and a client that
 * leaves come to in the log, and that the key never appears in it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestSummary } from '@afd/shared';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { FrontRouter } from './FrontRouter.js';
import { RequestLog } from './RequestLog.js';

const key = 'k-secret-router-key';
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
let ranks: TestServer[];
let router: FrontRouter;
let url: string;
const log = new RequestLog();

beforeAll(async () => {
  ranks = await Promise.all([0, 1].map(() => startTestServer({ apiKey: key, engine: { stepDelayMs: 2 } })));
  router = new FrontRouter({ backends: ranks.map((r) => r.url), apiKey: key, healthIntervalMs: 50, requestLog: log });
  url = await router.listen(0, '127.0.0.1');
});
afterAll(async () => {
  await router.close();
  await Promise.all(ranks.map((r) => r.close()));
});

/** The record of the next request to end after `send` runs. */
async function logged(send: () => Promise<unknown>): Promise<RequestSummary> {
  const before = log.size === 0 ? -1 : log.summaries().at(-1)!.id;
  await send();
  await expect.poll(() => log.summaries().at(-1)?.id ?? -1, { timeout: 10_000, interval: 5 }).toBeGreaterThan(before);
  return log.summaries().at(-1)!;
}

describe('FrontRouter request log', () => {
  it('records a plain completion: endpoint, model, tokens, status, finish reason, both bodies', async () => {
    const body = JSON.stringify({ model: 'tiny', prompt: 'Hello there', max_tokens: 5 });
    let answer = '';
    const s = await logged(async () => {
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: auth, body });
      expect(res.status).toBe(200);
      answer = await res.text();
    });
    const usage = (JSON.parse(answer) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    expect(s).toMatchObject({ method: 'POST', endpoint: '/v1/completions', model: 'tiny', stream: false, status: 200, promptTokens: usage.prompt_tokens, completionTokens: 5, ttftMs: null, finishReason: 'length', error: null });
    expect([0, 1]).toContain(s.backend);
    expect(s.durationMs).toBeGreaterThan(0);
    expect(s.startedAtMs).toBeGreaterThan(Date.now() - 60_000);
    expect(log.get(s.id)).toMatchObject({ requestBody: body, requestBytes: body.length, responseBody: answer, responseBytes: Buffer.byteLength(answer), responseText: null, bodiesKept: true });
  });

  it('records a stream: TTFT before the end, usage and finish reason from its last events, the text it carried', async () => {
    let events = '';
    const s = await logged(async () => {
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 12, stream: true, stream_options: { include_usage: true } }) });
      events = await res.text();
    });
    expect(s).toMatchObject({ endpoint: '/v1/chat/completions', model: 'tiny', stream: true, status: 200, completionTokens: 12, finishReason: 'length', error: null });
    expect(s.promptTokens).toBeGreaterThan(0);
    expect(s.ttftMs).toBeGreaterThan(0);
    expect(s.ttftMs!).toBeLessThan(s.durationMs);
    const text = events
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => (JSON.parse(e.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '')
      .join('');
    expect(log.get(s.id)).toMatchObject({ responseBody: events, responseText: text });
  });

  it('records a Responses API stream: TTFT at its first text delta, its final status as the finish reason', async () => {
    const s = await logged(async () => {
      const res = await fetch(`${url}/v1/responses`, { method: 'POST', headers: auth, body: JSON.stringify({ model: 'tiny', input: 'Hello', max_output_tokens: 4, stream: true }) });
      await res.text();
    });
    expect(s).toMatchObject({ endpoint: '/v1/responses', model: 'tiny', stream: true, status: 200, completionTokens: 4, finishReason: 'incomplete: max_output_tokens', error: null });
    expect(s.ttftMs).toBeGreaterThan(0);
    expect(log.get(s.id)!.responseText!.length).toBeGreaterThan(0);
  });

  it('records a request refused for its key, without the key; probes and preflights are not recorded', async () => {
    const s = await logged(() => fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"tiny","prompt":"x"}' }));
    expect(s).toMatchObject({ endpoint: '/v1/completions', status: 401, error: expect.stringMatching(/missing or invalid API key/), backend: null });
    const before = log.size;
    await fetch(`${url}/health`);
    await fetch(`${url}/metrics`);
    const models = await logged(() => fetch(`${url}/v1/models`, { headers: auth }));
    expect(log.size).toBe(before + 1);
    expect(models).toMatchObject({ method: 'GET', endpoint: '/v1/models', status: 200, model: null, promptTokens: null });
    const everything = JSON.stringify([log.summaries(), log.summaries().map((r) => log.get(r.id))]);
    expect(everything).not.toContain(key);
  });

  it('keeps the head and tail of a very long body (a prompt the rank refuses: its message is the error)', async () => {
    const prompt = 'word '.repeat(40_000); // 200 KB
    const s = await logged(() => fetch(`${url}/v1/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ model: 'tiny', prompt, max_tokens: 2 }) }).then((r) => r.text()));
    const d = log.get(s.id)!;
    expect(s).toMatchObject({ model: 'tiny', status: 400, error: expect.stringMatching(/maximum context length/) });
    expect(d.requestBytes).toBeGreaterThan(200_000);
    expect(d.requestBody.length).toBeLessThan(70 * 1024);
    expect(d.requestBody).toMatch(/^\{"model":"tiny","prompt":"word word/);
    expect(d.requestBody).toMatch(/\.\.\. \[\d+ bytes not kept\] \.\.\./);
    expect(d.requestBody).toMatch(/"max_tokens":2\}$/);
  });

  it('records a client that leaves mid-stream', async () => {
    const ctrl = new AbortController();
    const s = await logged(async () => {
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ model: 'tiny', prompt: 'x', max_tokens: 3000, stream: true }), signal: ctrl.signal });
      await res.body!.getReader().read();
      ctrl.abort();
    });
    expect(s).toMatchObject({ stream: true, status: 200, error: 'the client closed the connection before the response ended' });
    expect(s.ttftMs).not.toBeNull();
  });
});
