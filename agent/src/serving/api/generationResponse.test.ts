/**
 * Several generations in one response, driven event by event through hand-fed handles
 * over a real loopback HTTP server: when one fails mid-generation the others are aborted
 * and the client gets that one error (streamed: one error event, one [DONE]; collected:
 * the error status).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AsyncQueue } from '../AsyncQueue.js';
import { sseData } from '../testing/httpBodies.js';
import type { GenerationEvent, RequestHandle } from '../ServingEngine.js';
import { ServingError } from '../ServingError.js';
import { toApiError } from './ApiError.js';
import { collectGeneration, streamGeneration } from './generationResponse.js';
import type { ResponseFormat } from './responseFormat.js';
import { sendJson } from './httpUtil.js';

/** A handle whose events the test pushes; abort() ends it the way ServingEngine does. */
class FedHandle implements RequestHandle {
  readonly queue = new AsyncQueue<GenerationEvent>();
  readonly events = this.queue;
  aborted = false;
  private ended = false;
  constructor(
    readonly id: string,
    readonly promptTokens = 1,
    readonly sampleIndex = 0,
  ) {}
  push(ev: GenerationEvent): void {
    if (this.ended) return;
    this.queue.push(ev);
    if (ev.type !== 'delta') this.end();
  }
  abort(): void {
    if (this.ended) return;
    this.aborted = true;
    this.push({ type: 'done', finishReason: 'abort', promptTokens: this.promptTokens, completionTokens: 0, cachedTokens: 0 });
  }
  private end(): void {
    this.ended = true;
    this.queue.end();
  }
}

const fmt: ResponseFormat = {
  chunk: (index, delta, finish) => ({ choices: [{ index, text: delta.text, finish_reason: finish }] }),
  usageChunk: (usage) => ({ choices: [], usage }),
  full: (choices, usage) => ({ choices: choices.map((c, index) => ({ index, text: c.text, finish_reason: c.finish })), usage }),
};

let server: Server | null = null;
afterEach(async () => {
  const s = server;
  server = null;
  if (!s) return;
  s.closeAllConnections(); // fetch keeps its connection alive
  await new Promise<void>((resolve) => s.close(() => resolve()));
});

/** Serves one response over `handles`; resolves the base URL. */
async function serve(handles: RequestHandle[], stream: boolean): Promise<string> {
  server = createServer((req, res) => {
    const done = stream ? streamGeneration(req, res, handles, fmt, { include: true, continuous: false }) : collectGeneration(req, res, handles, fmt).then((body) => body && sendJson(res, 200, body));
    done.catch((err: unknown) => {
      const e = toApiError(err);
      sendJson(res, e.status, e.toJSON());
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const failure = new ServingError('engine_error', 'engine step failed: worker lost');

describe('generations of one request', () => {
  it('streamed: one failing prompt aborts the others; one error event, no usage chunk, one [DONE]', async () => {
    const handles = [new FedHandle('a'), new FedHandle('b'), new FedHandle('c')];
    const url = await serve(handles, true);
    const res = await fetch(url);
    handles[0]!.push({ type: 'delta', text: 'x', tokenIds: [1] });
    handles[2]!.push({ type: 'delta', text: 'z', tokenIds: [3] });
    handles[2]!.push({ type: 'done', finishReason: 'length', promptTokens: 1, completionTokens: 1, cachedTokens: 0 });
    await new Promise((r) => setTimeout(r, 10));
    handles[1]!.push({ type: 'error', error: failure });
    const events = await sseData(res);
    expect(handles.map((h) => h.aborted)).toEqual([true, false, false]); // b failed, c had finished
    expect(events.at(-1)).toBe('[DONE]');
    const payloads = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(payloads).toEqual([
      { choices: [{ index: 0, text: 'x', finish_reason: null }] },
      { choices: [{ index: 2, text: 'z', finish_reason: null }] },
      { choices: [{ index: 2, text: '', finish_reason: 'length' }] },
      { error: { message: 'engine step failed: worker lost', type: 'server_error', param: null, code: 'engine_error' } },
    ]);
  });

  it('collected: one failing prompt aborts the others and the request gets its error', async () => {
    const handles = [new FedHandle('a'), new FedHandle('b')];
    const url = await serve(handles, false);
    const pending = fetch(url);
    await new Promise((r) => setTimeout(r, 10));
    handles[1]!.push({ type: 'error', error: failure });
    const res = await pending;
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('engine step failed: worker lost');
    expect(handles[0]!.aborted).toBe(true);
  });

  it('collected: choices in handle order whatever order they finish in, usage summed', async () => {
    const handles = [new FedHandle('a', 2), new FedHandle('b', 3)];
    const url = await serve(handles, false);
    const pending = fetch(url);
    await new Promise((r) => setTimeout(r, 10));
    handles[1]!.push({ type: 'delta', text: 'B', tokenIds: [2] });
    handles[1]!.push({ type: 'done', finishReason: 'stop', promptTokens: 3, completionTokens: 1, cachedTokens: 0 });
    handles[0]!.push({ type: 'delta', text: 'A', tokenIds: [1] });
    handles[0]!.push({ type: 'done', finishReason: 'length', promptTokens: 2, completionTokens: 1, cachedTokens: 0 });
    expect(await (await pending).json()).toEqual({
      choices: [
        { index: 0, text: 'A', finish_reason: 'length' },
        { index: 1, text: 'B', finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
  });
});
