import { describe, expect, it } from 'vitest';
import { countOf } from './plural.js';

describe('countOf', () => {
  it('uses the singular for exactly one', () => {
    expect(countOf(1, 'prompt token')).toBe('1 prompt token');
    expect(countOf(0, 'thread')).toBe('0 threads');
    expect(countOf(2, 'FFN rank')).toBe('2 FFN ranks');
    expect(countOf(3, 'replica', 'replicas')).toBe('3 replicas');
  });
});
