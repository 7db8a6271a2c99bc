import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from './nativeTestProgram.js';

// The connector's C++ unit tests (native/src/comm/test/comm-test.cpp) over loopback TCP.
describe('comm: TCP connector (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('comm/test/comm-test.cpp', ['comm']);
    expect(results.length).toBeGreaterThanOrEqual(13);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
