import { describe, expect, it } from 'vitest';
import { expertParallelChecks } from './expertParallelCheck.js';

describe('expertParallelChecks on the CPU backend', () => {
  it('runs the GPU check\'s 2A2F tcp variants without a GPU, and they pass', { timeout: 120_000 }, async () => {
    const checks = await expertParallelChecks('cpu');
    expect(checks.map((c) => c.name)).toEqual([
      'expert parallel 2A2F on one GPU (tcp, host-staged exchange), gate on attention false, DBO',
      'expert parallel 2A2F on one GPU (tcp, host-staged exchange), gate on attention true, DBO',
    ]);
    for (const c of checks) expect(c, c.detail).toMatchObject({ passed: true });
    for (const c of checks) expect(c.detail).toMatch(/tokens equal; .* routed pairs per FFN rank [1-9]\d*, [1-9]\d*$/);
  });
});
