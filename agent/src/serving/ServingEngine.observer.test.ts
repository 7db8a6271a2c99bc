/**
 * The serving engine's metric hooks: each request leaves the queue once, its phases (queue,
 * prefill, decode) add up to its end-to-end time, every step reports the tokens it computed,
 * and every admission (a preempted sequence's again) is one prefix-cache lookup.
 */
import { describe, expect, it } from 'vitest';
import type { FinishReason } from './scheduler/Sequence.js';
import { ServingEngine, type RequestParamsInfo, type RequestPhases, type ServingObserver, type ServingOptions } from './ServingEngine.js';
import { FakeEngine } from './testing/FakeEngine.js';
import { qwenTokenizer } from './testing/qwenTokenizer.js';

const tok = await qwenTokenizer();
const greedy = { temperature: 0, topK: 0, topP: 1 };
const dbo = { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 };

type Event =
  | { kind: 'start'; promptTokens: number; params: RequestParamsInfo }
  | { kind: 'scheduled'; queueS: number }
  | { kind: 'first'; ttftS: number; prefillS: number }
  | { kind: 'next'; itlS: number }
  | { kind: 'iteration'; numTokens: number }
  | { kind: 'lookup'; queried: number; hits: number }
  | { kind: 'end'; e2eS: number; completionTokens: number; reason: FinishReason | 'error'; phases: RequestPhases };

class Recorder implements ServingObserver {
  events: Event[] = [];
  onRequestStart(promptTokens: number, params: RequestParamsInfo): void {
    this.events.push({ kind: 'start', promptTokens, params });
  }
  onRequestScheduled(queueS: number): void {
    this.events.push({ kind: 'scheduled', queueS });
  }
  onFirstToken(ttftS: number, prefillS: number): void {
    this.events.push({ kind: 'first', ttftS, prefillS });
  }
  onNextToken(itlS: number): void {
    this.events.push({ kind: 'next', itlS });
  }
  onIteration(numTokens: number): void {
    this.events.push({ kind: 'iteration', numTokens });
  }
  onPrefixCacheLookup(queried: number, hits: number): void {
    this.events.push({ kind: 'lookup', queried, hits });
  }
  onRequestEnd(e2eS: number, completionTokens: number, reason: FinishReason | 'error', phases: RequestPhases): void {
    this.events.push({ kind: 'end', e2eS, completionTokens, reason, phases });
  }
  of<K extends Event['kind']>(kind: K): Extract<Event, { kind: K }>[] {
    return this.events.filter((e): e is Extract<Event, { kind: K }> => e.kind === kind);
  }
}

async function drain(handles: { events: AsyncIterable<unknown> }[]): Promise<void> {
  await Promise.all(handles.map(async (h) => { for await (const _ of h.events); }));
}

describe('ServingEngine observer hooks', () => {
  it('one request at a time: queue + prefill + decode = e2e for each, the second waits for the first', async () => {
    const options: ServingOptions = { scheduler: { maxNumSeqs: 1, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 0, dbo }, maxQueuedRequests: 10 };
    const rec = new Recorder();
    const serving = new ServingEngine(new FakeEngine({ stepDelayMs: 3 }), tok, options, rec);
    const prompts = [tok.encode('first prompt'), tok.encode('and a second, longer prompt')];
    await drain(serving.submitAll([
      { promptIds: prompts[0]!, sampling: greedy, maxTokens: 5, ignoreEos: true },
      { promptIds: prompts[1]!, sampling: greedy, ignoreEos: true, maxTokens: 3 },
    ]));
    expect(rec.of('start').map((e) => e.params)).toEqual([{ n: 1, maxTokens: 5 }, { n: 1, maxTokens: 3 }]);
    const scheduled = rec.of('scheduled');
    const first = rec.of('first');
    const ends = rec.of('end');
    expect([scheduled.length, first.length, ends.length]).toEqual([2, 2, 2]);
    // The second request waited for all five steps of the first.
    expect(scheduled[1]!.queueS).toBeGreaterThan(ends[0]!.e2eS - 0.002);
    for (let i = 0; i < 2; i++) {
      const { decodeS, inferenceS } = ends[i]!.phases;
      expect(scheduled[i]!.queueS + first[i]!.prefillS + decodeS!).toBeCloseTo(ends[i]!.e2eS, 2);
      expect(first[i]!.ttftS).toBeCloseTo(scheduled[i]!.queueS + first[i]!.prefillS, 6);
      expect(inferenceS!).toBeCloseTo(first[i]!.prefillS + decodeS!, 6);
      expect(decodeS!).toBeGreaterThan(0);
    }
    // vLLM's count per step: each sampled token, and the prompt with a sequence's first token.
    expect(rec.of('iteration').map((e) => e.numTokens)).toEqual([prompts[0]!.length + 1, 1, 1, 1, 1, prompts[1]!.length + 1, 1, 1]);
    expect(rec.of('lookup')).toEqual(prompts.map((p) => ({ kind: 'lookup', queried: p.length, hits: 0 })));
  });

  it('under KV pressure: a preempted sequence is looked up again on readmission, but leaves the queue once', async () => {
    const options: ServingOptions = { scheduler: { maxNumSeqs: 8, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 0, dbo }, maxQueuedRequests: 10 };
    const rec = new Recorder();
    const serving = new ServingEngine(new FakeEngine({ numKvBlocks: 5, kvBlockSize: 4 }), tok, options, rec);
    await drain([0, 1, 2].map(() => serving.submit({ promptIds: [5, 6, 7, 8, 9], sampling: greedy, maxTokens: 10, ignoreEos: true })));
    expect(serving.scheduler.numPreemptions).toBeGreaterThan(0);
    expect(rec.of('scheduled')).toHaveLength(3);
    const lookups = rec.of('lookup');
    expect(lookups.length).toBe(3 + serving.scheduler.numPreemptions);
    expect(lookups.every((l) => l.hits === 0)).toBe(true);
    expect(rec.of('end').every((e) => e.completionTokens === 10 && e.phases.decodeS !== null)).toBe(true);
  });

  it('a request that ends while it waits has no phases to report', async () => {
    const options: ServingOptions = { scheduler: { maxNumSeqs: 1, maxNumBatchedTokens: 64, longPrefillTokenThreshold: 0, dbo }, maxQueuedRequests: 10 };
    const rec = new Recorder();
    const serving = new ServingEngine(new FakeEngine({ stepDelayMs: 2 }), tok, options, rec);
    const [running, waiting] = serving.submitAll([0, 1].map(() => ({ promptIds: [1, 2], sampling: greedy, maxTokens: 3 })));
    waiting!.abort();
    await drain([running!, waiting!]);
    const aborted = rec.of('end').find((e) => e.reason === 'abort')!;
    expect(aborted.phases).toEqual({ decodeS: null, inferenceS: null });
    expect(rec.of('scheduled')).toHaveLength(1);
  });
});
