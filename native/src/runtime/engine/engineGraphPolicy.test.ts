import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../../testing/nativeTestProgram.js';

// The decode-graph policy of Engine::step (runtime/engine/graph-policy.h): bucket choice,
// graph key and padded layout, as a native unit program (no GPU needed).
describe('engine: CUDA graph policy (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/runtime/engine/engine-graph-test.cpp', []);
    expect(results.length).toBeGreaterThanOrEqual(8);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
