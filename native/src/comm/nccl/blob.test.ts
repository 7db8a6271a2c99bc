import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from '../nativeTestProgram.js';

// The GPU data plane's TCP bootstrap (native/src/comm/nccl/test/blob-test.cpp) over loopback.
describe('comm/nccl: bootstrap blob channel (native unit program)', () => {
  let results: NativeCaseResult[] = [];
  it('builds and runs', { timeout: 180_000 }, () => {
    results = runNativeTestProgram('comm/nccl/test/blob-test.cpp', ['comm', 'comm/nccl']);
    expect(results.map((r) => r.name).sort()).toEqual([
      'blob_accept_times_out_with_advice',
      'blob_peer_closed_peeks_without_consuming',
      'blob_rejects_a_stranger',
      'blob_roundtrip_both_ways',
      'blob_wrong_tag_names_both',
    ]);
  });
  it('every case passes', () => {
    expect(results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`)).toEqual([]);
  });
});
