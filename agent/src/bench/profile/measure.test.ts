/** The FFN half measured two ways on the CPU (real tiny engines): per-layer ffnForward calls and the attached FFN inside decode steps. */
import { describe, expect, it } from 'vitest';
import { measureFfn, measureFfnAttached } from './measure.js';
import type { RigOptions } from './rig.js';

const rig: RigOptions = { arch: 'qwen3_moe', preset: 'tiny', backend: 'cpu', threads: 1, device: 0, seed: 1, maxBatch: 8, maxTokensPerSeq: 32 };

describe('measureFfnAttached', () => {
  it('times the attached FFN per decode step of each token count; of the order of the ffnForward loop', { timeout: 60_000 }, async () => {
    const reps = { warmup: 1, steps: 5 };
    const attached = await measureFfnAttached(rig, [1, 8], 8, reps);
    const direct = await measureFfn(rig, [1, 8], reps);
    expect(attached.map((p) => p.tokens)).toEqual([1, 8]);
    expect(attached.every((p) => p.ms > 0)).toBe(true);
    // The same FFN work; the attached one skips the per-layer JS round trips, so it is not slower by much.
    attached.forEach((p, i) => expect(p.ms).toBeLessThan(direct[i]!.ms * 3));
  });
});
