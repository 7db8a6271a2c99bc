import { describe, expect, it } from 'vitest';
import { encodeControlPayload } from '../testing/controlPayload.js';
import { runNativeTestProgram, type NativeCaseResult } from '../testing/nativeTestProgram.js';

// The connector's C++ unit programs (native/src/testing/programs/comm/): frames, the control payload
// and link timing (comm-test.cpp), and the rendezvous link over loopback TCP
// (rendezvous-test.cpp: steps and bootstraps; rendezvous-fault-test.cpp: refusals,
// deadlines, lost peers).
describe('comm: TCP connector (native unit programs)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 300_000 }, () => {
    // The C++ side checks it reads and writes exactly what the TypeScript encoder produces.
    const payload = encodeControlPayload({ stepId: 12345, flags: { warmup: true, capture: false, replay: false, shutdown: true }, counts: [[5, 0, 7], [4, 0, 0]] });
    const env = { AFD_CONTROL_PAYLOAD_HEX: Buffer.from(payload).toString('hex') };
    results = [
      ...runNativeTestProgram('testing/programs/comm/comm-test.cpp', ['comm'], env),
      ...runNativeTestProgram('testing/programs/comm/rendezvous-test.cpp', ['comm']),
      ...runNativeTestProgram('testing/programs/comm/rendezvous-fault-test.cpp', ['comm']),
    ];
    expect(results.length).toBeGreaterThanOrEqual(23);
  });
  it('every case passes', () => {
    const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
    expect(failed).toEqual([]);
  });
});
