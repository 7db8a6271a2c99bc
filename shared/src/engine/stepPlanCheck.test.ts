import { describe, expect, it } from 'vitest';
import type { StepPlan } from './step.js';
import { checkStepPlan, numStagesOf, stageTokenCounts } from './stepPlanCheck.js';

/** Two sequences: a 3-token prefill and a 1-token decode, 2 blocks per sequence. */
function plan(overrides: Partial<StepPlan> = {}): StepPlan {
  return {
    numSeqs: 2,
    tokenIds: Int32Array.from([11, 12, 13, 99]),
    positions: Int32Array.from([0, 1, 2, 7]),
    tokenOffsets: Int32Array.from([0, 3, 4]),
    contextLens: Int32Array.from([3, 8]),
    maxBlocksPerSeq: 2,
    blockTables: Int32Array.from([0, 0, 1, 2]),
    sampleMask: Uint8Array.from([1, 1]),
    temperature: Float32Array.from([0, 0.7]),
    topK: Int32Array.from([0, 40]),
    topP: Float32Array.from([1, 0.9]),
    seeds: Uint32Array.from([1, 2]),
    stageSplit: 2,
    returnLogits: false,
    ...overrides,
  };
}

describe('StepPlan checks', () => {
  it('accepts a well-formed plan and an empty one', () => {
    expect(checkStepPlan(plan())).toEqual([]);
    const empty = plan({
      numSeqs: 0,
      tokenIds: new Int32Array(),
      positions: new Int32Array(),
      tokenOffsets: Int32Array.from([0]),
      contextLens: new Int32Array(),
      blockTables: new Int32Array(),
      sampleMask: new Uint8Array(),
      temperature: new Float32Array(),
      topK: new Int32Array(),
      topP: new Float32Array(),
      seeds: new Uint32Array(),
      stageSplit: 0,
    });
    expect(checkStepPlan(empty)).toEqual([]);
    expect(stageTokenCounts(empty)).toEqual([0]);
  });

  it('derives stages and per-stage token counts', () => {
    expect(numStagesOf(plan())).toBe(1);
    expect(stageTokenCounts(plan())).toEqual([4]);
    expect(numStagesOf(plan({ stageSplit: 1 }))).toBe(2);
    expect(stageTokenCounts(plan({ stageSplit: 1 }))).toEqual([3, 1]);
    expect(numStagesOf(plan({ stageSplit: 0 }))).toBe(1);
  });

  it('names each inconsistency', () => {
    expect(checkStepPlan(plan({ tokenIds: Int32Array.from([1]) }))).toEqual(['tokenIds has 1 entries, expected 4 (tokenOffsets[numSeqs])']);
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 3]) }))[0]).toContain('tokenOffsets has 2 entries');
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 4, 4]) }))).toContain('sequence 1 has 0 tokens; every sequence has at least one');
    expect(checkStepPlan(plan({ contextLens: Int32Array.from([2, 8]) }))).toEqual(['contextLens[0] is 2 but the sequence brings 3 new tokens']);
    expect(checkStepPlan(plan({ blockTables: Int32Array.from([0]) }))[0]).toContain('numSeqs x maxBlocksPerSeq = 4');
    expect(checkStepPlan(plan({ stageSplit: 3 }))[0]).toContain('stageSplit is 3');
    expect(checkStepPlan(plan({ seeds: Uint32Array.from([1]) }))).toEqual(['seeds has 1 entries, expected numSeqs = 2']);
    expect(checkStepPlan(plan({ topP: Float32Array.from([0, 1]) }))).toEqual(['topP[0] is 0; expected (0, 1]']);
    expect(checkStepPlan(plan({ temperature: Float32Array.from([-1, 0]) }))).toEqual(['temperature[0] is -1; expected >= 0']);
    expect(checkStepPlan(plan({ numSeqs: -1 }))).toEqual(['numSeqs is -1; expected a non-negative integer']);
  });
});
