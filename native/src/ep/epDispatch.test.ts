import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The expert-parallel dispatch plan (ep/dispatch.h) as a native unit program.
describe('runtime: expert-parallel dispatch plan (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/ep/ep-dispatch-test.cpp', ['ep/dispatch.cc']);
    expect(results.length).toBeGreaterThanOrEqual(5);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
