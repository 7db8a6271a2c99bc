import { describe, expect, it } from 'vitest';
import { checkStepPlan } from '@afd/shared';
import { decodePlan, stateSlotOf } from './rig.js';

describe('bench plans of a model with recurrent-state slots', () => {
  it('stateSlotOf: sequence s holds slot s when the engine keeps state per sequence, else nothing', () => {
    expect(stateSlotOf({ numStateSlots: 0 }, 3)).toEqual({});
    expect(stateSlotOf({}, 3)).toEqual({});
    expect(stateSlotOf({ numStateSlots: 8 }, 3)).toEqual({ stateSlot: 3 });
    expect(() => stateSlotOf({ numStateSlots: 8 }, 8)).toThrow('afd-bench: sequence 8 needs a recurrent-state slot but the engine has 8');
  });

  it('decodePlan carries a slot per sequence only for such an engine', () => {
    const p = { blocks: [[0, 1], [2, 3], [4, 5]], lastTokens: [7, 8, 9], context: 5 };
    const gdn = decodePlan({ ...p, stateSlots: true }, 3, 0, true, []);
    expect(Array.from(gdn.stateSlots!)).toEqual([0, 1, 2]);
    expect(checkStepPlan(gdn, { vocabSize: 100, kvBlockSize: 16, numKvBlocks: 6, numStateSlots: 3 })).toEqual([]);
    expect(decodePlan({ ...p, stateSlots: false }, 3, 0, false, []).stateSlots).toBeUndefined();
  });
});
