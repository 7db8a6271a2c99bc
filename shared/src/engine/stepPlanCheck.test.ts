import { describe, expect, it } from 'vitest';
import type { StepPlan } from './step.js';
import { buildStepPlan } from './stepPlanBuilder.js';
import { checkStepPlan, StepPlanError, validateStepPlan } from './stepPlanCheck.js';

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
    minP: Float32Array.from([0, 0.05]),
    stageSplit: 2,
    returnLogits: false,
    ...overrides,
  };
}

const limits = { vocabSize: 100, kvBlockSize: 4, numKvBlocks: 10 };

describe('checkStepPlan', () => {
  it('accepts a well-formed plan, with and without engine limits, and a two-stage split', () => {
    expect(checkStepPlan(plan())).toEqual([]);
    expect(checkStepPlan(plan(), limits)).toEqual([]);
    expect(checkStepPlan(plan({ stageSplit: 1 }), limits)).toEqual([]);
    expect(() => validateStepPlan(plan(), limits)).not.toThrow();
  });

  it('refuses an empty step and a stage split outside [1, numSeqs] (the engine needs both)', () => {
    expect(checkStepPlan(plan({ numSeqs: 0, tokenOffsets: Int32Array.from([0]) }))).toEqual([
      'numSeqs is 0; expected an integer in [1, 2147483647] (a step runs at least one sequence)',
    ]);
    expect(checkStepPlan(plan({ numSeqs: -1 }))[0]).toContain('numSeqs is -1');
    expect(checkStepPlan(plan({ numSeqs: 1.5 }))[0]).toContain('numSeqs is 1.5');
    expect(checkStepPlan(plan({ numSeqs: 2 ** 32 + 2 }))[0]).toContain('numSeqs is 4294967298');
    expect(checkStepPlan(plan({ stageSplit: 0 }))).toEqual(['stageSplit is 0; expected an integer in [1, numSeqs = 2] (numSeqs for one stage)']);
    expect(checkStepPlan(plan({ stageSplit: 3 }))[0]).toContain('stageSplit is 3');
    expect(checkStepPlan(plan({ maxBlocksPerSeq: 0, blockTables: new Int32Array() }))).toEqual(['maxBlocksPerSeq is 0; expected an integer >= 1']);
  });

  it('names each wrong array class and length', () => {
    expect(checkStepPlan(plan({ tokenIds: Int32Array.from([1]) }))).toEqual(['tokenIds has 1 entries, expected tokenOffsets[numSeqs] = 4']);
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 3]) }))).toEqual(['tokenOffsets has 2 entries, expected numSeqs + 1 = 3']);
    expect(checkStepPlan(plan({ blockTables: Int32Array.from([0]) }))).toEqual(['blockTables has 1 entries, expected numSeqs x maxBlocksPerSeq = 4']);
    expect(checkStepPlan(plan({ seeds: Uint32Array.from([1]) }))).toEqual(['seeds has 1 entries, expected numSeqs = 2']);
    expect(checkStepPlan(plan({ positions: new Float32Array(4) as never }))).toEqual(['positions must be an Int32Array (got Float32Array)']);
    expect(checkStepPlan(plan({ tokenIds: [11, 12, 13, 99] as never }))).toEqual(['tokenIds must be an Int32Array (got Array)']);
    expect(checkStepPlan(plan({ returnLogits: 1 as never }))).toEqual(['returnLogits must be a boolean (got number)']);
    expect(checkStepPlan(null as never)).toEqual(['a StepPlan must be an object (got null)']);
  });

  it('names each inconsistent token, offset and sampling entry', () => {
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 4, 4]) }))).toEqual([
      'contextLens[0] is 3 but sequence 0 brings 4 new tokens',
      'sequence 1 has tokens [4, 4) of 4; tokenOffsets must strictly increase (every sequence has at least one token)',
    ]);
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 1000, 4]) }))[0]).toContain('sequence 0 has tokens [0, 1000) of 4');
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([0, 3, 1]) }))[0]).toContain('tokenOffsets[numSeqs] is 1; expected the token count');
    expect(checkStepPlan(plan({ contextLens: Int32Array.from([2, 8]) }))).toEqual(['contextLens[0] is 2 but sequence 0 brings 3 new tokens']);
    expect(checkStepPlan(plan({ positions: Int32Array.from([1, 1, 2, 7]) }))).toEqual([
      'token 0 (sequence 0) has position 1, expected 0: new tokens fill [contextLen - n, contextLen)',
    ]);
    expect(checkStepPlan(plan({ sampleMask: Uint8Array.from([2, 1]) }))).toEqual(['sampleMask[0] is 2; expected 0 or 1']);
    expect(checkStepPlan(plan({ topP: Float32Array.from([0, 1]) }))).toEqual(['topP[0] is 0; expected (0, 1] (1 = off)']);
    expect(checkStepPlan(plan({ temperature: Float32Array.from([-1, 0]) }))).toEqual(['temperature[0] is -1; expected a finite number >= 0 (0 = greedy)']);
    expect(checkStepPlan(plan({ temperature: Float32Array.from([0, Infinity]) }))[0]).toContain('temperature[1] is Infinity');
    expect(checkStepPlan(plan({ temperature: Float32Array.from([NaN, 0]) }))[0]).toContain('temperature[0] is NaN');
    expect(checkStepPlan(plan({ topK: Int32Array.from([0, -1]) }))).toEqual(['topK[1] is -1; expected >= 0 (0 = off)']);
    // Sampling settings are checked whether or not the sequence samples this step.
    expect(checkStepPlan(plan({ sampleMask: Uint8Array.from([0, 1]), topP: Float32Array.from([2, 1]) }))).toEqual(['topP[0] is 2; expected (0, 1] (1 = off)']);
    expect(checkStepPlan(plan({ tokenOffsets: Int32Array.from([1, 3, 4]) }))).toContain('tokenOffsets[0] is 1, expected 0');
  });

  it('with engine limits, names tokens outside the vocabulary and blocks outside the KV cache', () => {
    expect(checkStepPlan(plan({ tokenIds: Int32Array.from([11, 100, 13, 99]) }), limits)).toEqual(['token id 100 at index 1 is outside the vocabulary [0, 100)']);
    expect(checkStepPlan(plan({ tokenIds: Int32Array.from([11, -1, 13, 99]) }))).toEqual(['token id -1 at index 1 is outside the vocabulary [0, vocabSize)']);
    expect(checkStepPlan(plan({ blockTables: Int32Array.from([0, 0, 1, 10]) }), limits)).toEqual([
      'sequence 1: block table slot 1 holds block 10, outside [0, 10) (the engine has 10 KV blocks)',
    ]);
    expect(checkStepPlan(plan({ contextLens: Int32Array.from([9, 8]), positions: Int32Array.from([6, 7, 8, 7]) }), limits)).toEqual([
      'sequence 0: contextLen 9 needs 3 blocks of 4 tokens but maxBlocksPerSeq is 2',
    ]);
  });

  it('validateStepPlan throws StepPlanError quoting the first problems and counting the rest', () => {
    const bad = plan({ temperature: Float32Array.from([-1, -1]), topP: Float32Array.from([0, 0]), topK: Int32Array.from([-1, -1]), sampleMask: Uint8Array.from([3, 3]), tokenIds: Int32Array.from([-1, -1, -1, -1]) });
    let caught: unknown;
    try {
      validateStepPlan(bad);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(StepPlanError);
    const err = caught as StepPlanError;
    expect(err.problems).toHaveLength(12);
    expect(err.message).toMatch(/^invalid StepPlan: token id -1 at index 0/);
    expect(err.message).toMatch(/; and 4 more$/);
  });

  it('passes what buildStepPlan builds', () => {
    const built = buildStepPlan(
      [
        { tokenIds: [5, 6, 7], numCached: 0, blockTable: [2], sample: false },
        { tokenIds: [9], numCached: 6, blockTable: [4, 1], sampling: { temperature: 0.5, topK: 3, topP: 0.9, seed: 42 } },
      ],
      { stageSplit: 1, returnLogits: true },
    );
    expect(checkStepPlan(built, limits)).toEqual([]);
  });

  it('checks stateSlots: numSeqs entries, each >= 0 and distinct within the step', () => {
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([1, 0]) }))).toEqual([]);
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([1]) }))).toEqual(['stateSlots has 1 entries, expected numSeqs = 2']);
    expect(checkStepPlan(plan({ stateSlots: [1, 0] as never }))).toEqual(['stateSlots must be an Int32Array (got Array)']);
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([-1, 0]) }))).toEqual(['stateSlots[0] is -1; expected a slot in [0, numStateSlots)']);
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([2, 2]) }))).toEqual(['stateSlots[1] is 2, the slot of sequence 0 too; each sequence of a step has its own slot']);
  });

  it('with the engine\'s numStateSlots, requires stateSlots of a gdn model in range and refuses them for another model', () => {
    const gdn = { ...limits, numStateSlots: 4 };
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([3, 0]) }), gdn)).toEqual([]);
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([4, 0]) }), gdn)).toEqual(['stateSlots[0] is 4; expected a slot in [0, 4)']);
    expect(checkStepPlan(plan(), gdn)).toEqual([
      'stateSlots is missing; the model has linear-attention (gdn) layers and every sequence needs a recurrent-state slot in [0, numStateSlots = 4)',
    ]);
    expect(checkStepPlan(plan({ stateSlots: Int32Array.from([1, 0]) }), { ...limits, numStateSlots: 0 })).toEqual([
      'stateSlots is given but the model keeps no recurrent state (numStateSlots 0: no linear-attention layer); leave it out',
    ]);
    expect(checkStepPlan(plan(), { ...limits, numStateSlots: 0 })).toEqual([]);
    // What buildStepPlan builds from PlanSeq.stateSlot passes.
    const built = buildStepPlan([
      { tokenIds: [5, 6, 7], numCached: 0, blockTable: [2], sample: false, stateSlot: 2 },
      { tokenIds: [9], numCached: 6, blockTable: [4, 1], stateSlot: 1 },
    ]);
    expect(checkStepPlan(built, gdn)).toEqual([]);
  });
});

