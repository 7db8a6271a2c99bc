import { describe, expect, it } from 'vitest';
import { encodeControlPayload } from '@afd/shared';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The connector's C++ unit tests (native/src/comm/test/comm-test.cpp) over loopback TCP.
describe('comm: TCP connector (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    // The C++ side checks it reads and writes exactly what the TypeScript encoder produces.
    const payload = encodeControlPayload({ stepId: 12345, flags: { warmup: true, capture: false, replay: false, shutdown: true }, counts: [[5, 0, 7], [4, 0, 0]] });
    const env = { AFD_CONTROL_PAYLOAD_HEX: Buffer.from(payload).toString('hex') };
    results = runNativeTestProgram('comm/test/comm-test.cpp', ['comm'], env);
    expect(results.length).toBeGreaterThanOrEqual(14);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
