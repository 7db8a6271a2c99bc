import { describe, expect, it } from 'vitest';
import { interpolate, interpolate2d } from './interpolate.js';

describe('interpolate', () => {
  const line = [{ x: 1, y: 2 }, { x: 5, y: 10 }, { x: 3, y: 6 }];
  it('is exact on the points and linear between them', () => {
    expect(interpolate(line, 1)).toBe(2);
    expect(interpolate(line, 3)).toBe(6);
    expect(interpolate(line, 2)).toBe(4);
    expect(interpolate(line, 4.5)).toBe(9);
  });
  it('extends the end segments and stays at or above zero', () => {
    expect(interpolate(line, 9)).toBe(18);
    expect(interpolate(line, 0)).toBe(0);
    expect(interpolate([{ x: 1, y: 1 }, { x: 2, y: 3 }], 0)).toBe(0); // -1 clamped
  });
  it('one point is a constant; repeated x values average', () => {
    expect(interpolate([{ x: 4, y: 7 }], 100)).toBe(7);
    expect(interpolate([{ x: 1, y: 1 }, { x: 1, y: 3 }, { x: 3, y: 6 }], 2)).toBe(4);
  });
  it('refuses no points', () => {
    expect(() => interpolate([], 1)).toThrow(/no points/);
  });
});

describe('interpolate2d', () => {
  // z = x + 10 y, measured on a ragged grid
  const pts = [
    { x: 1, y: 0, z: 1 }, { x: 3, y: 0, z: 3 },
    { x: 1, y: 2, z: 21 }, { x: 2, y: 2, z: 22 }, { x: 5, y: 2, z: 25 },
  ];
  it('is bilinear inside the grid', () => {
    expect(interpolate2d(pts, 2, 1)).toBe(12);
    expect(interpolate2d(pts, 4, 2)).toBe(24);
    expect(interpolate2d(pts, 1, 0)).toBe(1);
  });
});
