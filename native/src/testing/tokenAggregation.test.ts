import { describe, expect, it } from 'vitest';
import { attentionBlocks, resolveTopology } from '@afd/shared';
import { aggregateFfnTokenCounts, blockTokenTotals, peerRowOffsets, peerRows } from './tokenAggregation.js';

describe('token-count aggregation', () => {
  it('3A2F sums each block, an empty peer counting one row', () => {
    const t = resolveTopology('3A2F');
    // stage 0: A0=4, A1=0, A2=7; stage 1: A0=0, A1=0, A2=0
    expect(aggregateFfnTokenCounts(t, [[4, 0, 7], [0, 0, 0]])).toEqual([[5, 7], [2, 1]]);
  });

  it('matches a per-rank loop for every valid xAyF up to 16 on varied counts', () => {
    for (let x = 1; x <= 16; x++) {
      for (let y = 1; y <= x; y++) {
        const t = resolveTopology(`${x}A${y}F`);
        const counts = [Array.from({ length: x }, (_, a) => (a * 7 + y) % 5), Array.from({ length: x }, (_, a) => (a % 3 === 0 ? 0 : a * 11))];
        const totals = aggregateFfnTokenCounts(t, counts);
        const blocks = attentionBlocks(t);
        counts.forEach((row, s) => {
          const expected = blocks.map((b) => row.slice(b.start, b.start + b.size).reduce((sum, c) => sum + (c === 0 ? 1 : c), 0));
          expect(totals[s]).toEqual(expected);
          // The per-FFN view from its control payload gives the same totals.
          blocks.forEach((b, f) => expect(blockTokenTotals([row.slice(b.start, b.start + b.size)])[0]).toBe(expected[f]));
          // Every FFN rank gets at least one row per peer.
          blocks.forEach((b, f) => expect(totals[s]![f]).toBeGreaterThanOrEqual(b.size));
        });
      }
    }
  });

  it('gives row offsets of each peer in the concatenated input', () => {
    expect(peerRowOffsets([3, 0, 2])).toEqual([0, 3, 4, 6]);
    expect(peerRows(0)).toBe(1);
    expect(peerRows(9)).toBe(9);
  });

  it('rejects bad input with the offending index', () => {
    const t = resolveTopology('2A1F');
    expect(() => aggregateFfnTokenCounts(t, [])).toThrow(/no stages/);
    expect(() => aggregateFfnTokenCounts(t, [[1, 2, 3]])).toThrow(/counts\[0\] has 3 entries but 2A1F has 2 attention ranks/);
    expect(() => aggregateFfnTokenCounts(t, [[1, -1]])).toThrow(/counts\[0\]\[1\] is -1/);
    expect(() => aggregateFfnTokenCounts(t, [[1, 0.5]])).toThrow(RangeError);
    expect(() => blockTokenTotals([[]])).toThrow(/empty/);
    expect(() => blockTokenTotals([[1, Number.NaN]])).toThrow(/counts\[0\]\[1\]/);
  });
});
