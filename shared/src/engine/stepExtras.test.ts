import { describe, expect, it } from 'vitest';
import { buildStepPlan, type PlanSeq } from './stepPlanBuilder.js';
import { checkStepPlan } from './stepPlanCheck.js';
import { SeenTokens } from './seenTokens.js';
import { defersTokenMask, emptyMaskRow, maskWordsPerRow, numMaskRows } from './stepExtrasCheck.js';

const limits = { vocabSize: 100, kvBlockSize: 4, numKvBlocks: 10 };
const decode = (extra: Partial<PlanSeq> = {}): PlanSeq => ({ tokenIds: [5], numCached: 3, blockTable: [1], ...extra });

describe('StepExtras', () => {
  it('is absent when no sequence asks for penalties, biases or logprobs (penalties at their neutral values count as off)', () => {
    const plan = buildStepPlan([decode(), decode({ penalties: { presence: 0, frequency: 0, repetition: 1, seen: new Map([[5, 1]]) } })]);
    expect(plan.extras).toBeUndefined();
    expect(Array.from(plan.minP)).toEqual([0, 0]);
  });

  it('copies a SeenTokens list as its typed arrays: the same CSR as the map it is, past its first growth', () => {
    const entries: [number, number][] = Array.from({ length: 90 }, (_, i) => [(i * 7) % 97, i % 3]);
    const fast = new SeenTokens();
    for (const [id, c] of entries) fast.set(id, c);
    fast.set(entries[5]![0], 9); // a count updated in place keeps its slot
    const slow = new Map(fast);
    const pen = (seen: ReadonlyMap<number, number>) => ({ presence: 0.5, frequency: 0.5, repetition: 1.1, seen });
    const a = buildStepPlan([decode({ penalties: pen(slow) }), decode({ penalties: pen(new Map([[1, 1]])) })]).extras!;
    const b = buildStepPlan([decode({ penalties: pen(fast) }), decode({ penalties: pen(new Map([[1, 1]])) })]).extras!;
    expect(Array.from(b.seenOffsets)).toEqual(Array.from(a.seenOffsets));
    expect(Array.from(b.seenTokenIds)).toEqual(Array.from(a.seenTokenIds));
    expect(Array.from(b.seenCounts)).toEqual(Array.from(a.seenCounts));
    expect(b.seenCounts[5]).toBe(9);
    // Token 1 is in both sequences' lists: distinct per sequence is all the check asks.
    expect(fast.has(1) || fast.has(0)).toBe(true);
    expect(checkStepPlan(buildStepPlan([decode({ penalties: pen(fast) }), decode({ penalties: pen(new Map([[1, 1], [0, 2]])) })]), limits)).toEqual([]);
    expect(() => fast.delete(3)).toThrow(/never removed/);
  });

  it('packs penalties, biases and logprob counts per sequence as CSR lists', () => {
    const plan = buildStepPlan([
      decode({ penalties: { presence: 0.5, frequency: 0.25, repetition: 1.2, seen: new Map([[7, 2], [9, 0]]) }, sampling: { minP: 0.1 } }),
      decode({ logitBias: new Map([[3, 100], [4, -Infinity]]), logprobs: 5 }),
      { tokenIds: [1, 2, 3], numCached: 0, blockTable: [2], sample: false, promptLogprobs: 2, nextPromptTokenId: 8 },
    ]);
    const x = plan.extras!;
    expect(Array.from(x.presencePenalty)).toEqual([0.5, 0, 0]);
    expect(Array.from(x.frequencyPenalty)).toEqual([0.25, 0, 0]);
    expect(Array.from(x.repetitionPenalty)).toEqual([Math.fround(1.2), 1, 1]);
    expect(Array.from(x.seenOffsets)).toEqual([0, 2, 2, 2]);
    expect(Array.from(x.seenTokenIds)).toEqual([7, 9]);
    expect(Array.from(x.seenCounts)).toEqual([2, 0]);
    expect(Array.from(x.biasOffsets)).toEqual([0, 0, 2, 2]);
    expect(Array.from(x.biasTokenIds)).toEqual([3, 4]);
    expect(Array.from(x.biasValues)).toEqual([100, -Infinity]);
    expect(Array.from(x.numLogprobs)).toEqual([-1, 5, -1]);
    expect(Array.from(x.numPromptLogprobs)).toEqual([-1, -1, 2]);
    expect(Array.from(x.nextPromptTokenIds)).toEqual([-1, -1, 8]);
    expect(Array.from(plan.minP)).toEqual([Math.fround(0.1), 0, 0]);
    expect(checkStepPlan(plan, limits)).toEqual([]);
  });

  it('names broken extras: offsets, ids outside the vocabulary or listed twice, a negative count, k beyond 20, a zero repetition penalty, a NaN bias', () => {
    const plan = buildStepPlan([decode({ logitBias: new Map([[3, 1]]), logprobs: 1 })]);
    const x = plan.extras!;
    x.biasTokenIds[0] = 100;
    x.numLogprobs[0] = 21;
    x.repetitionPenalty[0] = 0;
    x.biasValues[0] = NaN;
    x.seenOffsets[1] = 1;
    expect(checkStepPlan(plan, limits)).toEqual([
      'extras.seenOffsets[numSeqs] is 1, expected the entry count 0',
      'extras.biasTokenIds[0] is 100, outside the vocabulary [0, 100)',
      'extras.repetitionPenalty[0] is 0; expected a finite number > 0 (1 = off)',
      'extras.numLogprobs[0] is 21; expected -1 (none) or 0..20',
      'extras.biasValues[0] is NaN; expected a number (-Infinity bans the token)',
    ]);
    const twice = buildStepPlan([decode({ penalties: { presence: 1, frequency: 0, repetition: 1, seen: new Map([[3, 1], [4, 0]]) } })]);
    twice.extras!.seenTokenIds[1] = 3;
    twice.extras!.seenCounts[0] = -2;
    expect(checkStepPlan(twice, limits)).toEqual([
      'extras.seenTokenIds of sequence 0 list token 3 twice; expected distinct ids (one entry per token)',
      'extras.seenCounts[0] is -2; expected >= 0 (0 = prompt only)',
    ]);
    const noMinP = buildStepPlan([decode()]);
    noMinP.minP[0] = 2;
    expect(checkStepPlan(noMinP)).toEqual(['minP[0] is 2; expected [0, 1] (0 = off)']);
  });

  it('with { contents: false } checks the shape only: offsets and per-sequence settings, not the lists\' entries or the mask\'s bits', () => {
    const plan = buildStepPlan([
      decode({ penalties: { presence: 1, frequency: 0, repetition: 1, seen: new Map([[3, 1], [4, 0]]) }, logitBias: new Map([[3, 1]]), constrained: true }),
    ], { tokenMask: new Int32Array(maskWordsPerRow(100)) });
    const x = plan.extras!;
    x.seenTokenIds[1] = 3; // listed twice
    x.seenCounts[0] = -2;
    x.biasTokenIds[0] = 100; // outside the vocabulary
    x.biasValues[0] = NaN; // and the mask row allows no token
    expect(checkStepPlan(plan, limits, { contents: false })).toEqual([]);
    expect(checkStepPlan(plan, limits)).toHaveLength(5);
    x.seenOffsets[1] = 3;
    x.repetitionPenalty[0] = 0;
    x.tokenMask = new Int32Array(3);
    expect(checkStepPlan(plan, limits, { contents: false })).toEqual([
      'extras.seenOffsets[numSeqs] is 3, expected the entry count 2',
      'extras.repetitionPenalty[0] is 0; expected a finite number > 0 (1 = off)',
      'extras.tokenMask has 3 words, expected 1 rows x 4 words (ceil(vocabSize 100 / 32)) = 4',
    ]);
    (x as { seenCounts: unknown }).seenCounts = [1, 0];
    expect(checkStepPlan(plan, limits, { contents: false })).toEqual(['extras.seenCounts must be an Int32Array']);
  });

  it('maskRows are -1 by default; a sequence that only asks for a mask row brings the extras, rows numbered in sequence order', () => {
    expect(Array.from(buildStepPlan([decode({ logprobs: 0 }), decode()]).extras!.maskRows)).toEqual([-1, -1]);
    const plan = buildStepPlan([decode({ constrained: true }), decode(), decode({ constrained: true })]);
    const x = plan.extras!;
    expect(Array.from(x.maskRows)).toEqual([0, -1, 1]);
    expect(x.tokenMask).toBeUndefined();
    expect(Array.from(x.numLogprobs)).toEqual([-1, -1, -1]);
    expect(numMaskRows(plan)).toBe(2);
    expect(defersTokenMask(plan)).toBe(true);
    expect(checkStepPlan(plan, limits)).toEqual([]);
    const mask = new Int32Array(2 * maskWordsPerRow(100)).fill(1);
    const given = buildStepPlan([decode({ constrained: true }), decode(), decode({ constrained: true })], { tokenMask: mask });
    expect(given.extras!.tokenMask).toBe(mask);
    expect(defersTokenMask(given)).toBe(false);
    expect(checkStepPlan(given, limits)).toEqual([]);
    expect(() => buildStepPlan([decode()], { tokenMask: mask })).toThrow(/tokenMask was given but no sequence is constrained/);
  });

  it('names broken mask rows: out of range, used twice, on an unsampled sequence; a token mask of the wrong length or with an empty row', () => {
    const plan = buildStepPlan([decode({ constrained: true }), decode({ constrained: true }), { ...decode(), sample: false }]);
    plan.extras!.maskRows.set([1, 1, -2]);
    expect(checkStepPlan(plan, limits)).toEqual([
      'extras.maskRows[1] is 1, a row another sequence uses; expected each row once',
      'extras.maskRows[2] is -2; expected -1 (none) or a row in [0, 2) (2 sequences have a row)',
    ]);
    const unsampled = buildStepPlan([{ ...decode(), sample: false, constrained: true }]);
    expect(checkStepPlan(unsampled, limits)).toEqual([
      'extras.maskRows[0] is 0 but sequence 0 samples no token (sampleMask 0); only sampled sequences take a mask row',
    ]);
    const short = buildStepPlan([decode({ constrained: true })], { tokenMask: new Int32Array(3).fill(-1) });
    expect(checkStepPlan(short, limits)).toEqual(['extras.tokenMask has 3 words, expected 1 rows x 4 words (ceil(vocabSize 100 / 32)) = 4']);
    // Vocabulary 100: the last word holds tokens 96..99; bits above them do not count.
    const empty = buildStepPlan([decode({ constrained: true }), decode({ constrained: true })], { tokenMask: new Int32Array(8) });
    empty.extras!.tokenMask!.set([0, 0, 0, 1 << 3], 0);
    empty.extras!.tokenMask!.set([0, 0, 0, 1 << 4], 4);
    expect(checkStepPlan(empty, limits)).toEqual(['extras.tokenMask row 1 allows no token of the vocabulary; a mask row must allow at least one']);
    expect(emptyMaskRow(new Int32Array([0, 0, 0, 1 << 3]), 100)).toBe(-1);
    const typed = buildStepPlan([decode({ constrained: true })]);
    (typed.extras as { tokenMask?: unknown }).tokenMask = [1, 2, 3, 4];
    expect(checkStepPlan(typed, limits)).toEqual(['extras.tokenMask must be an Int32Array when present (absent = deferred)']);
    const none = buildStepPlan([decode({ logprobs: 1 })]);
    none.extras!.tokenMask = new Int32Array(4);
    expect(checkStepPlan(none, limits)).toEqual(['extras.tokenMask is given but no sequence has a mask row (maskRows all -1)']);
    const missing = buildStepPlan([decode({ logprobs: 1 })]);
    (missing.extras as { maskRows?: Int32Array }).maskRows = undefined;
    expect(checkStepPlan(missing, limits)).toEqual(['extras.maskRows must be an Int32Array']);
  });
});
