import { describe, expect, it } from 'vitest';
import { fromBf16Bits, normalBf16, toBf16Bits, Xoshiro128 } from './random.js';

describe('deterministic init', () => {
  it('rounds to bf16 to nearest, ties to even', () => {
    expect(toBf16Bits(1)).toBe(0x3f80);
    expect(toBf16Bits(-2)).toBe(0xc000);
    // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1).
    expect(fromBf16Bits(toBf16Bits(1 + 2 ** -8))).toBe(1);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
    expect(fromBf16Bits(toBf16Bits(1 + 3 * 2 ** -8))).toBe(1 + 2 ** -6);
    expect(fromBf16Bits(toBf16Bits(1 + 2 ** -8 + 2 ** -12))).toBe(1 + 2 ** -7);
    expect(Number.isNaN(fromBf16Bits(toBf16Bits(NaN)))).toBe(true);
  });

  it('is deterministic per (seed, name) and differs across names and seeds', () => {
    const a = normalBf16(7, 'w', 1001, { mean: 0, std: 1 });
    expect(Buffer.from(normalBf16(7, 'w', 1001, { mean: 0, std: 1 })).equals(Buffer.from(a))).toBe(true);
    expect(Buffer.from(normalBf16(7, 'v', 1001, { mean: 0, std: 1 })).equals(Buffer.from(a))).toBe(false);
    expect(Buffer.from(normalBf16(8, 'w', 1001, { mean: 0, std: 1 })).equals(Buffer.from(a))).toBe(false);
    expect(new Xoshiro128(1).nextU32()).toBe(new Xoshiro128(1).nextU32());
  });

  it('draws mean + std * N(0,1)', () => {
    const n = 200_000;
    const bytes = normalBf16(3, 'stats', n, { mean: 1, std: 0.5 });
    const bits = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
    let sum = 0;
    let sq = 0;
    for (const b of bits) {
      const x = fromBf16Bits(b);
      sum += x;
      sq += x * x;
    }
    const mean = sum / n;
    const std = Math.sqrt(sq / n - mean * mean);
    expect(mean).toBeCloseTo(1, 2);
    expect(std).toBeCloseTo(0.5, 2);
  });
});
