import { describe, expect, it } from 'vitest';
import { attentionNeed, colocatedNeed, doesNotFit, epRankNeed, ffnNeed, memoryModel } from './memory.js';
import { PROFILE_VERSION, type CostProfile } from './profile.js';

const GIB = 1024 ** 3;
const profile: CostProfile = {
  version: PROFILE_VERSION,
  measuredAt: 'x', backend: 'cuda', device: 'card', driver: 'd', threads: 0, commit: 'c',
  model: { name: 'm', numLayers: 48, hiddenSize: 2048, wireBytesPerElement: 2, weightBytes: 61e9, attentionWeightBytes: 5e9, ffnWeightBytes: 56e9, kvBytesPerToken: 98304 },
  deviceMemoryBytes: 80e9,
  attention: [{ batch: 1, context: 1, ms: 1 }],
  ffn: [{ tokens: 1, ms: 1 }],
  connectors: [],
};

describe('memory capacity', () => {
  it('what each rank holds: weights by role (FFN split over an EP group) and the KV of its batch', () => {
    const m = memoryModel(profile)!;
    expect(m.notes).toEqual([]);
    expect(colocatedNeed(m, 8, 1000)).toEqual({ weightBytes: 61e9, kvBytes: 8 * 1000 * 98304 });
    expect(attentionNeed(m, 8, 1000)).toEqual({ weightBytes: 5e9, kvBytes: 8 * 1000 * 98304 });
    expect(ffnNeed(m, 4)).toEqual({ weightBytes: 14e9, kvBytes: 0 });
    expect(epRankNeed(m, 4, 2, 10)).toEqual({ weightBytes: 19e9, kvBytes: 2 * 10 * 98304 });
  });

  it('--gpu-mem-gib overrides the profile; says which shapes do not fit and why', () => {
    const m = memoryModel(profile, 24)!;
    expect(m.deviceBytes).toBe(24 * GIB);
    expect(doesNotFit(m, [{ role: 'colocated', need: colocatedNeed(m, 1, 1) }])).toBe('colocated: 57 GiB of weights do not fit 24 GiB');
    expect(doesNotFit(m, [{ role: 'attention rank', need: attentionNeed(m, 256, 1024) }])).toBe('attention rank: 4.7 GiB of weights + 24 GiB of KV do not fit 24 GiB');
    expect(doesNotFit(m, [{ role: 'FFN rank', need: ffnNeed(m, 4) }])).toBeNull();
  });

  it('derives what a version-1 profile lacks and says so; no device memory, no model', () => {
    const { attentionWeightBytes: _a, ffnWeightBytes: _f, kvBytesPerToken: _k, ...v1model } = profile.model;
    const v1 = { ...profile, version: 1 as const, model: v1model };
    expect(memoryModel({ ...v1, deviceMemoryBytes: undefined })).toBeNull();
    const m = memoryModel(v1)!;
    expect([m.attentionWeightBytes, m.ffnWeightBytes, m.kvBytesPerToken]).toEqual([61e9, 61e9, 0]);
    expect(m.notes.join('\n')).toMatch(/no attention\/FFN weight split .* every AFD rank is assumed to hold the whole model[^]*KV cache is not counted/);
    const half = memoryModel({ ...v1, model: { ...v1model, ffnWeightBytes: 50e9 } })!;
    expect(half.attentionWeightBytes).toBe(11e9);
    expect(half.notes[0]).toBe('attention weights derived as the whole model minus the FFN weights');
  });
});
