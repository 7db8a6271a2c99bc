import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The GPU-per-rank check of the expert-parallel NCCL exchange (ep/gpu-placement.h) as a native unit program.
describe('runtime: expert-parallel GPU placement check (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/ep/ep-gpu-placement-test.cpp', ['ep/gpu-placement.cc']);
    expect(results.length).toBe(2);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
