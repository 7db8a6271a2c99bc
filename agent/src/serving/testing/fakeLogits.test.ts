/**
 * The FakeEngine's rules, checked against a dense, obvious implementation over a small
 * vocabulary (the engine team compares its device results with the same rules), and the
 * FakeEngine honouring a plan's extras end to end.
 */
import { describe, expect, it } from 'vitest';
import { buildStepPlan } from '@afd/shared';
import { FakeEngine } from './FakeEngine.js';
import { fakeModelLogits, logprobRow, logSumExp, packLogprobRows, processLogits, rankOf, sampleRow, topTokens, type RowProcessing, type SparseLogits } from './fakeLogits.js';

const dense = (row: SparseLogits): number[] => Array.from({ length: row.vocabSize }, (_, t) => row.explicit.get(t) ?? row.base);

/** The rules of step.ts on a dense row, written the obvious way. */
function denseProcess(logits: number[], p: RowProcessing): number[] {
  const out = logits.map((l, t) => l + (p.bias.get(t) ?? 0));
  for (const [t, count] of p.seen) {
    let l = out[t]!;
    l = l > 0 ? l / p.repetition : l * p.repetition;
    l -= p.frequency * count + (count > 0 ? p.presence : 0);
    out[t] = l;
  }
  const temp = p.temperature > 0 ? p.temperature : 1;
  return out.map((l) => l / temp);
}

function denseLogSoftmax(logits: number[]): number[] {
  const m = Math.max(...logits);
  const lse = m + Math.log(logits.reduce((s, l) => s + Math.exp(l - m), 0));
  return logits.map((l) => l - lse);
}

/** Token ids most likely first, ties to the lower id. */
const denseOrder = (logits: number[]): number[] => logits.map((_, t) => t).sort((a, b) => logits[b]! - logits[a]! || a - b);

const row: SparseLogits = { vocabSize: 12, base: 0.5, explicit: new Map([[3, 2], [7, -1], [9, 0.5], [10, 0.5], [1, 4]]) };
const processing: RowProcessing = {
  bias: new Map([[2, 1.5], [7, 3]]),
  presence: 0.25,
  frequency: 0.5,
  repetition: 1.3,
  seen: new Map([[3, 2], [7, 0], [1, 1], [11, 0]]),
  temperature: 0.7,
};

describe('fake logits: the StepExtras rules', () => {
  it('processes bias, repetition, frequency, presence and temperature like the dense reference', () => {
    const got = dense(processLogits(row, processing));
    const want = denseProcess(dense(row), processing);
    got.forEach((l, t) => expect(l).toBeCloseTo(want[t]!, 12));
    // Temperature 0 reports temperature-1 values.
    expect(dense(processLogits(row, { ...processing, temperature: 0 }))).toEqual(denseProcess(dense(row), { ...processing, temperature: 1 }));
  });

  it('computes log-softmax, top k (ties to the lower id) and ranks exactly', () => {
    for (const r of [row, processLogits(row, processing)]) {
      const lps = denseLogSoftmax(dense(r));
      const order = denseOrder(dense(r));
      expect(logSumExp(r)).toBeCloseTo(Math.log(dense(r).reduce((s, l) => s + Math.exp(l), 0)), 12);
      expect(topTokens(r, 12).map((t) => t.tokenId)).toEqual(order);
      expect(topTokens(r, 4).map((t) => t.tokenId)).toEqual(order.slice(0, 4));
      for (let t = 0; t < 12; t++) expect(rankOf(r, t)).toBe(order.indexOf(t) + 1);
      const lr = logprobRow(r, 9, 3);
      expect(lr.chosen.logprob).toBeCloseTo(lps[9]!, 12);
      expect(lr.rank).toBe(order.indexOf(9) + 1);
      expect(lr.top.map((e) => e.tokenId)).toEqual(order.slice(0, 3));
      lr.top.forEach((e) => expect(e.logprob).toBeCloseTo(lps[e.tokenId]!, 12));
    }
  });

  it('bans a token with a -Infinity bias (log-probability -Infinity, last rank)', () => {
    const r = processLogits(row, { ...processing, bias: new Map([[1, -Infinity]]), seen: new Map() });
    const lr = logprobRow(r, 1, 2);
    expect(lr.chosen.logprob).toBe(-Infinity);
    expect(lr.rank).toBe(12);
    expect(sampleRow(r, { temperature: 0, topK: 0, topP: 1, minP: 0, seed: 1, position: 4 })).toBe(3);
  });

  it('samples greedily at temperature 0; top-k 1 and min-p 1 leave only the most likely token; a seed makes draws repeatable', () => {
    const r = processLogits(row, processing);
    const best = denseOrder(dense(r))[0]!;
    const at = (over: Partial<Parameters<typeof sampleRow>[1]>): number => sampleRow(r, { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 5, position: 3, ...over });
    expect(at({ temperature: 0 })).toBe(best);
    expect(at({ topK: 1 })).toBe(best);
    expect(at({ minP: 1 })).toBe(best);
    // A flat row: every position draws some token, repeatably, and different seeds spread.
    const flat: SparseLogits = { vocabSize: 1000, base: 0, explicit: new Map() };
    const draws = Array.from({ length: 50 }, (_, seed) => sampleRow(flat, { temperature: 1, topK: 0, topP: 1, minP: 0, seed, position: 0 }));
    expect(new Set(draws).size).toBeGreaterThan(30);
    expect(draws.every((t) => t >= 0 && t < 1000)).toBe(true);
    expect(sampleRow(flat, { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 7, position: 0 })).toBe(draws[7]);
    // top-k 10 over a flat row keeps ids 0..9 (ties to the lower id).
    for (let seed = 0; seed < 20; seed++) expect(sampleRow(flat, { temperature: 1, topK: 10, topP: 1, minP: 0, seed, position: 1 })).toBeLessThan(10);
  });

  it('packs rows in the contract layout: entry 0 the chosen token, then the top k, -1 / NaN padding to the widest k', () => {
    const r = fakeModelLogits(100, 42, [1, 2, 3]);
    const packed = packLogprobRows([[logprobRow(r, 2, 2)], [], [logprobRow(r, 42, 0), logprobRow(r, 1, 0)]], [2, -1, 0]);
    expect(Array.from(packed.rowOffsets)).toEqual([0, 1, 1, 3]);
    expect(packed.width).toBe(3);
    expect(Array.from(packed.tokenIds)).toEqual([2, 42, 1, 42, -1, -1, 1, -1, -1]);
    expect(Array.from(packed.ranks)).toEqual([3, 1, 2]);
    expect(Number.isNaN(packed.logprobs[4])).toBe(true);
  });
});

describe('FakeEngine with extras', () => {
  const blockTable = [0, 1];

  it('a +100 bias makes the biased token the sampled one; logprobs report the processed row', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks: 8 });
    const plan = buildStepPlan([{ tokenIds: [5, 6, 7], numCached: 0, blockTable, logitBias: new Map([[77, 100]]), logprobs: 2, sampling: { temperature: 1, seed: 3 } }]);
    const r = await engine.step(plan);
    expect(r.tokenIds[0]).toBe(77);
    expect(r.logprobs!.width).toBe(3);
    expect(Array.from(r.logprobs!.tokenIds.subarray(0, 2))).toEqual([77, 77]);
    expect(r.logprobs!.ranks[0]).toBe(1);
    expect(r.promptLogprobs).toBeUndefined();
  });

  it('returns prompt rows for every token whose next token is known, with nextPromptTokenId on a non-final chunk', async () => {
    const engine = new FakeEngine({ kvBlockSize: 4, numKvBlocks: 8 });
    const chunk = buildStepPlan([{ tokenIds: [5, 6, 7], numCached: 0, blockTable, sample: false, promptLogprobs: 1, nextPromptTokenId: 8 }]);
    const a = await engine.step(chunk);
    expect(Array.from(a.promptLogprobs!.rowOffsets)).toEqual([0, 3]);
    expect(Array.from(a.promptLogprobs!.tokenIds.filter((_, j) => j % 2 === 0))).toEqual([6, 7, 8]);
    expect(a.logprobs).toBeUndefined();
    const last = buildStepPlan([{ tokenIds: [8, 9], numCached: 3, blockTable, promptLogprobs: 1 }]);
    const b = await engine.step(last);
    expect(Array.from(b.promptLogprobs!.rowOffsets)).toEqual([0, 1]); // 9's next token is the sampled one
    expect(b.promptLogprobs!.tokenIds[0]).toBe(9);
  });

  it('refuses a plan whose extras break the contract', async () => {
    const engine = new FakeEngine({ vocabSize: 100 });
    const plan = buildStepPlan([{ tokenIds: [5], numCached: 0, blockTable: [0], logitBias: new Map([[100, 1]]) }]);
    await expect(engine.step(plan)).rejects.toThrow(/biasTokenIds\[0\] is 100, outside the vocabulary/);
  });
});
