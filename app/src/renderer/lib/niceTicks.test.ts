import { describe, expect, it } from 'vitest';
import { niceTicks, tickDecimals } from './niceTicks.js';

describe('niceTicks', () => {
  it('covers the range with round steps', () => {
    expect(niceTicks(0, 97)).toEqual({ ticks: [0, 50, 100], lo: 0, hi: 100 });
    expect(niceTicks(0, 80)).toEqual({ ticks: [0, 20, 40, 60, 80], lo: 0, hi: 80 });
    expect(niceTicks(0, 0.7).ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8]);
    expect(niceTicks(-12.5, 0).ticks).toEqual([-15, -10, -5, 0]);
  });
  it('survives flat and empty ranges', () => {
    expect(niceTicks(0, 0)).toMatchObject({ lo: 0, hi: 1 });
    expect(niceTicks(Number.NaN, 1)).toEqual({ ticks: [0, 1], lo: 0, hi: 1 });
  });
  it('keeps count axes whole', () => {
    expect(niceTicks(0, 2, 5, 1).ticks).toEqual([0, 1, 2]);
    expect(niceTicks(0, 2).ticks).toEqual([0, 0.5, 1, 1.5, 2]);
  });
  it('labels carry the decimals the step needs', () => {
    expect(tickDecimals(0.05)).toBe(2);
    expect(tickDecimals(0.5)).toBe(1);
    expect(tickDecimals(1)).toBe(0);
    expect(tickDecimals(20)).toBe(0);
    expect(tickDecimals(0)).toBe(0);
  });
});
