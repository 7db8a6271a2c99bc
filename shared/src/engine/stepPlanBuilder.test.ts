import { describe, expect, it } from 'vitest';
import { buildStepPlan } from './stepPlanBuilder.js';

describe('buildStepPlan', () => {
  it('lays out tokens, positions, offsets, block tables and sampling per sequence', () => {
    const plan = buildStepPlan(
      [
        { tokenIds: [5, 6, 7], numCached: 0, blockTable: [2], sample: false },
        { tokenIds: [9], numCached: 6, blockTable: [4, 1], sampling: { temperature: 0.5, topK: 3, topP: 0.9, seed: 2 ** 32 + 42 } },
      ],
      { stageSplit: 1, returnLogits: true },
    );
    expect(plan.numSeqs).toBe(2);
    expect(Array.from(plan.tokenIds)).toEqual([5, 6, 7, 9]);
    expect(Array.from(plan.positions)).toEqual([0, 1, 2, 6]);
    expect(Array.from(plan.tokenOffsets)).toEqual([0, 3, 4]);
    expect(Array.from(plan.contextLens)).toEqual([3, 7]);
    expect(plan.maxBlocksPerSeq).toBe(2);
    expect(Array.from(plan.blockTables)).toEqual([2, 0, 4, 1]);
    expect(Array.from(plan.sampleMask)).toEqual([0, 1]);
    expect(Array.from(plan.temperature)).toEqual([0, 0.5]);
    expect(Array.from(plan.topK)).toEqual([0, 3]);
    expect(plan.topP[0]).toBe(1);
    expect(plan.topP[1]).toBeCloseTo(0.9);
    expect(Array.from(plan.seeds)).toEqual([0, 42]);
    expect(plan.stageSplit).toBe(1);
    expect(plan.returnLogits).toBe(true);
  });

  it('defaults to one stage, no logits, greedy sampling', () => {
    const plan = buildStepPlan([
      { tokenIds: [1], numCached: 0, blockTable: [] },
      { tokenIds: [2], numCached: 0, blockTable: [] },
    ]);
    expect(plan.stageSplit).toBe(2);
    expect(plan.returnLogits).toBe(false);
    expect(plan.maxBlocksPerSeq).toBe(1);
    expect(Array.from(plan.sampleMask)).toEqual([1, 1]);
    expect(Array.from(plan.topP)).toEqual([1, 1]);
  });

  it('sets stateSlots when the sequences have recurrent-state slots, and leaves them out otherwise', () => {
    const plan = buildStepPlan([
      { tokenIds: [1, 2], numCached: 0, blockTable: [0], stateSlot: 3 },
      { tokenIds: [4], numCached: 5, blockTable: [1, 2], stateSlot: 0 },
    ]);
    expect(plan.stateSlots).toBeInstanceOf(Int32Array);
    expect(Array.from(plan.stateSlots!)).toEqual([3, 0]);
    expect(buildStepPlan([{ tokenIds: [1], numCached: 0, blockTable: [0] }]).stateSlots).toBeUndefined();
    expect('stateSlots' in buildStepPlan([{ tokenIds: [1], numCached: 0, blockTable: [0] }])).toBe(false);
  });

  it('throws, naming the sequence, when only some sequences have a state slot', () => {
    expect(() =>
      buildStepPlan([
        { tokenIds: [1], numCached: 0, blockTable: [0], stateSlot: 0 },
        { tokenIds: [2], numCached: 0, blockTable: [1], stateSlot: 1 },
        { tokenIds: [3], numCached: 0, blockTable: [2] },
      ]),
    ).toThrow('buildStepPlan: sequence 2 has no stateSlot but sequence 0 has one');
    expect(() =>
      buildStepPlan([
        { tokenIds: [1], numCached: 0, blockTable: [0] },
        { tokenIds: [2], numCached: 0, blockTable: [1], stateSlot: 1 },
      ]),
    ).toThrow('sequence 0 has no stateSlot but sequence 1 has one');
  });
});
