import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../../testing/nativeTestProgram.js';

// The FFN loop's transitions (runtime/afd/ffn-recovery.h): every exit and recovery, the
// state it reports and what the block and the FFN group are told, as a native unit program.
describe('FFN loop: recovery transitions (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('testing/programs/runtime/afd/ffn-recovery-test.cpp', ['runtime/afd/ffn-recovery.cc']);
    expect(results.length).toBe(7);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
