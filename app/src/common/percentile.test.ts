import { describe, expect, it } from 'vitest';
import { percentile } from './percentile.js';

describe('percentile', () => {
  it('is the nearest rank of a sorted sample', () => {
    const v = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([0, 1, 50, 95, 99, 100].map((p) => percentile(v, p))).toEqual([1, 1, 50, 95, 99, 100]);
    expect(percentile([10, 20, 30, 40], 50)).toBe(20);
    expect(percentile([10, 20, 30, 40], 51)).toBe(30);
    expect(percentile([7], 99)).toBe(7);
  });

  it('is undefined for an empty sample', () => {
    expect(percentile([], 50)).toBeUndefined();
  });
});
