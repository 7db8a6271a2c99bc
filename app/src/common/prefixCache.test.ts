import { describe, expect, it } from 'vitest';
import { addTokens, hitRate, prefixIncrease } from './prefixCache.js';

const s = (queried: number, hit: number) => ({ queried, hit });

describe('prefix-cache rates', () => {
  it('counts the increase between the first and the last sample', () => {
    expect(prefixIncrease([s(100, 40), s(150, 60), s(400, 160)])).toEqual(s(300, 120));
    expect(prefixIncrease([s(100, 40)])).toEqual(s(0, 0));
    expect(prefixIncrease([])).toEqual(s(0, 0));
  });

  it('reads a counter that went down as a restart from zero: never negative', () => {
    // The rank restarted between the 2nd and 3rd sample, then queried 50 more tokens.
    expect(prefixIncrease([s(1000, 800), s(1100, 850), s(30, 10), s(80, 30)])).toEqual(s(100 + 30 + 50, 50 + 10 + 20));
    // Only the hit counter dropped (a restart whose first lookup queried more than before): still a restart.
    expect(prefixIncrease([s(100, 90), s(120, 5)])).toEqual(s(120, 5));
    // Restarted and nothing since: the new values, not the (negative) difference.
    const r = prefixIncrease([s(5000, 4000), s(0, 0)]);
    expect(r).toEqual(s(0, 0));
    expect(hitRate(r)).toBeNull();
  });

  it('skips samples without KV stats', () => {
    expect(prefixIncrease([null, s(10, 5), null, s(30, 10), null])).toEqual(s(20, 5));
  });

  it('rates: hit / queried, null with no queries (not 0, not NaN)', () => {
    expect(hitRate(s(400, 250))).toBe(0.625);
    expect(hitRate(s(400, 0))).toBe(0);
    expect(hitRate(s(0, 0))).toBeNull();
    expect(addTokens(s(1, 2), s(3, 4))).toEqual(s(4, 6));
  });
});
