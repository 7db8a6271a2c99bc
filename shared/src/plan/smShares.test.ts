import { describe, expect, it } from 'vitest';
import type { CostProfile } from './profile.js';
import { smSharesOf } from './smShares.js';

const profile = (scale: { attention: number; ffn: number }, over: Partial<CostProfile> = {}): CostProfile => ({
  version: 2,
  measuredAt: '2026-12-07T00:00:00Z',
  backend: 'cuda',
  device: 'H100',
  driver: '580',
  threads: 0,
  commit: 'x',
  model: { name: 'qwen3_moe/qwen3-30b-a3b', numLayers: 48, hiddenSize: 2048, wireBytesPerElement: 2, weightBytes: 1 },
  attention: [
    { batch: 1, context: 256, ms: 3 * scale.attention },
    { batch: 64, context: 256, ms: 4 * scale.attention * scale.attention },
    { batch: 64, context: 1024, ms: 6 * scale.attention },
  ],
  ffn: [
    { tokens: 1, ms: 3 * scale.ffn },
    { tokens: 64, ms: 22 * scale.ffn },
  ],
  connectors: [],
  ...over,
});

describe('smSharesOf', () => {
  it('takes per role and share the median ratio over the common points, at least 1', () => {
    const full = profile({ attention: 1, ffn: 1 });
    const points = smSharesOf(full, [
      { share: 0.4, profile: profile({ attention: 1.5, ffn: 1.2 }) },
      { share: 0.6, profile: profile({ attention: 0.9, ffn: 1.05 }) },
    ]);
    // Attention ratios at 0.4: 1.5, 2.25, 1.5 -> median 1.5; at 0.6: 0.9, 0.81, 0.9 -> 0.9, clamped to 1.
    expect(points).toEqual([
      { role: 'attention', share: 0.4, slowdown: 1.5 },
      { role: 'ffn', share: 0.4, slowdown: expect.closeTo(1.2, 9) },
      { role: 'attention', share: 0.6, slowdown: 1 },
      { role: 'ffn', share: 0.6, slowdown: expect.closeTo(1.05, 9) },
    ]);
  });

  it('refuses a profile of another model, a share outside (0, 1], and one with no common point', () => {
    const full = profile({ attention: 1, ffn: 1 });
    expect(() => smSharesOf(full, [{ share: 0.4, profile: profile({ attention: 1, ffn: 1 }, { backend: 'cpu' }) }])).toThrow(/the 0.4 profile is of qwen3_moe\/qwen3-30b-a3b on cpu/);
    expect(() => smSharesOf(full, [{ share: 1.4, profile: full }])).toThrow(/share 1.4 is outside/);
    expect(() => smSharesOf(full, [{ share: 0.5, profile: { ...full, ffn: [{ tokens: 7, ms: 1 }] } }])).toThrow(/no ffn point/);
  });
});
