import { describe, expect, it } from 'vitest';
import { F2A_ROUND_TRIP_NOTE, NOT_TIMED_NOTE, wireCell, wireLegend } from './wireMaps.js';

describe('wireCell', () => {
  it('shows one-way and op-span times in both maps, as measured', () => {
    expect(wireCell('a2f', 'one-way', 150)).toEqual({ us: 150 });
    expect(wireCell('f2a', 'one-way', 2150)).toEqual({ us: 2150 });
    expect(wireCell('f2a', 'op-span', 900)).toEqual({ us: 900 });
    expect(wireCell('f2a', undefined, 42)).toEqual({ us: 42 }); // a rank that does not say
  });

  it('shows half the round trip once, on the A→F map, and leaves F→A empty saying why', () => {
    expect(wireCell('a2f', 'round-trip/2', 1100)).toEqual({ us: 1100 });
    const f2a = wireCell('f2a', 'round-trip/2', 1100);
    expect(f2a.us).toBeNaN();
    expect(f2a.note).toBe(F2A_ROUND_TRIP_NOTE);
  });

  it('leaves a direction nothing has timed empty, not zero', () => {
    const c = wireCell('a2f', 'unavailable', 0);
    expect(c.us).toBeNaN();
    expect(c.note).toBe(NOT_TIMED_NOTE);
  });
});

describe('wireLegend', () => {
  it('names each basis the ranks report, once, per direction', () => {
    expect(wireLegend('a2f', ['one-way', 'one-way'])).toMatch(/^one-way: the attention rank's send to its arrival on the FFN rank/);
    expect(wireLegend('f2a', ['one-way'])).toMatch(/^one-way: the FFN rank's send to its arrival on the attention rank/);
    expect(wireLegend('a2f', ['round-trip/2', 'round-trip/2'])).toMatch(/^round trip \/ 2: ranks on different hosts share no clock/);
    expect(wireLegend('f2a', ['round-trip/2'])).toBe(F2A_ROUND_TRIP_NOTE);
    const mixed = wireLegend('f2a', ['op-span', 'unavailable', 'one-way']);
    expect(mixed).toMatch(/^op span: .* an upper bound, not one-way; one-way: /);
  });

  it('says when nothing is timed yet or the ranks do not report a basis', () => {
    expect(wireLegend('a2f', ['unavailable'])).toMatch(/^no wire time from this rank/);
    expect(wireLegend('a2f', [undefined])).toBe('basis not reported by these ranks');
  });
});
