import { describe, expect, it } from 'vitest';
import { chooseStageSplit } from './stageSplit.js';

const dbo = { enabled: true, decodeTokenThreshold: 4, prefillTokenThreshold: 100 };

describe('chooseStageSplit', () => {
  it('keeps one stage when disabled, below threshold, or with one sequence', () => {
    expect(chooseStageSplit([1, 1, 1, 1], false, { ...dbo, enabled: false })).toBe(4);
    expect(chooseStageSplit([1, 1, 1], false, dbo)).toBe(3);
    expect(chooseStageSplit([500], true, dbo)).toBe(1);
    expect(chooseStageSplit([30, 30, 30], true, dbo)).toBe(3);
  });
  it('balances tokens at a sequence boundary', () => {
    expect(chooseStageSplit([1, 1, 1, 1, 1], false, dbo)).toBe(2);
    expect(chooseStageSplit([1, 1, 1, 1, 1, 1], false, dbo)).toBe(3);
    expect(chooseStageSplit([1, 90, 10, 10], true, dbo)).toBe(2);
    expect(chooseStageSplit([100, 1, 1], true, dbo)).toBe(1);
  });
});
