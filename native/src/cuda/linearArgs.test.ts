import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The down GEMM of every SiLU-gated MLP on CUDA, derived from its gate/up GEMM
// (cuda/linear-args.h), as a native unit program (no GPU needed).
describe('cuda: gated MLP down-projection arguments (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/cuda/linear-args-test.cpp', []);
    expect(results.length).toBe(4);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
