import { describe, expect, it } from 'vitest';
import type { TokenLogprobs } from '@afd/shared';
import { compareLogprobs } from './logprobsRule.js';

// Two rows of width 4: row 0 asks k 3, row 1 k 1 (padded).
function rows(ids: number[], values: number[], ranks = [1, 3]): TokenLogprobs {
  return { rowOffsets: Int32Array.from([0, 2]), width: 4, tokenIds: Int32Array.from(ids), logprobs: Float32Array.from(values), ranks: Int32Array.from(ranks) };
}
const cpu = rows([5, 5, 9, 2, 7, 1, -1, -1], [-0.1, -0.1, -1.5, -1.51, -2, -0.5, NaN, NaN]);

describe('compareLogprobs (the GPU suite rule)', () => {
  it('passes values within tolerance and lets neighbours closer than the noise swap', () => {
    const cuda = rows([5, 5, 2, 9, 7, 1, -1, -1], [-0.105, -0.105, -1.505, -1.51, -2.01, -0.49, NaN, NaN]);
    const c = compareLogprobs(cpu, cuda, 2e-2);
    expect(c.problems).toEqual([]);
    expect(c.passed).toBe(true);
    expect(c.worstValueError).toBeCloseTo(0.01, 5);
  });

  it('fails a swap of well separated ids, a value off by more than the tolerance, a padding or layout difference', () => {
    const swapped = rows([5, 9, 5, 2, 7, 1, -1, -1], [-0.1, -0.1, -1.5, -1.51, -2, -0.5, NaN, NaN]);
    expect(compareLogprobs(cpu, swapped, 2e-2).problems).toEqual(['row 0 top 1: cuda id 9, cpu 5']);
    const off = rows([5, 5, 9, 2, 7, 1, -1, -1], [-0.1, -0.1, -1.5, -1.51, -2.5, -0.5, NaN, NaN]);
    expect(compareLogprobs(cpu, off, 2e-2).problems).toEqual(['worst value error 5.00e-1 > 0.02']);
    const padded = rows([5, 5, 9, 2, 7, 1, 3, -1], [-0.1, -0.1, -1.5, -1.51, -2, -0.5, -3, NaN]);
    expect(compareLogprobs(cpu, padded, 2e-2).passed).toBe(false);
    expect(compareLogprobs(cpu, { ...cpu, width: 5 }, 2e-2).problems).toEqual(['width 5, cpu 4']);
  });

  it('skips the chosen entry and rank where the two chose different tokens, and counts those rows', () => {
    const other = rows([9, 5, 9, 2, 7, 1, -1, -1], [-1.5, -0.1, -1.5, -1.51, -2, -0.5, NaN, NaN], [2, 3]);
    const c = compareLogprobs(cpu, other, 2e-2);
    expect(c.passed).toBe(true);
    expect(c.chosenDiffer).toBe(1);
  });

  it('holds banned tokens (-Infinity) exact: equal values and equal ids, never a number on one side only', () => {
    const masked = rows([5, 5, 9, 2, 7, 7, -1, -1], [-0.1, -0.1, -Infinity, -Infinity, -0, -0, NaN, NaN], [1, 1]);
    expect(compareLogprobs(masked, masked, 2e-2).problems).toEqual([]);
    const reordered = rows([5, 5, 2, 9, 7, 7, -1, -1], [-0.1, -0.1, -Infinity, -Infinity, -0, -0, NaN, NaN], [1, 1]);
    expect(compareLogprobs(masked, reordered, 2e-2).problems).toEqual(['row 0 entry 2: banned cuda id 2, cpu 9', 'row 0 entry 3: banned cuda id 9, cpu 2']);
    const leaked = rows([5, 5, 9, 2, 7, 7, -1, -1], [-0.1, -0.1, -20, -Infinity, -0, -0, NaN, NaN], [1, 1]);
    expect(compareLogprobs(masked, leaked, 2e-2).problems).toEqual(['row 0 entry 2: cuda -20, cpu -Infinity (a banned token on one side only)']);
  });
});
