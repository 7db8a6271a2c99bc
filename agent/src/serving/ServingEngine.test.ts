import { describe, expect, it } from 'vitest';
import { ServingEngine, type GenerationEvent, type RequestHandle, type ServingOptions } from './ServingEngine.js';
import { FakeEngine, historySampler } from './testing/FakeEngine.js';
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
    expect(done).toEqual({ type: 'done', finishReason: 'length', promptTokens: h.promptTokens, completionTokens: 4, cachedTokens: 0 });
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

  it('a failed step: retryable (step_failed) for a request with no token yet, engine_error for one that streamed tokens', async () => {
    const engine = new FakeEngine({ stepDelayMs: 2 });
    const serving = new ServingEngine(engine, tok, options);
    const streaming = serving.submit({ promptIds: [1, 2], sampling: greedy, maxTokens: 100 });
    let fresh: RequestHandle | undefined;
    let deltas = 0;
    let streamed: GenerationEvent | undefined;
    for await (const e of streaming.events) {
      if (e.type === 'delta' && ++deltas === 2) {
        fresh = serving.submit({ promptIds: [3, 4, 5], sampling: greedy, maxTokens: 5 }); // joins the next step: its prefill
        engine.failNext = new Error('timed out waiting for FFN rank 1');
      }
      if (e.type !== 'delta') streamed = e;
    }
    expect(streamed).toMatchObject({ type: 'error', error: { kind: 'engine_error', message: 'engine step failed: timed out waiting for FFN rank 1' } });
    const first = await collect(fresh!.events);
    expect(first.n).toBe(0);
    expect(first.done).toMatchObject({ type: 'error', error: { kind: 'step_failed', message: expect.stringMatching(/^engine step failed: timed out waiting for FFN rank 1; .*nothing was generated: retry it/) } });
    expect(serving.scheduler.blocks.numUsedBlocks).toBe(0);
  });

  it('is not ready while the engine reports a problem (a lost FFN peer), read at each request', async () => {
    const engine = new FakeEngine();
    const serving = new ServingEngine(engine, tok, options);
    engine.unavailable = 'lost FFN rank 1 at 127.0.0.1:29501: timed out; reconnecting';
    expect(serving.readiness).toEqual({ ready: false, reason: engine.unavailable });
    expect(() => serving.submit({ promptIds: [1], sampling: greedy })).toThrow(expect.objectContaining({ kind: 'not_ready', message: expect.stringMatching(/not ready \(lost FFN rank 1 .*reconnecting\)/) }));
    engine.unavailable = null;
    expect(serving.readiness.ready).toBe(true);
    expect((await collect(serving.submit({ promptIds: [1], sampling: greedy, maxTokens: 2 }).events)).n).toBe(2);
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

describe('ServingEngine with n samples of a prompt', () => {
  const words = tok.encode(' the cat sat on a mat and then it ran far away', false);
  const prompt = tok.encode('Tell me a story about a cat who lived in a big old house by the sea');
  const sampled = { temperature: 1, topK: 0, topP: 1 };
  const ids = async (h: RequestHandle): Promise<number[]> => {
    const out: number[] = [];
    for await (const e of h.events) if (e.type === 'delta') out.push(...e.tokenIds);
    return out;
  };

  it('one prefill of the shared prompt blocks; sample i equals an n=1 request with seed + i', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, nextToken: historySampler(words) });
    const serving = new ServingEngine(engine, tok, options);
    const handles = serving.submitAll([{ promptIds: prompt, sampling: { ...sampled, seed: 2 ** 32 - 2 }, maxTokens: 8, n: 3 }]);
    expect(handles.map((h) => h.sampleIndex)).toEqual([0, 1, 2]);
    const texts = await Promise.all(handles.map(ids));
    // The leader prefilled the prompt alone; then the two others computed only its tail.
    const sharedTokens = Math.floor((prompt.length - 1) / 4) * 4;
    expect(engine.plans[0]!.numSeqs).toBe(1);
    expect(engine.plans[0]!.tokenOffsets[1]).toBe(prompt.length);
    expect([...engine.plans[1]!.tokenOffsets]).toEqual([0, 1, 1 + prompt.length - sharedTokens, 1 + 2 * (prompt.length - sharedTokens)]);
    expect([...engine.plans[1]!.seeds]).toEqual([2 ** 32 - 2, 2 ** 32 - 1, 0]); // seed + i, mod 2^32
    expect(serving.scheduler.promptSharing).toEqual({ numLookedUpTokens: 3 * prompt.length, numSharedTokens: 2 * sharedTokens });
    expect(new Set(texts.map((t) => t.join())).size).toBe(3);
    for (const [i, seed] of [2 ** 32 - 2, 2 ** 32 - 1, 0].entries()) {
      const alone = await ids(serving.submit({ promptIds: prompt, sampling: { ...sampled, seed }, maxTokens: 8 }));
      expect(alone, `sample ${i}`).toEqual(texts[i]);
    }
    expect(serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('greedy samples are identical; without a seed each sample draws its own', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, nextToken: historySampler(words) });
    const serving = new ServingEngine(engine, tok, options);
    const greedyTexts = await Promise.all(serving.submitAll([{ promptIds: prompt, sampling: greedy, maxTokens: 6, n: 4 }]).map(ids));
    expect(new Set(greedyTexts.map((t) => t.join())).size).toBe(1);
    expect(engine.plans[1]!.numSeqs).toBe(4);
    expect(new Set(engine.plans[1]!.seeds).size).toBe(4);
    expect(serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('two requests with n samples each, at once: each sample equals its n=1 run', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, nextToken: historySampler(words) });
    const serving = new ServingEngine(engine, tok, options);
    const other = tok.encode('Write a poem about the moon and the stars over a quiet lake at night');
    const handles = serving.submitAll([prompt, other].map((p, i) => ({ promptIds: p, sampling: { ...sampled, seed: 10 * i }, maxTokens: 6, n: 2 })));
    const texts = await Promise.all(handles.map(ids));
    expect(serving.scheduler.promptSharing.numSharedTokens).toBeGreaterThan(0);
    const alone = await Promise.all(
      [prompt, other].flatMap((p, i) => [0, 1].map((j) => ids(serving.submit({ promptIds: p, sampling: { ...sampled, seed: 10 * i + j }, maxTokens: 6 })))),
    );
    expect(texts).toEqual(alone);
  });

  it('aborting one sample ends it alone; the others finish and every block is freed', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, stepDelayMs: 1 });
    const serving = new ServingEngine(engine, tok, options);
    const [a, b, c] = serving.submitAll([{ promptIds: prompt, sampling: sampled, maxTokens: 20, n: 3 }]);
    const bDone = collect(b!.events);
    b!.abort();
    const [ra, rb, rc] = await Promise.all([collect(a!.events), bDone, collect(c!.events)]);
    expect(rb.done).toMatchObject({ finishReason: 'abort' });
    expect(ra.done).toMatchObject({ finishReason: 'length', completionTokens: 20 });
    expect(rc.done).toMatchObject({ finishReason: 'length', completionTokens: 20 });
    expect(serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('refuses n beyond max-num-seqs, counts n against the queue, and submit takes one sample only', () => {
    const two = { ...options, scheduler: { ...options.scheduler, maxNumSeqs: 2 }, maxQueuedRequests: 1 };
    const serving = new ServingEngine(new FakeEngine(), tok, two);
    expect(() => serving.submitAll([{ promptIds: [1], sampling: greedy, n: 3 }])).toThrow(/n=3 is more than this server runs at once \(max-num-seqs 2\).*send n <= 2/);
    expect(() => serving.submitAll([{ promptIds: [1], sampling: greedy, n: 0 }])).toThrow(/n must be a positive integer, got 0/);
    // n=2 fills the running batch; 2 more samples would leave 2 waiting, beyond the limit of 1.
    expect(() => serving.submitAll([1, 2].map(() => ({ promptIds: [1], sampling: greedy, n: 2 })))).toThrow(/too many queued requests for a batch of 4/);
    expect(() => serving.submit({ promptIds: [1], sampling: greedy, n: 2 })).toThrow(/use submitAll/);
    expect(serving.numActiveRequests).toBe(0);
  });
});
