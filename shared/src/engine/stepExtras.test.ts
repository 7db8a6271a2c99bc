import { describe, expect, it } from 'vitest';
import { buildStepPlan, type PlanSeq } from './stepPlanBuilder.js';
import { checkStepPlan } from './stepPlanCheck.js';

const limits = { vocabSize: 100, kvBlockSize: 4, numKvBlocks: 10 };
const decode = (extra: Partial<PlanSeq> = {}): PlanSeq => ({ tokenIds: [5], numCached: 3, blockTable: [1], ...extra });

describe('StepExtras', () => {
  it('is absent when no sequence asks for penalties, biases or logprobs (penalties at their neutral values count as off)', () => {
    const plan = buildStepPlan([decode(), decode({ penalties: { presence: 0, frequency: 0, repetition: 1, seen: new Map([[5, 1]]) } })]);
    expect(plan.extras).toBeUndefined();
    expect(Array.from(plan.minP)).toEqual([0, 0]);
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
});
