import { describe, expect, it } from 'vitest';
import { until } from './until.js';

describe('until', () => {
  it('resolves once the condition holds, sync or async, with the time it took', async () => {
    let n = 0;
    expect(await until(() => ++n >= 3, 'three asks', 1000, { pollMs: 5 })).toBeGreaterThanOrEqual(0);
    expect(n).toBe(3);
    let m = 0;
    await until(async () => ++m >= 2, 'two asks', 1000, { pollMs: 5 });
    expect(m).toBe(2);
  });

  it('times out naming what it waited for and the explanation', async () => {
    await expect(until(() => false, 'the rank to be ready', 30, { pollMs: 5, explain: async () => 'state: loading' })).rejects.toThrow(
      /timed out after 30 ms waiting for the rank to be ready: state: loading/,
    );
    await expect(until(() => false, 'x', 10, { pollMs: 5 })).rejects.toThrow(/^timed out after 10 ms waiting for x$/);
  });
});
