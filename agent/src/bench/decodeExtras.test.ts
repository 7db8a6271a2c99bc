import { buildStepPlan, checkStepPlan } from '@afd/shared';
import { describe, expect, it } from 'vitest';
import { BIAS_ENTRIES, SEEN_TOKENS, describeExtras, extrasOf } from './decodeExtras.js';

describe('afd-bench decode extras', () => {
  it('gives every sequence 256 distinct seen tokens, a 16-entry bias apart from them, and k logprobs; the plan checks', () => {
    const vocab = 151936;
    const seqs = [0, 1].map((s) => ({ tokenIds: [7], numCached: 9, blockTable: [s], ...extrasOf({ topLogprobs: 5, penalties: true }, s, vocab) }));
    const x = buildStepPlan(seqs).extras!;
    expect(Array.from(x.seenOffsets)).toEqual([0, SEEN_TOKENS, 2 * SEEN_TOKENS]);
    expect(Array.from(x.biasOffsets)).toEqual([0, BIAS_ENTRIES, 2 * BIAS_ENTRIES]);
    expect(Array.from(x.numLogprobs)).toEqual([5, 5]);
    expect(Array.from(x.repetitionPenalty)).toEqual([Math.fround(1.1), Math.fround(1.1)]);
    const first = new Set([...x.seenTokenIds.subarray(0, SEEN_TOKENS), ...x.biasTokenIds.subarray(0, BIAS_ENTRIES)]);
    expect(first.size).toBe(SEEN_TOKENS + BIAS_ENTRIES);
    expect(x.seenCounts.filter((c) => c === 0).length).toBe(2 * (SEEN_TOKENS / 4));
    expect(checkStepPlan(buildStepPlan(seqs), { vocabSize: vocab, kvBlockSize: 16, numKvBlocks: 2 })).toEqual([]);
  });

  it('adds nothing without the flags, and names what it adds', () => {
    expect(extrasOf({ topLogprobs: null, penalties: false }, 0, 100)).toEqual({});
    expect(describeExtras({ topLogprobs: null, penalties: false })).toBeNull();
    expect(describeExtras({ topLogprobs: 0, penalties: true })).toBe('top-logprobs 0 + penalties');
  });
});
