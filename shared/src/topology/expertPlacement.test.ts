import { describe, expect, it } from 'vitest';
import { expertOwner, expertRangeOf, expertRanges, formatExpertRange } from './expertPlacement.js';

describe('expert placement: e -> floor(e * F / E)', () => {
  it('cuts 8 experts over 3 ranks into contiguous ranges that differ by at most one', () => {
    expect(expertRanges(8, 3)).toEqual([
      { start: 0, end: 3 },
      { start: 3, end: 6 },
      { start: 6, end: 8 },
    ]);
  });

  it('agrees with the owner of every expert, for many E and F', () => {
    for (let E = 1; E <= 40; E++) {
      for (let F = 1; F <= 12; F++) {
        const ranges = expertRanges(E, F);
        const sizes = ranges.map((r) => r.end - r.start);
        expect(Math.max(...sizes) - Math.min(...sizes), `E=${E} F=${F}`).toBeLessThanOrEqual(1);
        expect(ranges[0]!.start).toBe(0);
        expect(ranges[F - 1]!.end).toBe(E);
        for (let f = 1; f < F; f++) expect(ranges[f]!.start).toBe(ranges[f - 1]!.end);
        for (let e = 0; e < E; e++) {
          const f = expertOwner(e, E, F);
          expect(e >= ranges[f]!.start && e < ranges[f]!.end, `E=${E} F=${F} e=${e}`).toBe(true);
        }
      }
    }
  });

  it('leaves ranks beyond the expert count empty', () => {
    expect(expertRanges(2, 4).map(formatExpertRange)).toEqual(['expert 0', 'no experts', 'expert 1', 'no experts']);
  });

  it('names bad input', () => {
    expect(() => expertOwner(8, 8, 2)).toThrow('expert 8 does not exist');
    expect(() => expertRangeOf(2, 8, 2)).toThrow('ffn rank 2 does not exist');
    expect(() => expertRanges(0, 2)).toThrow('positive expert count');
  });

  it('formats ranges for people', () => {
    expect(formatExpertRange({ start: 0, end: 64 })).toBe('experts 0-63');
  });
});
