import { describe, expect, it } from 'vitest';
import { buildStepPlan, StepPlanError, validateStepPlan } from './enginePlan.js';

const limits = { vocabSize: 100, kvBlockSize: 4, numKvBlocks: 10 };

describe('buildStepPlan', () => {
  it('lays out tokens, positions, offsets, block tables and sampling per sequence', () => {
    const plan = buildStepPlan(
      [
        { tokenIds: [5, 6, 7], numCached: 0, blockTable: [2], sample: false },
        { tokenIds: [9], numCached: 6, blockTable: [4, 1], sampling: { temperature: 0.5, topK: 3, topP: 0.9, seed: 42 } },
      ],
      { stageSplit: 1, returnLogits: true },
    );
    expect(Array.from(plan.tokenIds)).toEqual([5, 6, 7, 9]);
    expect(Array.from(plan.positions)).toEqual([0, 1, 2, 6]);
    expect(Array.from(plan.tokenOffsets)).toEqual([0, 3, 4]);
    expect(Array.from(plan.contextLens)).toEqual([3, 7]);
    expect(plan.maxBlocksPerSeq).toBe(2);
    expect(Array.from(plan.blockTables)).toEqual([2, -1, 4, 1]);
    expect(Array.from(plan.sampleMask)).toEqual([0, 1]);
    expect(plan.temperature[1]).toBeCloseTo(0.5);
    expect(plan.topK[1]).toBe(3);
    expect(plan.seeds[1]).toBe(42);
    expect(plan.stageSplit).toBe(1);
    expect(() => validateStepPlan(plan, limits)).not.toThrow();
  });
});

describe('validateStepPlan', () => {
  const good = () => buildStepPlan([{ tokenIds: [1, 2, 3, 4, 5], numCached: 0, blockTable: [0, 9] }]);
  const cases: [string, (p: ReturnType<typeof good>) => void, RegExp][] = [
    ['token outside the vocabulary', (p) => (p.tokenIds[2] = 100), /token id 100 at index 2 is outside the vocabulary \[0, 100\)/],
    ['block id outside the cache', (p) => (p.blockTables[1] = 10), /slot 1 holds block 10, outside \[0, 10\)/],
    ['too few block slots', (p) => (p.contextLens[0] = 9), /needs 3 blocks of 4 tokens but maxBlocksPerSeq is 2/],
    ['non-contiguous positions', (p) => (p.positions[0] = 1), /token 0 \(sequence 0\) has position 1, expected 0/],
    ['empty sequence', (p) => p.tokenOffsets.set([0, 0]), /tokenOffsets\[1\]|has no tokens|expected 0/],
    ['negative temperature', (p) => (p.temperature[0] = -1), /temperature -1/],
    ['topP of zero', (p) => (p.topP[0] = 0), /topP 0 must be in \(0, 1\]/],
    ['stageSplit of zero', (p) => (p.stageSplit = 0), /stageSplit must be an integer >= 1/],
    ['wrong typed array', (p) => ((p as { positions: unknown }).positions = new Float32Array(5)), /positions must be a Int32Array/],
    ['wrong length', (p) => ((p as { seeds: unknown }).seeds = new Uint32Array(2)), /seeds has 2 elements, expected 1/],
  ];
  it.each(cases)('rejects %s', (_name, mutate, message) => {
    const p = good();
    mutate(p);
    expect(() => validateStepPlan(p, limits)).toThrow(StepPlanError);
    expect(() => validateStepPlan(p, limits)).toThrow(message);
  });
});
