import { buildStepPlan, checkStepPlan, defersTokenMask } from '@afd/shared';
import { describe, expect, it } from 'vitest';
import { BIAS_ENTRIES, SEEN_TOKENS, describeExtras, extrasOf, halfVocabMask } from './decodeExtras.js';

describe('afd-bench decode extras', () => {
  it('gives every sequence 256 distinct seen tokens, a 16-entry bias apart from them, and k logprobs; the plan checks', () => {
    const vocab = 151936;
    const seqs = [0, 1].map((s) => ({ tokenIds: [7], numCached: 9, blockTable: [s], ...extrasOf({ topLogprobs: 5, penalties: true, tokenMask: false }, s, vocab) }));
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
    expect(extrasOf({ topLogprobs: null, penalties: false, tokenMask: false }, 0, 100)).toEqual({});
    expect(describeExtras({ topLogprobs: null, penalties: false, tokenMask: false })).toBeNull();
    expect(describeExtras({ topLogprobs: 0, penalties: true, tokenMask: false })).toBe('top-logprobs 0 + penalties');
    expect(describeExtras({ topLogprobs: null, penalties: false, tokenMask: true })).toBe('token-mask');
  });

  it('--token-mask: every sequence takes a mask row, deferred; the mask allows every other 32-token block, half the vocabulary', () => {
    const vocab = 151936;
    const seqs = [0, 1, 2].map((s) => ({ tokenIds: [7], numCached: 9, blockTable: [s], ...extrasOf({ topLogprobs: null, penalties: false, tokenMask: true }, s, vocab) }));
    const plan = buildStepPlan(seqs);
    expect(Array.from(plan.extras!.maskRows)).toEqual([0, 1, 2]);
    expect(defersTokenMask(plan)).toBe(true);
    const mask = halfVocabMask(3, vocab);
    const words = Math.ceil(vocab / 32);
    expect(mask.length).toBe(3 * words);
    const allowed = (row: number, t: number): boolean => ((mask[row * words + (t >> 5)]! >>> (t & 31)) & 1) === 1;
    expect([0, 31, 32, 63, 64].map((t) => allowed(2, t))).toEqual([true, true, false, false, true]);
    let count = 0;
    for (let t = 0; t < vocab; t++) count += allowed(1, t) ? 1 : 0;
    expect(count).toBe(vocab / 2);
    expect(checkStepPlan(buildStepPlan(seqs, { tokenMask: mask }), { vocabSize: vocab, kvBlockSize: 16, numKvBlocks: 3 })).toEqual([]);
  });
});
