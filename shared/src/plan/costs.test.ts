import { describe, expect, it } from 'vitest';
import { layerCosts } from './costs.js';
import { findLinkPreset } from './links.js';
import { PROFILE_VERSION, type CostProfile } from './profile.js';

const profile: CostProfile = {
  version: PROFILE_VERSION,
  measuredAt: '2026-12-07T00:00:00.000Z',
  backend: 'cpu',
  device: 'test CPU',
  driver: 'linux',
  threads: 1,
  commit: 'abc',
  model: { name: 'm', numLayers: 4, hiddenSize: 256, wireBytesPerElement: 4, weightBytes: 1 },
  attention: [
    { batch: 1, context: 16, ms: 4 },
    { batch: 5, context: 16, ms: 12 },
    { batch: 1, context: 256, ms: 8 },
    { batch: 5, context: 256, ms: 16 },
  ],
  ffn: [{ tokens: 1, ms: 0.4 }, { tokens: 11, ms: 4.4 }],
  connectors: [{ connector: 'tcp', points: [{ bytes: 1024, ms: 0.2 }, { bytes: 11264, ms: 2.2 }] }],
};

describe('layer costs from a profile', () => {
  it('spread the per-step curves over the layers and interpolate them', () => {
    const c = layerCosts(profile, 'profile');
    expect(c.numLayers).toBe(4);
    expect(c.bytesPerToken).toBe(1024);
    expect(c.attentionMs(3, 16)).toBeCloseTo(2, 9); // 8 ms / 4 layers
    expect(c.attentionMs(3, 136)).toBeCloseTo(2.5, 9); // halfway to context 256 (10 ms)
    expect(c.ffnMs(6)).toBeCloseTo(0.6, 9); // 2.4 ms / 4
  });

  it('read the measured connector: half its round trip, the smallest value as latency', () => {
    const c = layerCosts(profile, 'profile');
    expect(c.linkLatencyMs).toBeCloseTo(0.1, 9);
    expect(c.linkTransferMs(1024)).toBeCloseTo(0, 9);
    expect(c.linkTransferMs(6144)).toBeCloseTo(0.5, 9);
    expect(c.linkSource).toMatch(/measured: tcp connector in the profile \(test CPU\)/);
    expect(() => layerCosts(profile, 'profile', 'nccl')).toThrow(/no nccl connector curve \(it has: tcp\)/);
  });

  it('or a link preset: latency plus bytes over its published bandwidth', () => {
    const c = layerCosts(profile, findLinkPreset('ib400'));
    expect(c.linkLatencyMs).toBeCloseTo(0.005, 12);
    expect(c.linkTransferMs(50e6)).toBeCloseTo(1, 9); // 50 MB at 50 GB/s
    expect(c.linkSource).toMatch(/published: InfiniBand NDR 400 Gb\/s/);
    expect(() => findLinkPreset('smoke-signals')).toThrow(/not a preset \(nvlink4, nvlink5, ib400/);
  });
});
