import { describe, expect, it } from 'vitest';
import { downsample } from './downsample.js';

describe('downsample', () => {
  it('keeps short series as they are', () => {
    expect(downsample([1, 2, 3], 5)).toEqual([1, 2, 3]);
  });
  it('keeps first and newest and bounds the length', () => {
    const rows = Array.from({ length: 600 }, (_, i) => i);
    const d = downsample(rows, 150);
    expect(d.length).toBe(150);
    expect(d[0]).toBe(0);
    expect(d[149]).toBe(599);
    expect(d.every((v, i) => i === 0 || v > d[i - 1]!)).toBe(true);
  });
});
