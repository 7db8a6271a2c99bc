import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The expert-parallel FFN group's mesh (native/src/testing/programs/comm/ep-mesh-test.cpp, ASan/UBSan)
// over loopback TCP: forming, the step barrier, the all-to-alls, shutdown, lost and silent peers.
describe('comm: expert-parallel FFN group mesh (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/comm/ep-mesh-test.cpp', ['comm']);
    expect(results.length).toBeGreaterThanOrEqual(8);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
