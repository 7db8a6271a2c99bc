import { describe, expect, it } from 'vitest';
import { ServingEngine, type GenerationEvent, type ServingOptions } from './ServingEngine.js';
import { FakeEngine } from './testing/FakeEngine.js';
import { qwenTokenizer } from './testing/qwenTokenizer.js';

const tok = await qwenTokenizer();
const greedy = { temperature: 0, topK: 0, topP: 1 };
const options: ServingOptions = {
  scheduler: { maxNumSeqs: 16, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } },
  maxQueuedRequests: 100,
};

async function collect(events: AsyncIterable<GenerationEvent>): Promise<{ text: string; done: GenerationEvent | undefined; n: number }> {
  let text = '';
  let done: GenerationEvent | undefined;
  let n = 0;
  for await (const e of events) {
    if (e.type === 'delta') {
      text += e.text;
      n++;
    } else done = e;
  }
  return { text, done, n };
}

describe('ServingEngine', () => {
  it('generates text up to max_tokens and frees every block', async () => {
    const engine = new FakeEngine({ tokens: tok.encode(' hello world', false) });
    const serving = new ServingEngine(engine, tok, options);
    const h = serving.submit({ promptIds: tok.encode('Say hi'), sampling: greedy, maxTokens: 4 });
    const { text, done, n } = await collect(h.events);
    expect(n).toBe(4);
    expect(text.length).toBeGreaterThan(0);
    expect(done).toEqual({ type: 'done', finishReason: 'length', promptTokens: h.promptTokens, completionTokens: 4 });
    expect(serving.scheduler.blocks.numUsedBlocks).toBe(0);
  });

  it('stops at EOS with finish_reason stop, and on a stop string without emitting it', async () => {
    const eos = 151_645;
    const engine = new FakeEngine({ nextToken: ({ position }) => (position >= 6 ? eos : tok.encode(' a', false)[0]!) });
    const serving = new ServingEngine(engine, tok, options);
    const a = await collect(serving.submit({ promptIds: tok.encode('x y z'), sampling: greedy }).events);
    expect(a.done).toMatchObject({ finishReason: 'stop' });
    expect(a.text).toBe(' a a a');

    const words = tok.encode(' one two STOP three', false);
    const engine2 = new FakeEngine({ nextToken: ({ position }) => words[(position - 1) % words.length]! });
    const s2 = new ServingEngine(engine2, tok, options);
    const b = await collect(s2.submit({ promptIds: [1], sampling: greedy, maxTokens: 20, stop: ['STOP'] }).events);
    expect(b.text).toBe(' one two ');
    expect(b.done).toMatchObject({ finishReason: 'stop' });
    expect(s2.scheduler.blocks.numUsedBlocks).toBe(0);
  });

  it('rejects prompts beyond the context window, naming the limit', () => {
    const serving = new ServingEngine(new FakeEngine({ maxModelLen: 32 }), tok, options);
    expect(() => serving.submit({ promptIds: new Array(40).fill(1), sampling: greedy })).toThrow(/maximum context length is 32 tokens.*40 tokens/);
    expect(() => serving.submit({ promptIds: [1, 2], sampling: greedy, maxTokens: 31 })).toThrow(/requested 33 tokens \(2 in the prompt, 31 in the completion\)/);
    expect(() => serving.submit({ promptIds: [1, 1e9], sampling: greedy })).toThrow(/outside the vocabulary/);
  });

  it('refuses when the queue is full and when not ready', async () => {
    const one = { ...options, scheduler: { ...options.scheduler, maxNumSeqs: 1 }, maxQueuedRequests: 0 };
    const serving = new ServingEngine(new FakeEngine({ stepDelayMs: 5 }), tok, one);
    // A limit of 0 refuses only what would wait: the first request runs at once.
    const first = serving.submit({ promptIds: [1], sampling: greedy, maxTokens: 50 });
    expect(() => serving.submit({ promptIds: [1], sampling: greedy, maxTokens: 1 })).toThrow(/too many queued requests \(0 waiting, limit 0\)/);
    first.abort();
    serving.setNotReady('ffn 0 lost');
    expect(() => serving.submit({ promptIds: [1], sampling: greedy })).toThrow(/not ready \(ffn 0 lost\)/);
  });

  it('submitAll queues all or none, and the scheduler admits them into one step', async () => {
    const engine = new FakeEngine({ maxModelLen: 32 });
    const serving = new ServingEngine(engine, tok, options);
    expect(() => serving.submitAll([{ promptIds: [1], sampling: greedy }, { promptIds: [], sampling: greedy }])).toThrow(/prompt is empty/);
    expect(serving.numActiveRequests).toBe(0);
    const handles = serving.submitAll([1, 2, 3].map((n) => ({ promptIds: new Array(n).fill(7), sampling: greedy, maxTokens: 2 })));
    const results = await Promise.all(handles.map((h) => collect(h.events)));
    results.forEach((r, i) => expect(r.done).toMatchObject({ finishReason: 'length', promptTokens: i + 1 }));
    expect(engine.plans.map((p) => p.numSeqs)).toEqual([3, 3]);

    // The queue limit counts the batch's earlier requests as waiting (none is scheduled yet):
    // with 2 per step and a limit of 1, the third of three finds 2 waiting and a full step.
    const two = { ...options, scheduler: { ...options.scheduler, maxNumSeqs: 2 }, maxQueuedRequests: 1 };
    const s2 = new ServingEngine(new FakeEngine(), tok, two);
    const three = [1, 2, 3].map(() => ({ promptIds: [1], sampling: greedy, maxTokens: 1 }));
    expect(() => s2.submitAll(three)).toThrow(/too many queued requests for a batch of 3 \(0 waiting, limit 1\); retry later or send a smaller batch/);
    expect(s2.numActiveRequests).toBe(0);
    await Promise.all(s2.submitAll(three.slice(1)).map((h) => collect(h.events)));
  });

  it('abort mid-generation frees the KV blocks', async () => {
    const serving = new ServingEngine(new FakeEngine({ stepDelayMs: 2 }), tok, options);
    const h = serving.submit({ promptIds: new Array(40).fill(5), sampling: greedy, maxTokens: 1000 });
    let n = 0;
    for await (const e of h.events) {
      if (e.type === 'delta' && ++n === 3) h.abort();
      if (e.type === 'done') expect(e.finishReason).toBe('abort');
    }
    // Freed by the scheduler loop shortly after the abort (poll: a loaded CI box is slow).
    await expect.poll(() => serving.scheduler.blocks.numUsedBlocks, { timeout: 10_000, interval: 10 }).toBe(0);
  });

  it('reports an engine failure to the requests of that step and keeps serving', async () => {
    const engine = new FakeEngine();
    const serving = new ServingEngine(engine, tok, options);
    engine.failNext = new Error('peer ffn 0 closed the connection');
    const a = await collect(serving.submit({ promptIds: [1, 2], sampling: greedy, maxTokens: 3 }).events);
    expect(a.done).toMatchObject({ type: 'error' });
    const b = await collect(serving.submit({ promptIds: [1, 2], sampling: greedy, maxTokens: 3 }).events);
    expect(b.done).toMatchObject({ finishReason: 'length' });
    expect(serving.scheduler.blocks.numUsedBlocks).toBe(0);
  });

  it('serves many concurrent requests under KV pressure without leaks', async () => {
    const engine = new FakeEngine({ numKvBlocks: 12, kvBlockSize: 4 });
    const serving = new ServingEngine(engine, tok, options);
    const runs = Array.from({ length: 20 }, (_, i) => collect(serving.submit({ promptIds: new Array(5 + (i % 9)).fill(7), sampling: greedy, maxTokens: 8 + (i % 5) }).events));
    const results = await Promise.all(runs);
    results.forEach((r, i) => expect(r.done).toMatchObject({ finishReason: 'length', completionTokens: 8 + (i % 5) }));
    expect(serving.scheduler.numPreemptions).toBeGreaterThan(0);
    expect(serving.scheduler.blocks.numUsedBlocks).toBe(0);
  });
});
